/**
 * The web feed page in real Chromium (playwright-core + Debian's chromium) against the real app:
 * router, store, web channel, with a FakeLlm that takes a moment so typing is observable.
 *
 * Without a Chromium binary the tests are skipped with the reason printed, unless
 * CHORUS_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from '../channels/web/fake-gateway.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, SHOTS, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-page');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function configYaml(dataDir: string, extra = ''): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb", aliases: [numbers] }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#16a34a", aliases: [words] }
  - { id: critic, name: Critic, persona: "You are Critic.", avatar: "🧐", color: "#dc2626", aliases: [review] }
aliases: { creatives: [writer, critic] }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0${extra} }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer, critic] }
  - { channel: web, chat_id: side, title: Side room, participants: [analyst] }
`;
}

const ARCHIVE_MESSAGES = 10_000;

/**
 * A group with a long history, written straight into the data directory as its log (100 records
 * of 100 messages): what a year of a busy chat leaves behind.
 */
function writeArchive(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'archive', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head: { id: 'archive', title: 'Archive', channel: 'web', chatId: 'archive', participants: ['analyst'], config: {}, createdAt: 0, state } })];
  for (let r = 0; r < ARCHIVE_MESSAGES / 100; r++) {
    const entries = Array.from({ length: 100 }, (_, k) => {
      const seq = r * 100 + k + 1;
      return { id: `archive.${seq}`, seq, kind: 'human', ts: Date.UTC(2025, 0, 1) + seq * 60_000, authorId: 'web:maya', authorName: 'Maya', text: `archived message ${seq}`, platformMessageId: `a${seq}` };
    });
    lines.push(JSON.stringify({ v: 1, n: r + 2, ts: 0, entries }));
  }
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

const STREAMED_FINAL = 'Numbers look fine this quarter: revenue is up 12 percent, costs are flat, and the margin held.';

/** Writer answers when addressed; Analyst streams its answer in pieces; voluntary turns pass. */
function makeLlm(): FakeLlm {
  return new FakeLlm({
    latencyMs: 500,
    replies: {
      writer: (req: LlmRequest) => (req.mustReply ? 'Hello from Writer! Notes at https://example.com/notes.' : '[PASS]'),
      analyst: async (req: LlmRequest) => {
        if (!req.mustReply) return '[PASS]';
        // Long enough pieces: the pass filter holds back the first few characters of a turn.
        req.onDelta?.('Numbers look fine this quarter: revenue is up 12 percent, ');
        await sleep(700);
        req.onDelta?.('costs are flat, and the margin held. ');
        await sleep(700);
        return STREAMED_FINAL;
      },
    },
  });
}

