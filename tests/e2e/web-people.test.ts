/**
 * People on the web page, in real Chromium against the real app:
 * - a newcomer is asked for a name before the first message, and it is kept;
 * - each browser tells its own messages from other people's by its own client key, whatever
 *   names are typed: own on the right, others on the left with their name and a colour; a Stop
 *   from one browser reads "Stopped by <name>" in the other;
 * - drafts belong to their room and survive a reload; decisions start hidden;
 * - message text: dir="auto", a message of only backticks shows as text, a 20 KB reply is folded
 *   behind "Show more", tables scroll sideways on a phone, code is coloured;
 * - `/` offers the server's commands; desktop notifications are opt-in and fire for a reply.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS, withName } from './browser.js';

const suite = browserSuite('web-people');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const PHONE = { width: 390, height: 844 };
const LONG_REPLY = Array.from({ length: 160 }, (_, i) => `Paragraph ${i + 1}: ${'the quarterly numbers, line by line, with their caveats. '.repeat(2)}`).join('\n\n');
const TICKS = '`'.repeat(5000);
const ARABIC = 'مرحبا بالجميع، هذه رسالة باللغة العربية';
const HEBREW = 'שלום לכולם, זו הודעה בעברית';
const TABLE = [
  '| Metric | Explanation | Value |',
  '|---|---|---|',
  '| Revenue | Incomprehensibilities notwithstanding the quarterly reconciliation | 1,204,332 |',
  '| Margin | Counterrevolutionaries reconsidered the extraordinarily complicated | 17% |',
].join('\n');
const CODE = '```js\nconst total = items.reduce((sum, x) => sum + x.price, 0); // all of it\nreturn "done";\n```';

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#16a34a" }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer], config: { reply_strategy: mention_only } }
  - { channel: web, chat_id: side, title: Side room, participants: [analyst], config: { reply_strategy: mention_only } }
`;
}

/** A group whose history holds the texts under test, written straight into its log. */
function writeTexts(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'texts', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const head = { id: 'texts', title: 'Texts', channel: 'web', chatId: 'texts', participants: ['analyst', 'writer'], config: { reply_strategy: 'mention_only' }, createdAt: 0, state };
  const now = Date.now() - 60_000;
  const agent = (seq: number, text: string) => ({ id: `texts.${seq}`, seq, kind: 'agent', ts: now + seq, authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', text });
  const entries = [
    { id: 'texts.1', seq: 1, kind: 'human', ts: now, authorId: 'web:Dana', authorName: 'Dana', text: HEBREW, platformMessageId: 'h1' },
    agent(2, ARABIC),
    agent(3, TICKS),
    agent(4, TABLE),
    agent(5, CODE),
    agent(6, LONG_REPLY),
  ];
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head }), JSON.stringify({ v: 1, n: 2, ts: 0, entries })];
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

/** Writer answers when addressed, slowly when asked to be slow (so there is a round to stop). */
function makeLlm(): FakeLlm {
  return new FakeLlm({
    latencyMs: 200,
    replies: {
      writer: async (req: LlmRequest) => {
        if (!req.mustReply) return '[PASS]';
        const last = req.messages.at(-1)?.content ?? '';
        if (last.includes('slowly')) await sleep(4000);
        return 'Noted, thanks.';
      },
      analyst: (req: LlmRequest) => (req.mustReply ? 'On it.' : '[PASS]'),
    },
  });
}

