/**
 * What the page weighs on a first visit, in real Chromium: every byte that crosses the wire
 * before the page is usable (the HTML, its scripts, styles and icon; response headers included,
 * as Chromium counts them in `Network.loadingFinished.encodedDataLength`) must stay within
 * 120 KB. The API calls the page makes to fill itself (/api/...) are data, not page, and are not
 * counted. Code colouring is fetched only when a message shows code, never on the first load.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see web-page.test.ts).
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import { silentLogger } from '../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from '../channels/web/fake-gateway.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-weight');
const FIRST_LOAD_LIMIT = 120 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Loaded {
  url: string;
  bytes: number;
  encoding: string | undefined;
}

/** Record every finished request of `page` with the bytes Chromium received for it. */
async function recordTransfers(page: Page): Promise<Loaded[]> {
  const cdp = await page.context().newCDPSession(page);
  const pending = new Map<string, { url: string; encoding: string | undefined }>();
  const done: Loaded[] = [];
  cdp.on('Network.responseReceived', (e) => {
    const headers = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
    pending.set(e.requestId, { url: e.response.url, encoding: headers['content-encoding'] });
  });
  cdp.on('Network.loadingFinished', (e) => {
    const r = pending.get(e.requestId);
    if (r) done.push({ ...r, bytes: e.encodedDataLength });
  });
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  return done;
}

suite('web page weight', () => {
  let browser: Browser;
  let web: WebChannel;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    const gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
    gw.append('lobby', { kind: 'human', authorId: 'web:maya', authorName: 'Maya', text: 'Morning! **Numbers** for the week?' });
    gw.append('lobby', { kind: 'agent', authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', text: 'Revenue is up 8%, costs flat.' });
    gw.addGroup({ id: 'code', title: 'Code', channel: 'web', chatId: 'code', participants: ['writer'] });
    gw.append('code', { kind: 'agent', authorId: 'agent:writer', authorName: 'Writer', agentId: 'writer', text: '```python\ndef total(xs):\n    return sum(xs)  # all of them\n```' });
    web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS, aliases: {} });
    await web.start(gw);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.stop();
  });

  it(`a first visit transfers at most ${FIRST_LOAD_LIMIT / 1024} KB of page, and no code colouring`, async () => {
    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 800 } }));
    const page = await context.newPage();
    const loaded = await recordTransfers(page);
    // The bundle runs under the page's CSP (script-src 'self', no inline): nothing is refused.
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    await page.goto(web.url + '/#/g/lobby');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('.msg').count(), POLL).toBe(2);
    // Whatever the page still fetches on its own right after it is ready counts too.
    await sleep(500);
    const pageFiles = loaded.filter((r) => !new URL(r.url).pathname.startsWith('/api/'));
    const total = pageFiles.reduce((n, r) => n + r.bytes, 0);
    console.log(`[web-weight] first load: ${total} bytes in ${pageFiles.length} requests\n` + pageFiles.map((r) => `  ${r.bytes}\t${r.encoding ?? 'identity'}\t${new URL(r.url).pathname}`).join('\n'));
    expect(pageFiles.length).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(FIRST_LOAD_LIMIT);
    expect(pageFiles.filter((r) => /hljs|highlight|python/i.test(r.url))).toEqual([]);

    // A code block fetches the colouring then, and only then.
    await page.locator('.group-item', { hasText: 'Code' }).click();
    const code = page.locator('#messages pre code');
    await expect.poll(() => code.locator('.hljs-keyword').count(), POLL).toBeGreaterThan(0);
    const colouring = loaded.map((r) => new URL(r.url).pathname).filter((p) => !pageFiles.some((f) => new URL(f.url).pathname === p) && !p.startsWith('/api/'));
    expect(colouring.some((p) => /^\/core\.\w+\.js$/.test(p))).toBe(true);
    expect(colouring.some((p) => /^\/python\.\w+\.js$/.test(p))).toBe(true);
    expect(colouring.some((p) => /^\/rust\.\w+\.js$/.test(p))).toBe(false);
    expect(problems).toEqual([]);
    await context.close();
  });
});
