/**
 * What the page shows of work in progress and of what covers it, in real Chromium against the
 * real app: Stop is there only while an agent of the open room is typing; the sidebar's typing
 * line for another room is told on (re)connecting and on reload, not only by the next typing
 * event; at phone size the members panel covers the screen and everything behind it is inert
 * until it closes, when focus goes back to the button that opened it.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS } from './browser.js';

const suite = browserSuite('web-live');

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#16a34a" }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: here, title: Here, participants: [analyst, writer] }
  - { channel: web, chat_id: slow, title: Slow room, participants: [writer] }
  - { channel: web, chat_id: phone, title: Phone, participants: [analyst, writer] }
`;
}

suite('web page: work in progress, and the phone panel', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];
  /** Writer's answers waiting to be let go, oldest first; `release` lets them all go. */
  const held: Array<() => void> = [];
  const release = () => {
    for (const go of held.splice(0)) go();
  };
  /** Resolves once an answer of Writer is waiting. */
  const writerWaits = () => expect.poll(() => held.length, POLL).toBeGreaterThan(0);
  const llm = new FakeLlm({
    latencyMs: 50,
    replies: {
      writer: async (req) => {
        if (!req.mustReply) return '[PASS]';
        await new Promise<void>((resolve) => held.push(resolve));
        return 'Writer is done now.';
      },
      analyst: (req) => (req.mustReply ? 'Analyst here.' : '[PASS]'),
    },
  });

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-live-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterEach(async () => {
    release();
    for (const c of contexts.splice(0)) await c.close().catch(() => {});
  });

  afterAll(async () => {
    release();
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function openPage(group: string, phone = false): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({
      viewport: phone ? { width: 390, height: 844 } : { width: 1280, height: 800 },
      hasTouch: phone,
      isMobile: phone,
      deviceScaleFactor: 1,
    });
    contexts.push(context);
    await context.addInitScript(() => localStorage.setItem('chorus.name', 'Maya'));
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), POLL).toBe('live');
    return { page, errors };
  }

  const web = () => app.channels.find((c) => c.kind === 'web') as WebChannel;
  const post = (group: string, text: string) =>
    fetch(`${base}/api/groups/${group}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya' }) });
  const slowPreview = (page: Page) => page.locator('.group-item[data-group-id="slow"] .group-preview');

  it('Stop shows only while an agent of the open room is typing; the sidebar learns who types on reload and on reconnect', async () => {
    const { page, errors } = await openPage('here');
    const stop = page.locator('#stop-round');
    expect(await stop.isHidden()).toBe(true);
    const calls = llm.callsFor('writer').length;
    expect((await post('slow', '@writer take your time')).status).toBe(202);
    await expect.poll(() => slowPreview(page).textContent(), POLL).toBe('Writer is typing…');
    // Someone types in another room: nothing to stop in this one.
    expect(await stop.isHidden()).toBe(true);
    await writerWaits();
    // A reload while Writer types: the sidebar says so at once, not at the next typing event.
    await page.reload();
    await page.locator('body[data-ready="true"]').waitFor();
    await expect.poll(() => slowPreview(page).textContent(), POLL).toBe('Writer is typing…');
    expect(await slowPreview(page).evaluate((el) => el.classList.contains('is-typing'))).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'live-sidebar-typing-after-reload.png') });
    expect(await stop.isHidden()).toBe(true);
    // The room where Writer types: Stop is there (the room's own snapshot says who types).
    await page.locator('.group-item[data-group-id="slow"]').click();
    await expect.poll(() => stop.isVisible(), POLL).toBe(true);
    // Back to a quiet room: Stop goes.
    await page.locator('.group-item[data-group-id="here"]').click();
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Here');
    await expect.poll(() => stop.isHidden(), POLL).toBe(true);
    // The answer ends the typing everywhere.
    expect(llm.callsFor('writer').length).toBe(calls + 1);
    await writerWaits();
    release();
    await expect.poll(() => slowPreview(page).textContent(), POLL).toContain('Writer is done now.');
    // While the streams are down, Writer starts typing again: the reconnect brings the news.
    await expect.poll(() => web().sseClientCount, POLL).toBe(2);
    web().disconnectStreams();
    expect((await post('slow', '@writer once more')).status).toBe(202);
    await expect.poll(() => slowPreview(page).textContent(), POLL).toBe('Writer is typing…');
    expect(await stop.isHidden()).toBe(true);
    await writerWaits();
    release();
    await expect.poll(() => slowPreview(page).textContent(), POLL).toContain('Writer is done now.');
    expect(errors).toEqual([]);
  });

  it('Stop is hidden again once the typing ends in the open room', async () => {
    const { page, errors } = await openPage('slow');
    const stop = page.locator('#stop-round');
    expect(await stop.isHidden()).toBe(true);
    const replies = page.locator('.msg.agent[data-agent-id="writer"]:not(.streaming)');
    const before = await replies.count();
    const input = page.locator('#input');
    await input.fill('@writer again please');
    await input.press('Enter');
    await expect.poll(() => stop.isVisible(), POLL).toBe(true);
    await writerWaits();
    release();
    await expect.poll(() => replies.count(), POLL).toBe(before + 1);
    await expect.poll(() => stop.isHidden(), POLL).toBe(true);
    expect(errors).toEqual([]);
  });

  it('phone (390×844): the full-screen panel makes the page behind it inert, and gives it back on close', async () => {
    const { page, errors } = await openPage('phone', true);
    const inert = () => page.evaluate(() => ({
      chat: (document.querySelector('main.chat') as HTMLElement).inert,
      sidebar: (document.querySelector('#sidebar') as HTMLElement).inert,
      panel: (document.querySelector('#panel') as HTMLElement).inert,
    }));
    // Closed: the chat is usable, the drawer (closed) is inert.
    expect(await inert()).toEqual({ chat: false, sidebar: true, panel: false });
    await page.locator('#panel-toggle').tap();
    await expect.poll(() => page.locator('#panel').isVisible(), POLL).toBe(true);
    const box = (await page.locator('#panel').boundingBox())!;
    expect(box.width).toBe(390);
    expect(await inert()).toEqual({ chat: true, sidebar: true, panel: false });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('panel-close');
    // Tabbing goes round the panel and never reaches the feed or the composer behind it.
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const inside = await page.evaluate(() => {
        const el = document.activeElement;
        return !el || el === document.body || Boolean(el.closest('#panel'));
      });
      expect(inside).toBe(true);
    }
    // A click on what is behind does nothing: the composer cannot take focus.
    await page.locator('#input').focus().catch(() => {});
    expect(await page.evaluate(() => document.activeElement?.id)).not.toBe('input');
    await page.screenshot({ path: join(SHOTS, 'live-phone-panel-inert.png') });
    await page.locator('#panel-close').tap();
    await expect.poll(() => page.locator('#panel').isHidden(), POLL).toBe(true);
    expect(await inert()).toEqual({ chat: false, sidebar: true, panel: false });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('panel-toggle');
    // Escape closes it too, with the same result.
    await page.locator('#panel-toggle').tap();
    await expect.poll(async () => (await inert()).chat, POLL).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('#panel').isHidden(), POLL).toBe(true);
    expect(await inert()).toEqual({ chat: false, sidebar: true, panel: false });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('panel-toggle');
    expect(errors).toEqual([]);
  });
});