suite('web page in Chromium', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-e2e-'));
    writeArchive(dataDir);
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm: makeLlm(), logger: silentLogger });
    await app.start();
    base = app.webUrl!;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close().catch(() => {});
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function openPage(opts: { url?: string; dark?: boolean; phone?: boolean } = {}): Promise<{ page: Page; dialogs: string[]; errors: string[] }> {
    const context = await browser.newContext({
      viewport: opts.phone ? { width: 390, height: 780 } : { width: 1280, height: 800 },
      colorScheme: opts.dark ? 'dark' : 'light',
      deviceScaleFactor: 1,
    });
    // A returning reader: the page asks a newcomer for a name before the first message.
    await withName(context);
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const dialogs: string[] = [];
    const errors: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(opts.url ?? base + '/');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { page, dialogs, errors };
  }

  function web(): WebChannel {
    return app.channels.find((c) => c.kind === 'web') as WebChannel;
  }

  async function send(page: Page, text: string): Promise<void> {
    const input = page.locator('#input');
    await input.fill(text);
    await input.press('Enter');
    await expect.poll(() => input.inputValue(), POLL).toBe('');
  }

  async function openGroup(page: Page, title: string): Promise<void> {
    await page.locator('.group-item', { hasText: title }).click();
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe(title);
  }

  it('scrolls a 10,000-message group back to its very first message', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Archive');
    const feed = page.locator('#feed');
    const bubbles = page.locator('.msg', { hasText: 'archived message' });
    await expect.poll(() => bubbles.count(), POLL).toBeGreaterThan(0);
    // Scroll to the top again and again, as a reader would; each time an older page arrives,
    // until there is nothing older (the "load older" row goes away).
    const older = page.locator('#load-older');
    const started = performance.now();
    for (let i = 0; i < 1000 && (await older.isVisible()); i++) {
      await feed.evaluate((el) => (el.scrollTop = 0));
      await sleep(20);
    }
    await expect.poll(() => bubbles.count(), { timeout: 30_000, interval: 100 }).toBe(ARCHIVE_MESSAGES);
    // Reported, not asserted: the figure depends on the machine and its load.
    console.log(`[scroll-back] ${ARCHIVE_MESSAGES} messages loaded by scrolling up in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const texts = await bubbles.evaluateAll((els) => els.map((e) => e.querySelector('.text')?.textContent ?? ''));
    expect(texts[0]).toBe('archived message 1');
    expect(texts.at(-1)).toBe(`archived message ${ARCHIVE_MESSAGES}`);
    expect(texts.every((t, i) => t === `archived message ${i + 1}`)).toBe(true);
    expect(await page.locator('#load-older').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  }, 180_000); // functional, not a speed limit: a busy 2-core machine needs over a minute for 10,000 bubbles

  it('creates a group in the UI', async () => {
    const { page, errors } = await openPage();
    await page.locator('#new-group').click();
    await page.locator('#create-name').fill('Book club');
    await page.locator('#create-submit').click();
    await expect.poll(() => page.locator('#create-error').textContent(), POLL).toContain('Pick at least one agent');
    await page.locator('#create-agents input[value="writer"]').check();
    await page.locator('#create-agents input[value="critic"]').check();
    await page.screenshot({ path: join(SHOTS, 'create-dialog-light.png') });
    await page.locator('#create-submit').click();
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Book club');
    await expect.poll(() => page.locator('.group-item .group-title', { hasText: 'Book club' }).count(), POLL).toBe(1);
    await expect.poll(() => page.locator('#group-sub').textContent(), POLL).toContain('Writer, Critic');
    const created = app.gateway.listGroups().find((g) => g.title === 'Book club');
    expect(created?.participants).toEqual(['writer', 'critic']);
    expect(page.url()).toContain('#/g/' + created!.id);
    expect(errors).toEqual([]);
  });

  it('@writer hi → typing, then Writer’s reply with name, avatar and colour; a pass shows as a decision line', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Lobby');
    // Every text the typing line shows is kept, so a busy machine that paints the 500 ms of
    // typing between two polls cannot make the check miss it.
    await page.evaluate(() => {
      const el = document.getElementById('typing')!;
      const seen: string[] = ((window as unknown as { typingSeen: string[] }).typingSeen = []);
      new MutationObserver(() => seen.push(el.textContent ?? '')).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await send(page, '@writer hi');
    await expect.poll(() => page.locator('.msg.human .text').last().textContent(), POLL).toBe('@writer hi');
    await expect.poll(() => page.evaluate(() => (window as unknown as { typingSeen: string[] }).typingSeen.join('\n')), POLL).toContain('Writer is typing');
    const reply = page.locator('.msg.agent[data-agent-id="writer"]:not(.streaming)');
    await expect.poll(() => reply.count(), POLL).toBe(1);
    expect(await reply.locator('.author').textContent()).toBe('Writer');
    expect(await reply.locator('.avatar').textContent()).toBe('✍️');
    expect(await reply.locator('.text').textContent()).toBe('Hello from Writer! Notes at https://example.com/notes.');
    const color = await reply.locator('.bubble').evaluate((el) => getComputedStyle(el).borderLeftColor);
    expect(color).toBe('rgb(22, 163, 74)');
    const nameColor = await reply.locator('.author').evaluate((el) => getComputedStyle(el).color);
    // As text the green is darkened to read at 4.5:1 on white (web-accessible.test.ts).
    expect(nameColor).toBe('rgb(17, 122, 56)');
    // The link is a real, safe anchor without the trailing full stop.
    const link = reply.locator('.text a');
    expect(await link.getAttribute('href')).toBe('https://example.com/notes');
    expect(await link.getAttribute('rel')).toContain('noopener');
    await expect.poll(() => page.locator('#typing').textContent(), POLL).toBe('');
    // Nobody addressed: a voluntary round where everyone passes shows quiet decision lines.
    const passes = page.locator('.msg.decision[data-decision="pass"]');
    const before = await passes.count();
    await send(page, 'anyone there?');
    await expect.poll(() => passes.count(), POLL).toBe(before + 3);
    expect(await passes.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('Critic passed'), expect.stringContaining('Writer passed')]));
    await expect.poll(() => page.locator('#typing').textContent(), POLL).toBe('');
    expect(await page.locator('.msg').allTextContents()).not.toEqual(expect.arrayContaining([expect.stringContaining('[PASS]')]));
    // Details on demand.
    await reply.locator('.details-btn').click();
    await expect.poll(() => reply.locator('.details').textContent(), POLL).toContain('Model');
    expect(await reply.locator('.details').textContent()).toMatch(/Tokens10 in · \d+ out/);
    // Hiding decisions hides the pass lines.
    await page.locator('#show-decisions').uncheck();
    expect(await page.locator('.msg.decision').first().isVisible()).toBe(false);
    await page.locator('#show-decisions').check();
    expect(await page.locator('.msg.decision').first().isVisible()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'feed-light.png') });
    expect(errors).toEqual([]);
  });

  it('shows streamed text as it arrives and replaces it with the final message', async () => {
    const { page } = await openPage();
    await openGroup(page, 'Lobby');
    const before = await page.locator('.msg.agent[data-agent-id="analyst"]:not(.streaming)').count();
    await send(page, '@analyst how are the numbers?');
    const streaming = page.locator('.msg.streaming[data-agent-id="analyst"]');
    await expect.poll(() => streaming.count(), POLL).toBe(1);
    expect(await streaming.locator('.text').textContent()).toMatch(/^Numbers/);
    await expect.poll(() => page.locator('.msg.agent[data-agent-id="analyst"]:not(.streaming)').count(), POLL).toBe(before + 1);
    await expect.poll(() => streaming.count(), POLL).toBe(0);
    expect(await page.locator('.msg.agent[data-agent-id="analyst"] .text').last().textContent()).toBe(STREAMED_FINAL);
  });

  it('the picker inserts a handle and @-autocomplete completes @wr to @writer', async () => {
    const { page } = await openPage();
    await openGroup(page, 'Lobby');
    await page.locator('#picker-btn').click();
    await page.locator('#picker [data-handle="critic"]').click();
    expect(await page.locator('#input').inputValue()).toBe('@critic ');
    expect(await page.locator('#picker').isHidden()).toBe(true);

    await page.locator('#input').fill('');
    await page.locator('#input').pressSequentially('thoughts, @wr');
    await expect.poll(() => page.locator('#autocomplete').isVisible(), POLL).toBe(true);
    expect(await page.locator('#autocomplete .option').first().getAttribute('data-handle')).toBe('writer');
    await page.screenshot({ path: join(SHOTS, 'autocomplete-light.png') });
    await page.locator('#input').press('Enter');
    expect(await page.locator('#input').inputValue()).toBe('thoughts, @writer ');
    expect(await page.locator('#autocomplete').isHidden()).toBe(true);
    // Aliases are offered too.
    await page.locator('#input').pressSequentially('@cre');
    await expect.poll(() => page.locator('#autocomplete .option').first().getAttribute('data-handle'), POLL).toBe('creatives');
    await page.locator('#input').press('Tab');
    expect(await page.locator('#input').inputValue()).toBe('thoughts, @writer @creatives ');
    // Shift+Enter adds a line instead of sending.
    await page.locator('#input').press('Shift+Enter');
    expect(await page.locator('#input').inputValue()).toBe('thoughts, @writer @creatives \n');
    // Moving to something else on the page closes the suggestions.
    await page.locator('#input').pressSequentially('@an');
    await expect.poll(() => page.locator('#autocomplete').isVisible(), POLL).toBe(true);
    await page.locator('#group-title').click();
    await expect.poll(() => page.locator('#autocomplete').isHidden(), POLL).toBe(true);
  });

  it('renders HTML in messages as text and runs nothing', async () => {
    const { page, dialogs } = await openPage();
    await openGroup(page, 'Lobby');
    const evil = '<img src=x onerror=alert(1)> <script>alert(2)</script> javascript:alert(3)';
    await send(page, evil);
    const msg = page.locator('.msg.human .text', { hasText: '<img src=x' });
    await expect.poll(() => msg.count(), POLL).toBe(1);
    expect(await msg.textContent()).toBe(evil);
    expect(await page.locator('#messages img').count()).toBe(0);
    expect(await page.locator('#messages script').count()).toBe(0);
    expect(await page.locator('#messages a[href^="javascript"]').count()).toBe(0);
    await sleep(500);
    expect(dialogs).toEqual([]);
  });

  it('counts unread messages in another group and clears them when opened', async () => {
    const { page } = await openPage();
    await openGroup(page, 'Lobby');
    const badge = page.locator('.group-item', { hasText: 'Side room' }).locator('.badge');
    expect(await badge.count()).toBe(0);
    const res = await fetch(`${base}/api/groups/side/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'ping from elsewhere', author_name: 'Maya' }),
    });
    expect(res.status).toBe(202);
    // The human message and Analyst's 1:1 answer both count.
    await expect.poll(() => badge.textContent().catch(() => null), POLL).toBe('2');
    expect(await page.locator('.group-item', { hasText: 'Side room' }).locator('.group-preview').textContent()).toContain('Analyst:');
    await page.screenshot({ path: join(SHOTS, 'unread-light.png') });
    await openGroup(page, 'Side room');
    await expect.poll(() => badge.count(), POLL).toBe(0);
    await expect.poll(() => page.locator('.msg.human .text', { hasText: 'ping from elsewhere' }).count(), POLL).toBe(1);
  });

  it('reconnecting SSE shows no duplicate and misses nothing', async () => {
    const { page } = await openPage();
    await openGroup(page, 'Lobby');
    await send(page, '@writer before the drop');
    await expect.poll(() => page.locator('.msg.human .text', { hasText: 'before the drop' }).count(), POLL).toBe(1);
    await expect.poll(() => web().sseClientCount, POLL).toBe(2);
    web().disconnectStreams();
    // While the page is away, the conversation goes on.
    await fetch(`${base}/api/groups/lobby/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'said while disconnected', author_name: 'Maya' }),
    });
    await expect.poll(() => web().sseClientCount, POLL).toBe(2);
    await send(page, '@writer after the drop');
    await expect.poll(() => page.locator('.msg.human .text', { hasText: 'after the drop' }).count(), POLL).toBe(1);
    await expect.poll(() => page.locator('#typing').textContent(), POLL).toBe('');
    await sleep(800);
    const ids = await page.locator('#messages [data-entry-id]').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.entryId));
    expect(new Set(ids).size).toBe(ids.length);
    expect(await page.locator('.msg.human .text', { hasText: 'said while disconnected' }).count()).toBe(1);
    const transcript = (await app.gateway.messages('lobby', { limit: 50 })).map((e) => e.id);
    // Every entry once. Passes sit folded in their round's line (at its first pass), so a round
    // whose passes straddle another message is not in seq order inside the list: compare by seq.
    const bySeq = (a: string | undefined, b: string | undefined) => Number(a!.split('.')[1]) - Number(b!.split('.')[1]);
    expect([...ids].sort(bySeq)).toEqual(transcript);
    const placed = await page.locator('#messages > li[data-seq]').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.seq)));
    expect(placed).toEqual([...placed].sort((a, b) => a - b));
    expect(await page.locator('#conn').getAttribute('data-state')).toBe('live');
  });

  it('commands typed in the composer: a query is answered to the asker only, a change by the system voice', async () => {
    const { page } = await openPage();
    await openGroup(page, 'Lobby');
    const before = await page.locator('.msg.system').count();
    // The answer to a query is a line only this reader sees, nothing is stored.
    await send(page, '/group list');
    await expect.poll(() => page.locator('.msg.local').count(), POLL).toBe(1);
    expect(await page.locator('.msg.local .text').textContent()).toContain('Analyst');
    expect(await page.locator('.msg.system').count()).toBe(before);
    await send(page, '/group unmute writer');
    await expect.poll(() => page.locator('.msg.system').count(), POLL).toBeGreaterThan(before);
    expect(await page.locator('.msg.system .text').last().textContent()).toContain('Writer is unmuted');
  });

  it('manages members and config with inline validation errors', async () => {
    const { page } = await openPage();
    await openGroup(page, 'Book club');
    await page.locator('#panel-toggle').click();
    await expect.poll(() => page.locator('#members .member').count(), POLL).toBe(2);
    await page.locator('#add-member-select').selectOption('analyst');
    await page.locator('#add-member button[type="submit"]').click();
    await expect.poll(() => page.locator('#members .member').count(), POLL).toBe(3);
    await expect.poll(() => app.gateway.getGroup(groupId('Book club'))?.participants, POLL).toEqual(['writer', 'critic', 'analyst']);
    await page.locator('#members .member[data-agent-id="critic"] .remove').click();
    // Removing asks first: the member stays until the confirm button.
    await page.locator('#members .member[data-agent-id="critic"] .confirm-remove').click();
    await expect.poll(() => page.locator('#members .member').count(), POLL).toBe(2);
    expect(app.gateway.getGroup(groupId('Book club'))?.participants).toEqual(['writer', 'analyst']);

    const turns = page.locator('#config-form [name="max_agent_turns_per_message"]');
    await turns.fill('999');
    await page.locator('#config-form button[type="submit"]').click();
    await expect.poll(() => page.locator('#config-error').isVisible(), POLL).toBe(true);
    expect(await page.locator('#config-error').textContent()).toContain('max_agent_turns_per_message');
    expect(await turns.getAttribute('aria-invalid')).toBe('true');
    await page.screenshot({ path: join(SHOTS, 'panel-error-light.png') });
    await turns.fill('1');
    await page.locator('#config-form [name="reply_strategy"]').selectOption('mention_only');
    await page.locator('#config-form button[type="submit"]').click();
    await expect.poll(() => page.locator('#config-saved').isVisible(), POLL).toBe(true);
    expect(app.gateway.getGroup(groupId('Book club'))?.config).toMatchObject({ max_agent_turns_per_message: 1, reply_strategy: 'mention_only' });
    await expect.poll(() => page.locator('#group-sub').textContent(), POLL).toContain('mention_only');
    // Dissolving takes two clicks and moves the page to another group.
    const id = groupId('Book club');
    await page.locator('#dissolve').click();
    expect(await page.locator('#dissolve').textContent()).toContain('Really dissolve');
    await page.locator('#dissolve').click();
    await expect.poll(() => page.locator('.group-item', { hasText: 'Book club' }).count(), POLL).toBe(0);
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).not.toBe('Book club');
    expect(app.gateway.getGroup(id)?.archived ?? true).toBe(true);
  });

  function groupId(title: string): string {
    const g = app.gateway.listGroups().find((x) => x.title === title);
    if (!g) throw new Error(`no group ${title}`);
    return g.id;
  }

  it('looks right in dark mode and at phone width (screenshots)', async () => {
    const dark = await openPage({ dark: true });
    await openGroup(dark.page, 'Lobby');
    await dark.page.locator('.msg.agent').first().waitFor();
    await dark.page.screenshot({ path: join(SHOTS, 'feed-dark.png') });
    const bg = await dark.page.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(bg).not.toBe('rgb(246, 247, 249)');
    await dark.page.locator('#panel-toggle').click();
    await dark.page.screenshot({ path: join(SHOTS, 'panel-dark.png') });

    for (const scheme of ['light', 'dark'] as const) {
      const phone = await openPage({ phone: true, dark: scheme === 'dark', url: base + '/#/g/lobby' });
      await expect.poll(() => phone.page.locator('#group-title').textContent(), POLL).toBe('Lobby');
      await phone.page.locator('.msg.agent').first().waitFor();
      await phone.page.screenshot({ path: join(SHOTS, `phone-feed-${scheme}.png`) });
      // Nothing overflows sideways at phone width.
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      await phone.page.locator('#menu-toggle').click();
      await expect.poll(() => phone.page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().left), POLL).toBeGreaterThanOrEqual(0);
      await phone.page.screenshot({ path: join(SHOTS, `phone-sidebar-${scheme}.png`) });
      await phone.page.locator('.group-item', { hasText: 'Side room' }).click();
      await expect.poll(() => phone.page.locator('#group-title').textContent(), POLL).toBe('Side room');
      await expect.poll(() => phone.page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().right), POLL).toBeLessThanOrEqual(0);
    }
  }, 90_000);
});

suite('web page auth and scripted banner', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-auth-'));
    const { config } = parseConfigText(configYaml(dataDir, ', auth_token: "open-sesame"'), 'test');
    // No llm override: the scripted provider runs, and the page must say so loudly.
    app = await createApp({ config, logger: silentLogger });
    await app.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('asks for the token, rejects a wrong one clearly, keeps the right one, shows the scripted banner', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // A returning reader: the page asks a newcomer for a name before the first message.
    await withName(context);
    const page = await context.newPage();
    await page.goto(app.webUrl + '/');
    const dialog = page.locator('#auth-dialog');
    await dialog.waitFor({ state: 'visible', timeout: 15_000 });
    await page.locator('#auth-token').fill('wrong');
    await page.locator('#auth-submit').click();
    await expect.poll(() => page.locator('#auth-error').textContent(), POLL).toContain('not accepted');
    await page.screenshot({ path: join(SHOTS, 'auth-wrong-token.png') });
    await page.locator('#auth-token').fill('open-sesame');
    await page.locator('#auth-submit').click();
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    expect(await dialog.isVisible()).toBe(false);
    expect(await page.locator('#banner').isVisible()).toBe(true);
    expect(await page.locator('#banner').textContent()).toContain('canned until an API key is configured');
    expect(await page.evaluate(() => localStorage.getItem('chorus.token'))).toBe('open-sesame');
    // The live stream works with the token too: a scripted reply arrives.
    await page.locator('#input').fill('@writer hello');
    await page.locator('#input').press('Enter');
    await expect.poll(() => page.locator('.msg.agent[data-agent-id="writer"]:not(.streaming)').count(), POLL).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, 'scripted-banner-light.png') });
    // A reload does not ask again.
    await page.reload();
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    expect(await dialog.isVisible()).toBe(false);
    await context.close();
  });
});

suite('web page with Telegram groups and a sticky agent', () => {
  let browser: Browser;
  let web: WebChannel;
  let gw: FakeGateway;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer', 'critic'] });
    gw.addGroup({ id: 'tg-team', title: 'Team chat', channel: 'telegram', chatId: '-100200', participants: ['analyst', 'writer'] });
    gw.addGroup({ id: 'dc-ops', title: 'Ops channel', channel: 'discord', chatId: '99887766', participants: ['critic'] });
    gw.append('tg-team', { kind: 'human', authorId: 'tg:1', authorName: 'Maya', text: '@analyst how did Q3 go?' });
    gw.append('tg-team', { kind: 'agent', authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', text: 'Revenue +8% year over year.' });
    await gw.updateConfig('lobby', { sticky: true });
    gw.setSticky('lobby', 'writer');
    web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS, aliases: {} });
    await web.start(gw);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.stop();
  });

  it('shows Telegram/Discord groups read-only with their channel icon, and the sticky agent by the composer', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // A returning reader: the page asks a newcomer for a name before the first message.
    await withName(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(web.url + '/#/g/tg-team');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Team chat');
    const tg = page.locator('.group-item[data-group-id="tg-team"]');
    expect(await tg.locator('.channel-icon').getAttribute('aria-label')).toBe('Telegram');
    expect(await tg.locator('.ro').textContent()).toBe('read-only');
    expect(await page.locator('.group-item[data-group-id="dc-ops"] .channel-icon').getAttribute('aria-label')).toBe('Discord');
    expect(await page.locator('.group-item[data-group-id="lobby"] .ro').count()).toBe(0);
    await expect.poll(() => page.locator('.msg.agent .text').first().textContent(), POLL).toBe('Revenue +8% year over year.');
    expect(await page.locator('#input').isDisabled()).toBe(true);
    expect(await page.locator('#send').isDisabled()).toBe(true);
    expect(await page.locator('#readonly-note').textContent()).toContain('Telegram');
    await page.screenshot({ path: join(SHOTS, 'telegram-readonly-light.png') });

    await page.locator('.group-item[data-group-id="lobby"]').click();
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Lobby');
    expect(await page.locator('#input').isDisabled()).toBe(false);
    await expect.poll(() => page.locator('#sticky').isVisible(), POLL).toBe(true);
    expect(await page.locator('#sticky').textContent()).toContain('Talking to Writer');
    // A message arriving on Telegram counts as unread on the web page.
    gw.append('tg-team', { kind: 'human', authorId: 'tg:2', authorName: 'Bob', text: 'and Q4?' });
    await expect.poll(() => tg.locator('.badge').textContent().catch(() => null), POLL).toBe('1');
    await context.close();
  });
});
