/**
 * A quiet feed and help while typing, in real Chromium (playwright-core + Debian's
 * chromium) against the real app with the offline scripted provider (the demo a newcomer sees):
 * - the passes of one round fold into one line that opens on click, live and in scroll-back;
 *   failures and cap notices stay visible with "Decisions" off;
 * - an unknown @handle is flagged with a "did you mean" before sending; a counter knows the
 *   server's `limits.max_message_chars` and Send is refused past it;
 * - the @ picker works from the keyboard;
 * - "hello everyone" in the demo gets an answer, not only passes.
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
import { parseConfigText } from '../../src/config/load.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, SHOTS, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-feed-quiet');

/** Not the schema default (8000): the page must use what the server says. */
const MAX_CHARS = 500;

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst, a numbers person.", avatar: "📈", color: "#2563eb", aliases: [numbers] }
  - { id: writer, name: Writer, persona: "You are Writer, a careful writer.", avatar: "✍️", color: "#16a34a", aliases: [words] }
  - { id: critic, name: Critic, persona: "You are Critic, a sharp critic.", avatar: "🧐", color: "#dc2626", aliases: [review] }
  - { id: outsider, name: Outsider, persona: "You are Outsider.", avatar: "🚪" }
aliases: { creatives: [writer, critic] }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000, max_message_chars: ${MAX_CHARS} }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer, critic] }
  - { channel: web, chat_id: quiet, title: Quiet room, participants: [analyst, writer, critic] }
