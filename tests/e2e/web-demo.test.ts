/**
 * The built-in demo as a newcomer meets it, in real Chromium against the real app started from the
 * built-in config with no key (so the DemoProvider answers) and its notes MCP server running as a
 * child process:
 * - the Lobby opens on its agents' short welcome;
 * - "hey everyone, thoughts?" gets recorded replies from at least two agents, each streamed: the
 *   SSE stream carries several delta events per reply and the page's bubble grows through several
 *   lengths before the reply is recorded (counted, never timed);
 * - "@writer note that …" shows a tool request on the page; Approve runs notes.add, Writer's reply
 *   follows, and "@writer what notes do we have?" runs notes.list (read-only: no approval) whose
 *   answer holds the note — which is also in the notes file in the data folder.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { openSse, type SseConnection, type SseEvent } from '../channels/web/sse-client.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS, withName } from './browser.js';

const suite = browserSuite('web-demo');
const WAIT = { timeout: 30_000, interval: 100 };

suite('the built-in demo on the page, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dir: string;
  let sse: SseConnection | undefined;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'chorus-web-demo-'));
    // The built-in config as `npm start` loads it with no config file and no key.
    const env = { CHORUS_DATA_DIR: join(dir, 'data'), CHORUS_PORT: '0', CHORUS_LOG_LEVEL: 'silent' };
    const { config } = loadConfig(null, env, { cwd: dir });
    app = await createApp({ config, logger: silentLogger, builtInDemo: true });
    await app.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 90_000);

  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close().catch(() => {});
  });

  afterAll(async () => {
    sse?.close();
    await browser?.close();
    await app?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(name: string): Promise<{ page: Page; errors: string[] }> {
    const context = await withName(await browser.newContext({ viewport: { width: 1200, height: 1000 } }), name);
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${app.webUrl}/#/g/lobby`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 20_000 });
    return { page, errors };
  }

  async function post(text: string): Promise<void> {
    const res = await fetch(`${app.webUrl}/api/groups/lobby/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text, author_name: 'Maya' }),
    });
    expect(res.status).toBe(202);
  }

  /** Recorded agent replies (not the bubbles still streaming) that contain `text`. */
  const replies = (page: Page, text: string | RegExp) => page.locator('.msg.agent:not(.streaming)', { hasText: text });

  it('opens on the welcome; an open question gets streamed replies from at least two agents', async () => {
    const { page, errors } = await open('Maya');
    await expect.poll(() => page.locator('.msg.agent').count(), POLL).toBe(3);
    await expect.poll(() => page.locator('.msg.agent').first().textContent(), POLL).toContain("Chorus's built-in demo");
    // Every text length a streaming bubble goes through, by agent: the page shows text growing.
    await page.evaluate(() => {
      const seen: Record<string, number[]> = {};
      (window as unknown as { streamed: typeof seen }).streamed = seen;
      new MutationObserver(() => {
        for (const li of Array.from(document.querySelectorAll<HTMLElement>('li.msg.streaming'))) {
          const agent = li.dataset.agentId ?? '?';
          const n = li.querySelector('.text')?.textContent?.length ?? 0;
          const lens = (seen[agent] ??= []);
          if (n > 0 && lens.at(-1) !== n) lens.push(n);
        }
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    sse = await openSse(`${app.webUrl}/api/groups/lobby/events`);
    await post('hey everyone, thoughts?');
    await expect.poll(() => replies(page, '(demo)').count(), WAIT).toBeGreaterThanOrEqual(2);
    const isReply = (e: SseEvent) => e.event === 'message' && e.data.entry?.kind === 'agent';
    const events = await sse.waitFor((evs) => evs.filter(isReply).length >= 2, 30_000);
    const answered = events.filter(isReply).map((e) => e.data.entry as { agentId: string; text: string });
    const agents = new Set(answered.map((e) => e.agentId));
    expect(agents.size).toBeGreaterThanOrEqual(2);
    for (const reply of answered) {
      // Streamed word by word: one delta per word, and together they are the reply.
      const mine = events.filter((e) => e.event === 'delta' && e.data.agentId === reply.agentId);
      const deltas = mine.map((e) => e.data.text as string);
      expect(deltas.length, JSON.stringify(deltas)).toBeGreaterThanOrEqual(5);
      expect(deltas.join('')).toBe(reply.text);
    }
    const streamed = await page.evaluate(() => (window as unknown as { streamed: Record<string, number[]> }).streamed);
    expect(Object.values(streamed).filter((lens) => lens.length >= 3).length).toBeGreaterThanOrEqual(2);
    // The replies differ: each agent speaks in its own voice.
    expect(new Set(answered.map((e) => e.text)).size).toBe(answered.length);
    await page.screenshot({ path: join(SHOTS, 'demo-conversation.png') });
    expect(errors).toEqual([]);
  }, 90_000);

  it('a note asks for approval on the page; approved, it is added and the list shows it', async () => {
    const { page, errors } = await open('Maya');
    await post('@writer note that we ship on Friday');
    const approve = page.getByRole('button', { name: 'Approve notes.add' });
    await approve.waitFor({ timeout: 30_000 });
    // Nothing is written before a person decides.
    expect(readNotes()).toBe('');
    await page.screenshot({ path: join(SHOTS, 'demo-approval.png') });
    await approve.click();
    const status = page.locator('.msg.tool-request .tool-status');
    await expect.poll(() => status.textContent(), WAIT).toBe('approved by Maya');
    await expect.poll(() => replies(page, "Done, it's in our notes").count(), WAIT).toBe(1);
    expect(readNotes()).toContain('we ship on Friday');
    await post('@writer what notes do we have?');
    // notes.list only reads: it runs without asking anyone, and its answer is Writer's reply.
    await expect.poll(() => replies(page, "Here's what we have").count(), WAIT).toBe(1);
    expect(await replies(page, "Here's what we have").textContent()).toContain('we ship on Friday');
    expect(await page.getByRole('button', { name: 'Approve notes.list' }).count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'demo-notes.png'), fullPage: true });
    expect(errors).toEqual([]);
  }, 90_000);

  function readNotes(): string {
    try {
      return readFileSync(join(dir, 'data', 'demo-notes.json'), 'utf8');
    } catch {
      return '';
    }
  }
});