suite('people on the web page, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-people-'));
    writeTexts(dataDir);
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

  async function newContext(opts: { phone?: boolean; dark?: boolean; name?: string } = {}): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: opts.phone ? PHONE : { width: 1280, height: 800 }, colorScheme: opts.dark ? 'dark' : 'light', deviceScaleFactor: 1 });
    contexts.push(context);
    if (opts.name) await withName(context, opts.name);
    return context;
  }

  async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; errors: string[] }> {
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(base + url);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { page, errors };
  }

  async function ready(page: Page): Promise<void> {
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
  }

  it('asks a newcomer for a name, keeps it, and tells own messages from other people\'s; a Stop names who pressed it', async () => {
    const a = await openPage(await newContext(), '/#/g/lobby');
    const b = await openPage(await newContext({ name: 'Ravi' }), '/#/g/lobby');

    // No name yet: the first message waits for one.
    expect(await a.page.locator('#name-btn').textContent()).toContain('Choose a name');
    await a.page.locator('#input').fill('hello from Maya');
    await a.page.keyboard.press('Enter');
    await a.page.locator('#name-dialog[open]').waitFor();
    expect(await a.page.evaluate(() => document.activeElement?.id)).toBe('author-name');
    await a.page.screenshot({ path: join(SHOTS, 'people-name-dialog.png') });
    await a.page.locator('#author-name').fill('Maya');
    await a.page.locator('#name-save').click();
    await expect.poll(() => a.page.locator('.msg.human', { hasText: 'hello from Maya' }).count(), POLL).toBe(1);
    expect(await a.page.locator('#name-dialog[open]').count()).toBe(0);
    expect(await a.page.locator('#input').inputValue()).toBe('');
    expect(await a.page.locator('#name-btn').textContent()).toContain('Maya');

    await b.page.locator('#input').fill('and hello from Ravi');
    await b.page.keyboard.press('Enter');
    // Ravi had a name: no dialog.
    await expect.poll(() => b.page.locator('.msg.human', { hasText: 'and hello from Ravi' }).count(), POLL).toBe(1);
    expect(await b.page.locator('#name-dialog[open]').count()).toBe(0);
    await expect.poll(() => a.page.locator('.msg.human', { hasText: 'and hello from Ravi' }).count(), POLL).toBe(1);
    await expect.poll(() => b.page.locator('.msg.human', { hasText: 'hello from Maya' }).count(), POLL).toBe(1);

    // The API says which browser sent each message; the two differ.
    const stored = (await app.gateway.messages('lobby', { limit: 50 })).filter((e) => e.kind === 'human');
    const tags = stored.map((e) => e.clientTag);
    expect(tags.every((t) => typeof t === 'string' && t.length > 10)).toBe(true);
    expect(new Set(tags).size).toBe(2);

    const side = (page: Page, text: string) => page.locator('.msg.human', { hasText: text }).evaluate((el) => ({ cls: el.className, justify: getComputedStyle(el).justifyContent, author: el.querySelector('.author')?.textContent, color: getComputedStyle(el.querySelector('.author')!).color }));
    for (const [me, mine, theirs, theirName] of [[a, 'hello from Maya', 'and hello from Ravi', 'Ravi'], [b, 'and hello from Ravi', 'hello from Maya', 'Maya']] as const) {
      const own = await side(me.page, mine);
      const other = await side(me.page, theirs);
      expect(own.cls).toContain('own');
      expect(own.justify).toBe('flex-end');
      expect(other.cls).toContain('other');
      expect(other.justify).not.toBe('flex-end');
      expect(other.author).toBe(theirName);
      // The other person's name is in a colour of their own, not the page's text colour.
      expect(other.color).not.toBe(await me.page.locator('#group-title').evaluate((el) => getComputedStyle(el).color));
    }
    await a.page.screenshot({ path: join(SHOTS, 'people-maya-view.png') });
    await b.page.screenshot({ path: join(SHOTS, 'people-ravi-view.png') });

    // The name is kept: after a reload Maya is still Maya and her message still hers.
    await a.page.reload();
    await ready(a.page);
    expect(await a.page.locator('#name-btn').textContent()).toContain('Maya');
    await expect.poll(() => a.page.locator('.msg.human.own', { hasText: 'hello from Maya' }).count(), POLL).toBe(1);

    // Maya stops a slow round; Ravi's page names her.
    await a.page.locator('#input').fill('@writer answer slowly please');
    await a.page.keyboard.press('Enter');
    await a.page.locator('#stop-round').waitFor({ state: 'visible' });
    await a.page.locator('#stop-round').click();
    const notice = b.page.locator('.msg.decision-stopped');
    await expect.poll(() => notice.textContent().catch(() => ''), POLL).toContain('Stopped by Maya');
    expect(await notice.textContent()).not.toContain('You');
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
  }, 60_000);

  it('keeps a draft per room, across switching rooms and a reload, and sends it to its own room', async () => {
    const { page, errors } = await openPage(await newContext({ name: 'Drafter' }), '/#/g/lobby');
    const input = page.locator('#input');
    const open = async (title: string) => {
      await page.locator('.group-item', { hasText: title }).click();
      await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe(title);
    };
    await input.fill('half a thought for the lobby');
    await open('Side room');
    expect(await input.inputValue()).toBe('');
    await input.fill('a side note');
    await open('Lobby');
    expect(await input.inputValue()).toBe('half a thought for the lobby');

    await page.reload();
    await ready(page);
    expect(await page.locator('#group-title').textContent()).toBe('Lobby');
    expect(await input.inputValue()).toBe('half a thought for the lobby');
    await open('Side room');
    expect(await input.inputValue()).toBe('a side note');

    // Enter sends the side room's draft to the side room, and only there.
    await input.press('Enter');
    await expect.poll(async () => (await app.gateway.messages('side', { limit: 50 })).some((e) => e.text === 'a side note'), POLL).toBe(true);
    expect((await app.gateway.messages('lobby', { limit: 50 })).some((e) => e.text === 'a side note')).toBe(false);
    await expect.poll(() => input.inputValue(), POLL).toBe('');
    await open('Lobby');
    expect(await input.inputValue()).toBe('half a thought for the lobby');
    await page.reload();
    await ready(page);
    await open('Side room');
    expect(await input.inputValue()).toBe('');
    expect(errors).toEqual([]);
  });

  it('starts with decisions hidden', async () => {
    const { page } = await openPage(await newContext({ name: 'Quiet' }), '/#/g/lobby');
    expect(await page.locator('#show-decisions').isChecked()).toBe(false);
    expect(await page.locator('#messages').evaluate((el) => el.classList.contains('hide-decisions'))).toBe(true);
    await page.locator('#show-decisions').check();
    await page.reload();
    await ready(page);
    expect(await page.locator('#show-decisions').isChecked()).toBe(true);
  });

  it('shows text in its own direction, backticks as text, a long reply folded, code coloured', async () => {
    const { page, errors } = await openPage(await newContext({ name: 'Reader' }), '/#/g/texts');
    await expect.poll(() => page.locator('#messages > .msg').count(), POLL).toBe(6);
    // Every message text picks its direction from its content.
    const dirs = await page.locator('#messages .msg .text').evaluateAll((els) => els.map((e) => e.getAttribute('dir')));
    expect(dirs.length).toBe(6);
    expect(dirs.every((d) => d === 'auto')).toBe(true);
    const rtl = (text: string) => page.locator('.msg .text', { hasText: text }).evaluate((el) => el.matches(':dir(rtl)'));
    expect(await rtl(ARABIC)).toBe(true);
    expect(await rtl(HEBREW)).toBe(true);
    expect(await page.locator('.msg .text', { hasText: 'Paragraph 1:' }).evaluate((el) => el.matches(':dir(ltr)'))).toBe(true);

    // 5,000 backticks: the characters, not an empty code block.
    const ticks = page.locator('#messages > .msg[data-entry-id="texts.3"] .text');
    expect(await ticks.textContent()).toBe(TICKS);
    expect(await ticks.locator('pre, code').count()).toBe(0);

    // The 20 KB reply is folded to a screenful, "Show more" opens it, "Show less" folds it again.
    const long = page.locator('#messages > .msg[data-entry-id="texts.6"]');
    const body = long.locator('.text');
    const more = long.locator('.show-more');
    await expect.poll(() => more.isVisible(), POLL).toBe(true);
    expect(LONG_REPLY.length).toBeGreaterThan(20_000);
    expect(await more.getAttribute('aria-expanded')).toBe('false');
    const folded = await body.evaluate((el) => el.getBoundingClientRect().height);
    expect(folded).toBeLessThan(600);
    await more.click();
    expect(await more.getAttribute('aria-expanded')).toBe('true');
    expect(await more.textContent()).toBe('Show less');
    expect(await body.evaluate((el) => el.getBoundingClientRect().height)).toBeGreaterThan(5000);
    await more.click();
    expect(await body.evaluate((el) => el.getBoundingClientRect().height)).toBeLessThan(600);
    // Short messages are not folded.
    for (const seq of [1, 2, 4, 5]) expect(await page.locator(`#messages > .msg[data-entry-id="texts.${seq}"] .show-more`).count()).toBe(0);

    // Code in a known language is coloured, and its block can be scrolled with the keyboard.
    const code = page.locator('#messages > .msg[data-entry-id="texts.5"] pre code');
    await expect.poll(() => code.locator('.hljs-keyword').count(), POLL).toBeGreaterThan(0);
    expect(await code.locator('.hljs-comment').count()).toBe(1);
    expect(await code.textContent()).toContain('const total = items.reduce');
    expect(await page.locator('#messages > .msg[data-entry-id="texts.5"] pre').getAttribute('tabindex')).toBe('0');
    await page.screenshot({ path: join(SHOTS, 'people-texts-desktop.png') });
    expect(errors).toEqual([]);
  });

  it('on a phone, a wide table scrolls sideways and keeps its words whole', async () => {
    const { page, errors } = await openPage(await newContext({ name: 'Reader', phone: true }), '/#/g/texts');
    const table = page.locator('#messages > .msg[data-entry-id="texts.4"] table');
    await table.waitFor();
    const m = await table.evaluate((el) => {
      // Lines a long word takes: one when it is kept whole.
      const cell = Array.from(el.querySelectorAll('td')).find((td) => td.textContent!.includes('Incomprehensibilities'))!;
      const range = document.createRange();
      range.selectNodeContents(cell);
      const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      const word = document.createRange();
      const text = cell.firstChild!;
      word.setStart(text, 0);
      word.setEnd(text, 'Incomprehensibilities'.length);
      return { scrolls: el.scrollWidth > el.clientWidth, wordLines: new Set(Array.from(word.getClientRects()).map((r) => Math.round(r.top))).size, cellLines: tops.size, tabindex: el.getAttribute('tabindex') };
    });
    expect(m.scrolls).toBe(true);
    expect(m.wordLines).toBe(1);
    expect(m.cellLines).toBeLessThanOrEqual(6);
    expect(m.tabindex).toBe('0');
    await table.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'people-table-phone.png') });
    expect(errors).toEqual([]);
  });

  it('offers the server\'s commands after "/", and sends a command typed in full', async () => {
    const { page, errors } = await openPage(await newContext({ name: 'Typist' }), '/#/g/lobby');
    const input = page.locator('#input');
    const list = page.locator('#autocomplete');
    await input.click();
    await page.keyboard.type('/');
    await expect.poll(() => list.isVisible(), POLL).toBe(true);
    const offered = await list.locator('[role="option"]').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.command));
    expect(offered).toEqual(expect.arrayContaining(['/help', '/ask', '/stop', '/group list']));
    await page.keyboard.type('gr');
    const groupCmds = await list.locator('[role="option"]').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.command));
    expect(groupCmds.length).toBeGreaterThan(1);
    expect(groupCmds.every((c) => c!.startsWith('/group'))).toBe(true);
    await page.keyboard.type('oup us');
    expect(await list.locator('[role="option"]').count()).toBe(1);
    await page.keyboard.press('Enter');
    expect(await input.inputValue()).toBe('/group usage');
    expect(await list.isVisible()).toBe(false);
    await page.screenshot({ path: join(SHOTS, 'people-command-typed.png') });
    // Typed in full, Enter sends it: the answer is for this reader alone.
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.msg.local', { hasText: 'Only you can see this' }).count(), POLL).toBe(1);
    expect(errors).toEqual([]);
  });

  it('notifies, once turned on, when an agent answers this reader in another room', async () => {
    const context = await newContext({ name: 'Noor' });
    // A stand-in for the browser's notifications that records what the page shows.
    await context.addInitScript(() => {
      const shown: { title: string; body: string }[] = [];
      (window as any).__shown = shown;
      class FakeNotification {
        static permission = 'default';
        static async requestPermission() {
          FakeNotification.permission = 'granted';
          return 'granted';
        }
        onclick: (() => void) | null = null;
        constructor(title: string, opts: { body: string }) {
          shown.push({ title, body: opts.body });
        }
        close() {}
      }
      (window as any).Notification = FakeNotification;
    });
    const { page, errors } = await openPage(context, '/#/g/lobby');
    const toggle = page.locator('#notify-toggle');
    expect(await toggle.isChecked()).toBe(false);
    await toggle.check();
    await expect.poll(() => page.evaluate(() => localStorage.getItem('chorus.notify')), POLL).toBe('1');
    await page.locator('#input').fill('@writer what do you think?');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.msg.human.own', { hasText: 'what do you think' }).count(), POLL).toBe(1);
    await page.locator('.group-item', { hasText: 'Side room' }).click();
    await expect.poll(() => page.evaluate(() => (window as any).__shown.length), POLL).toBe(1);
    const [shown] = await page.evaluate(() => (window as any).__shown);
    expect(shown.title).toBe('Writer replied to you in Lobby');
    expect(shown.body).toBe('Noted, thanks.');
    expect(errors).toEqual([]);
  });
});