`;
}

const ROUNDS = 40;
/** The round whose passes straddle the first page (seq 113-116). */
const SPLIT_ROUND = 28;
const AGENTS = [
  ['analyst', 'Analyst'],
  ['writer', 'Writer'],
  ['critic', 'Critic'],
] as const;

/**
 * A group whose history is a human message and three passes per round, 40 rounds, then a failure,
 * a cap notice and two more messages (164 entries): the page loads the newest 50 and pages back
 * in 100s, so the passes of two rounds are split across a page boundary (114 | 115-116 and
 * 14 | 15-16). In the first of them Writer answered between the passes (seq 115), so the folded
 * line must move up to its earliest pass when that arrives with the older page.
 */
function writeHistory(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'history', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const participants = AGENTS.map(([id]) => id);
  const head = { id: 'history', title: 'History', channel: 'web', chatId: 'history', participants, config: {}, createdAt: 0, state };
  const entries: Record<string, unknown>[] = [];
  const ts = (seq: number) => Date.UTC(2025, 0, 1) + seq * 60_000;
  for (let r = 0; r < ROUNDS; r++) {
    const seq = r * 4 + 1;
    entries.push({ id: `history.${seq}`, seq, kind: 'human', ts: ts(seq), authorId: 'web:maya', authorName: 'Maya', text: `question ${r + 1}`, platformMessageId: `h${seq}`, roundId: `r${seq}` });
    AGENTS.forEach(([agentId, name], k) => {
      const s = seq + 1 + k;
      if (r === SPLIT_ROUND && agentId === 'writer') {
        // Someone answered between two passes of the round that straddles the first page.
        entries.push({ id: `history.${s}`, seq: s, kind: 'agent', ts: ts(s), authorId: 'agent:writer', authorName: name, agentId, text: 'a reply between passes', roundId: `r${seq}` });
        return;
      }
      entries.push({ id: `history.${s}`, seq: s, kind: 'decision', ts: ts(s), authorId: 'system', authorName: name, text: '', decision: { type: 'pass', agentId }, hiddenFromAgents: true, roundId: `r${seq}` });
    });
  }
  const last = ROUNDS * 4;
  entries.push({ id: `history.${last + 1}`, seq: last + 1, kind: 'system', ts: ts(last + 1), authorId: 'system', authorName: 'Chorus', text: '⚠ Critic could not reply (timeout)', decision: { type: 'error', agentId: 'critic', detail: 'timeout' }, hiddenFromAgents: true, roundId: 'r157' });
  entries.push({ id: `history.${last + 2}`, seq: last + 2, kind: 'decision', ts: ts(last + 2), authorId: 'system', authorName: 'Chorus', text: 'turn cap reached (3 agent replies for this message)', decision: { type: 'cap', detail: 'turn cap reached' }, hiddenFromAgents: true, roundId: 'r157' });
  entries.push({ id: `history.${last + 3}`, seq: last + 3, kind: 'human', ts: ts(last + 3), authorId: 'web:maya', authorName: 'Maya', text: 'after the cap', platformMessageId: `h${last + 3}` });
  entries.push({ id: `history.${last + 4}`, seq: last + 4, kind: 'human', ts: ts(last + 4), authorId: 'web:maya', authorName: 'Maya', text: 'one more', platformMessageId: `h${last + 4}` });
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head })];
  for (let i = 0; i < entries.length; i += 50) lines.push(JSON.stringify({ v: 1, n: lines.length + 1, ts: 0, entries: entries.slice(i, i + 50) }));
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

suite('a quiet feed and help while typing, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-quiet-'));
    writeHistory(dataDir);
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, logger: silentLogger });
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

  async function openPage(): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, timezoneId: 'UTC' }); // the History group's times are in UTC; separators use the browser's day
    // A returning reader: the page asks a newcomer for a name before the first message.
    await withName(context);
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(base + '/');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { page, errors };
  }

  async function openGroup(page: Page, title: string): Promise<void> {
    await page.locator('.group-item', { hasText: title }).click();
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe(title);
  }

  async function send(page: Page, text: string): Promise<void> {
    const input = page.locator('#input');
    await input.fill(text);
    await input.press('Enter');
    await expect.poll(() => input.inputValue(), POLL).toBe('');
  }

  it('folds the passes of a live round into one line that opens on click', async () => {
    const { page, errors } = await openPage();
    // Decisions start hidden; a reader who wants the passes turns them on.
    await page.locator('#show-decisions').check();
    await openGroup(page, 'Quiet room');
    await send(page, 'lovely weather today');
    const folded = page.locator('#messages > .msg.decision-round');
    // The passes arrive one by one over SSE and join the same line.
    await expect.poll(() => folded.getAttribute('data-count').catch(() => null), POLL).toBe('3');
    expect(await folded.count()).toBe(1);
    const summary = folded.locator('.round-summary');
    expect(await summary.textContent()).toMatch(/^· (Analyst|Writer|Critic), (Analyst|Writer|Critic), (Analyst|Writer|Critic) passed$/);
    for (const name of ['Analyst', 'Writer', 'Critic']) expect(await summary.textContent()).toContain(name);
    // No pass line of its own in the feed, and the individual lines are folded away.
    expect(await page.locator('#messages > .msg.decision[data-decision="pass"]').count()).toBe(0);
    const lines = folded.locator('.round-lines > .msg.decision[data-decision="pass"]');
    expect(await lines.count()).toBe(3);
    expect(await lines.first().isVisible()).toBe(false);
    await page.screenshot({ path: join(SHOTS, 'quiet-feed-folded.png') });
    await summary.click();
    expect(await summary.getAttribute('aria-expanded')).toBe('true');
    expect(await lines.evaluateAll((els) => els.map((e) => e.checkVisibility()))).toEqual([true, true, true]);
    expect(await lines.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('Writer passed')]));
    await page.screenshot({ path: join(SHOTS, 'quiet-feed-expanded.png') });
    await summary.click();
    expect(await lines.first().isVisible()).toBe(false);
    // A second message is a second round: a second line, not a longer first one.
    await send(page, 'still lovely weather');
    await expect.poll(() => folded.count(), POLL).toBe(2);
    await expect.poll(() => folded.last().getAttribute('data-count'), POLL).toBe('3');
    expect(await folded.first().getAttribute('data-count')).toBe('3');
    expect(errors).toEqual([]);
  });

  it('folds history the same way across page boundaries, and keeps failures and cap notices visible with decisions off', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'History');
    const older = page.locator('#load-older');
    await expect.poll(() => older.isVisible(), POLL).toBe(true);
    for (let i = 0; i < 200 && (await older.isVisible()); i++) {
      await page.locator('#feed').evaluate((el) => (el.scrollTop = 0));
      await new Promise((r) => setTimeout(r, 30));
    }
    const folded = page.locator('#messages > .msg.decision-round');
    await expect.poll(() => folded.count(), POLL).toBe(ROUNDS);
    const counts = await folded.evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.count));
    expect(counts).toEqual(Array.from({ length: ROUNDS }, (_, r) => (r === SPLIT_ROUND ? '2' : '3')));
    expect(await page.locator('#messages > .msg.decision[data-decision="pass"]').count()).toBe(0);
    // Every round line sits right after its question, in order: the split rounds too.
    const top = await page.locator('#messages > li').evaluateAll((els) => els.map((e) => ((e as HTMLElement).dataset.decision ?? e.querySelector('.text')!.textContent)));
    const expected: (string | null)[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      expected.push(`question ${r + 1}`, 'round');
      if (r === SPLIT_ROUND) expected.push('a reply between passes');
    }
    expected.push('error', 'cap', 'after the cap', 'one more');
    expect(top).toEqual(expected);

    const failure = page.locator('#messages > .msg.decision-error');
    const cap = page.locator('#messages > .msg.decision-cap');
    expect(await failure.textContent()).toContain('Critic could not reply');
    await page.locator('#show-decisions').uncheck();
    expect(await failure.isVisible()).toBe(true);
    expect(await cap.isVisible()).toBe(true);
    expect(await folded.last().isVisible()).toBe(false);
    await page.locator('#feed').evaluate((el) => (el.scrollTop = el.scrollHeight));
    await page.screenshot({ path: join(SHOTS, 'quiet-feed-decisions-off.png') });
    await page.locator('#show-decisions').check();
    expect(await folded.last().isVisible()).toBe(true);
    expect(errors).toEqual([]);
  }, 60_000);

  it('flags an unknown @handle with a "did you mean", but not code, e-mail addresses or aliases', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Lobby');
    const input = page.locator('#input');
    const warning = page.locator('#handle-warning');
    await input.fill('@writr can you draft the intro?');
    await expect.poll(() => warning.textContent(), POLL).toBe('⚠ unknown handle @writr — did you mean @writer? use @writer');
    expect(await warning.isVisible()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'composer-unknown-handle.png') });
    // The suggestion fixes the draft in place.
    await warning.locator('button[data-handle="writer"]').click();
    expect(await input.inputValue()).toBe('@writer can you draft the intro?');
    await expect.poll(() => warning.isHidden(), POLL).toBe(true);
    // Known handles, aliases, code spans, fences, e-mail addresses and URLs are fine.
    await input.fill('@all @everyone @creatives @numbers @Critic mail maya@writr.com, see `@writr` and https://example.com/@writr\n```\n@wrtr\n```');
    await expect.poll(() => warning.isHidden(), POLL).toBe(true);
    // Far from every handle: no guess. A real agent outside this group: said so.
    await input.fill('@zzzzzz and @outsider');
    await expect.poll(() => warning.locator('.warn-line').count(), POLL).toBe(2);
    expect(await warning.locator('.warn-line').allTextContents()).toEqual([
      '⚠ unknown handle @zzzzzz — no agent or alias here has that name',
      '⚠ Outsider (@outsider) is not in this group, so nobody is addressed',
    ]);
    // A handle still being typed is not flagged while it can become a known one.
    await input.fill('');
    await input.pressSequentially('hi @wri');
    expect(await warning.isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('counts characters against the server’s limit and refuses to send past it, keeping the text', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Lobby');
    const input = page.locator('#input');
    const counter = page.locator('#char-count');
    // The textarea never cuts a draft shorter than what the server takes.
    expect(await input.getAttribute('maxlength')).toBeNull();
    await input.fill('x'.repeat(Math.floor(MAX_CHARS * 0.5)));
    expect(await counter.isHidden()).toBe(true);
    await input.fill('x'.repeat(MAX_CHARS - 10));
    await expect.poll(() => counter.textContent(), POLL).toBe(`${MAX_CHARS - 10} / ${MAX_CHARS}`);
    expect(await counter.isVisible()).toBe(true);
    expect(await counter.getAttribute('data-over')).toBe('false');
    const over = 'y'.repeat(MAX_CHARS + 25);
    await input.fill(over);
    await expect.poll(() => counter.getAttribute('data-over'), POLL).toBe('true');
    expect(await counter.textContent()).toBe(`${MAX_CHARS + 25} / ${MAX_CHARS} characters — 25 over the limit`);
    const overColor = await counter.evaluate((el) => getComputedStyle(el).color);
    const before = (await app.gateway.messages('lobby', { limit: 500 })).length;
    await input.press('Enter');
    await expect.poll(() => page.locator('#composer-error').textContent(), POLL).toBe(
      `Not sent: this message has ${MAX_CHARS + 25} characters and the limit is ${MAX_CHARS}. Shorten it by 25 or split it into two messages.`,
    );
    expect(await input.inputValue()).toBe(over);
    expect((await app.gateway.messages('lobby', { limit: 500 })).length).toBe(before);
    await page.screenshot({ path: join(SHOTS, 'composer-over-limit.png') });
    // Shortened to the limit exactly: sent, and the counter's colour is back to normal.
    await input.fill('z'.repeat(MAX_CHARS));
    expect(await counter.getAttribute('data-over')).toBe('false');
    expect(await counter.evaluate((el) => getComputedStyle(el).color)).not.toBe(overColor);
    await input.press('Enter');
    await expect.poll(() => input.inputValue(), POLL).toBe('');
    await expect.poll(async () => (await app.gateway.messages('lobby', { limit: 500 })).some((e) => e.text === 'z'.repeat(MAX_CHARS)), POLL).toBe(true);
    expect(await counter.isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('drives the @ picker from the keyboard: arrows move, Enter inserts, Escape closes and returns to the input', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Lobby');
    const picker = page.locator('#picker');
    const focused = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.handle ?? document.activeElement?.id ?? null);
    await page.locator('#picker-btn').click();
    await expect.poll(() => picker.isVisible(), POLL).toBe(true);
    expect(await focused()).toBe('analyst');
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('writer');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('analyst'); // wraps around
    await page.keyboard.press('ArrowUp');
    expect(await focused()).toBe('critic');
    expect(await picker.locator('.pick.active').getAttribute('data-handle')).toBe('critic');
    await page.screenshot({ path: join(SHOTS, 'picker-keyboard.png') });
    await page.keyboard.press('Enter');
    expect(await page.locator('#input').inputValue()).toBe('@critic ');
    expect(await picker.isHidden()).toBe(true);
    expect(await focused()).toBe('input');
    // Escape closes without inserting and puts the caret back in the input.
    await page.locator('#picker-btn').click();
    await expect.poll(() => picker.isVisible(), POLL).toBe(true);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Escape');
    expect(await picker.isHidden()).toBe(true);
    expect(await focused()).toBe('input');
    expect(await page.locator('#input').inputValue()).toBe('@critic ');
    expect(await page.locator('#picker-btn').getAttribute('aria-expanded')).toBe('false');
    expect(errors).toEqual([]);
  });

  it('in the demo, "hello everyone" gets an agent reply, not only passes', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Lobby');
    const replies = page.locator('.msg.agent:not(.streaming)');
    const before = await replies.count();
    await send(page, 'hello everyone');
    await expect.poll(() => replies.count(), POLL).toBeGreaterThan(before);
    const reply = replies.last();
    expect(await reply.getAttribute('data-agent-id')).toBe('analyst');
    expect(await reply.locator('.text').textContent()).toContain('hello everyone');
    // The others pass quietly, on one line.
    const folded = page.locator('#messages > .msg.decision-round').last();
    await expect.poll(() => folded.getAttribute('data-count').catch(() => null), POLL).toBe('2');
    expect(await folded.locator('.round-summary').textContent()).toBe('· Writer, Critic passed');
    await page.screenshot({ path: join(SHOTS, 'demo-first-hello.png') });
    expect(errors).toEqual([]);
  });
});
