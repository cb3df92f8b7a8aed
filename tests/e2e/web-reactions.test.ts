/**
 * The reaction bar, in real Chromium against the real app: two browsers on one group react to a
 * person's message and to an agent's reply and each sees the other's reactions live, with counts,
 * names and its own ones pressed; taking one back and reloading show the same; a reaction never
 * changes the text of a message never edited; the notes the agents get about reactions are never
 * drawn and never count as unread; history loaded later shows its reactions; the picker works from
 * the keyboard; refusals show under the message; axe-core finds nothing critical or serious in
 * light and dark, picker open too.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-reactions');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#b45309" }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000, reactions_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer], config: { reply_strategy: mention_only } }
  - { channel: web, chat_id: side, title: Side room, participants: [analyst, writer], config: { reply_strategy: mention_only } }
  - { channel: web, chat_id: archive, title: Archive, participants: [analyst, writer], config: { reply_strategy: mention_only } }
`;
}

async function axeSerious(page: Page): Promise<Array<{ id: string; impact: string | null; where: string[] }>> {
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    type Result = { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> };
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<Result> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.map((n) => `${n.target.join(' ')} ${(n.failureSummary ?? '').slice(0, 200)}`) }));
  });
  return found.filter((v) => v.impact === 'critical' || v.impact === 'serious');
}

suite('reactions on the web page, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;
  const llm = new FakeLlm({ replies: { analyst: (req) => (req.mustReply ? 'The plan is ready.' : '[PASS]') } });

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-reactions-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  interface Reader {
    context: BrowserContext;
    page: Page;
    errors: string[];
  }

  async function open(name: string, group = 'lobby', colorScheme: 'light' | 'dark' = 'light'): Promise<Reader> {
    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme }), name);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${app.webUrl}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { context, page, errors };
  }

  async function send(page: Page, text: string): Promise<void> {
    await page.locator('#input').fill(text);
    await page.locator('#send').click();
    await page.locator('.msg.human.own', { hasText: text }).waitFor();
  }

  const human = (page: Page, text: string): Locator => page.locator('.msg.human', { hasText: text });
  const chip = (msg: Locator, emoji: string): Locator => msg.locator(`.reactions .reaction[data-emoji="${emoji}"]`);

  /** What a message's reactions show: emoji → [count, pressed, tooltip (who)]. */
  async function bar(msg: Locator): Promise<Record<string, [string, string | null, string | null]>> {
    return msg.locator('.reactions .reaction').evaluateAll((els) =>
      Object.fromEntries(els.map((b) => [b.getAttribute('data-emoji'), [b.querySelector('.reaction-count')?.textContent ?? '', b.getAttribute('aria-pressed'), b.getAttribute('title')]])));
  }

  /** Pick `emoji` in the picker of `msg` with the mouse. */
  async function pick(page: Page, msg: Locator, emoji: string): Promise<void> {
    await msg.hover();
    await msg.locator('.meta .react-add').click();
    await page.locator(`.emoji-picker .emoji-pick[data-emoji="${emoji}"]`).click();
    await expect.poll(() => page.locator('.emoji-picker').count(), POLL).toBe(0);
  }

  it('two browsers see each other\'s reactions live, with counts, names and their own pressed; taking one back and reloading show the same', async () => {
    const maya = await open('Maya');
    const sam = await open('Sam');
    await send(sam.page, 'tea at four, never edited');
    await send(maya.page, '@analyst what is the plan?');
    const reply = maya.page.locator('.msg.agent', { hasText: 'The plan is ready.' });
    await reply.waitFor();
    await sam.page.locator('.msg.agent', { hasText: 'The plan is ready.' }).waitFor();
    const tea = { maya: human(maya.page, 'tea at four'), sam: human(sam.page, 'tea at four') };
    const turnsBefore = llm.calls.length;
    const textOf = (m: Locator) => m.locator('.bubble > .text').textContent();

    // Maya reacts 👍 to Sam's message and 🎉 to the agent's reply.
    await pick(maya.page, tea.maya, '👍');
    await pick(maya.page, reply, '🎉');
    await expect.poll(() => bar(tea.maya), POLL).toEqual({ '👍': ['1', 'true', 'You reacted with 👍'] });
    await expect.poll(() => bar(reply), POLL).toEqual({ '🎉': ['1', 'true', 'You reacted with 🎉'] });
    const samReply = sam.page.locator('.msg.agent', { hasText: 'The plan is ready.' });
    await expect.poll(() => bar(tea.sam), POLL).toEqual({ '👍': ['1', 'false', 'Maya reacted with 👍'] });
    await expect.poll(() => bar(samReply), POLL).toEqual({ '🎉': ['1', 'false', 'Maya reacted with 🎉'] });
    // Its accessible name says what it shows, then who.
    expect(await chip(tea.sam, '👍').getAttribute('aria-label')).toBe('👍 1: Maya reacted with 👍');
    // The reaction's edited event carries no text: the message keeps it, in both browsers.
    expect(await textOf(tea.sam)).toContain('tea at four, never edited');
    expect(await textOf(tea.maya)).toContain('tea at four, never edited');
    expect(await textOf(samReply)).toContain('The plan is ready.');

    // Sam adds 👍 too, by clicking Maya's: 2 in both.
    await chip(tea.sam, '👍').click();
    await expect.poll(() => bar(tea.sam), POLL).toEqual({ '👍': ['2', 'true', 'You and Maya reacted with 👍'] });
    await expect.poll(() => bar(tea.maya), POLL).toEqual({ '👍': ['2', 'true', 'You and Sam reacted with 👍'] });
    // An agent reacting shows by its name.
    const teaId = await tea.maya.getAttribute('data-entry-id');
    await app.gateway.react('lobby', teaId!, { emoji: '👍', by: { key: 'agent:analyst', name: 'Analyst' }, on: true });
    await expect.poll(() => bar(tea.sam), POLL).toEqual({ '👍': ['3', 'true', 'You, Maya and Analyst reacted with 👍'] });
    await app.gateway.react('lobby', teaId!, { emoji: '👍', by: { key: 'agent:analyst', name: 'Analyst' }, on: false });
    await expect.poll(() => bar(tea.maya), POLL).toEqual({ '👍': ['2', 'true', 'You and Sam reacted with 👍'] });

    // Maya takes hers back: 1, and hers no longer pressed.
    await chip(tea.maya, '👍').click();
    await expect.poll(() => bar(tea.maya), POLL).toEqual({ '👍': ['1', 'false', 'Sam reacted with 👍'] });
    await expect.poll(() => bar(tea.sam), POLL).toEqual({ '👍': ['1', 'true', 'You reacted with 👍'] });
    expect(await textOf(tea.sam)).toContain('tea at four, never edited');

    // A reload shows the same.
    await maya.page.reload();
    await maya.page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => bar(human(maya.page, 'tea at four')), POLL).toEqual({ '👍': ['1', 'false', 'Sam reacted with 👍'] });
    await expect.poll(() => bar(maya.page.locator('.msg.agent', { hasText: 'The plan is ready.' })), POLL).toEqual({ '🎉': ['1', 'true', 'You reacted with 🎉'] });
    expect(await textOf(human(maya.page, 'tea at four'))).toContain('tea at four, never edited');

    // The notes for the agents are in the history, and no page draws them.
    const { messages } = (await (await fetch(`${app.webUrl}/api/groups/lobby/messages?limit=100`)).json()) as { messages: Array<{ reactionOf?: unknown }> };
    expect(messages.filter((m) => m.reactionOf).length).toBeGreaterThanOrEqual(3);
    for (const p of [maya.page, sam.page]) {
      expect(await p.locator('.msg', { hasText: 'reacted' }).count()).toBe(0);
      expect(await p.locator('.msg.system').count()).toBe(0);
    }
    // No reaction started a round: the model was not called again.
    const calls = llm.calls.map((c) => `${c.purpose} ${c.mustReply} ${c.agent?.id}: ${c.messages.map((m) => m.content.slice(0, 120)).join(' | ')}`);
    expect(calls.slice(turnsBefore)).toEqual([]);
    expect([...maya.errors, ...sam.errors]).toEqual([]);
    await maya.context.close();
    await sam.context.close();
  }, 90_000);

  it('a reaction in another group counts as no unread message and changes no preview', async () => {
    const maya = await open('Maya', 'side');
    const sam = await open('Sam', 'lobby');
    await send(maya.page, 'side question, pinned');
    const item = sam.page.locator('.group-item[data-group-id="side"]');
    await expect.poll(() => item.locator('.badge').textContent(), POLL).toBe('1');
    // Sam opens the side room and leaves again: nothing unread there.
    await item.click();
    await human(sam.page, 'side question').waitFor();
    await sam.page.locator('.group-item[data-group-id="lobby"]').click();
    await expect.poll(() => item.locator('.badge').count(), POLL).toBe(0);
    await pick(maya.page, human(maya.page, 'side question'), '👀');
    await expect.poll(async () => (await bar(human(maya.page, 'side question')))['👀']?.[0], POLL).toBe('1');
    // One more message: the count goes to 1, not 2 (the note was never counted), and the preview is the message.
    await send(maya.page, 'second side line');
    await expect.poll(() => item.locator('.badge').textContent(), POLL).toBe('1');
    expect(await item.locator('.group-preview').textContent()).toBe('Maya: second side line');
    await sam.page.waitForTimeout(300);
    expect(await item.locator('.badge').textContent()).toBe('1');
    expect([...maya.errors, ...sam.errors]).toEqual([]);
    await maya.context.close();
    await sam.context.close();
  }, 60_000);

  it('history loaded later shows its reactions', async () => {
    const post = (text: string) => fetch(`${app.webUrl}/api/groups/archive/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-chorus-client': 'history-writer-key-0001' }, body: JSON.stringify({ text, author_name: 'Omar' }),
    });
    expect((await post('the very first line of the archive')).status).toBeLessThan(300);
    const first = (await (await fetch(`${app.webUrl}/api/groups/archive/messages?limit=5`)).json()) as { messages: Array<{ id: string }> };
    const firstId = first.messages[0]!.id;
    const r = await fetch(`${app.webUrl}/api/groups/archive/messages/${encodeURIComponent(firstId)}/reactions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-chorus-client': 'history-writer-key-0001' }, body: JSON.stringify({ emoji: '🚀', author_name: 'Omar' }),
    });
    expect(r.status).toBe(200);
    for (let i = 0; i < 60; i++) expect((await post(`archive line ${i}`)).status).toBeLessThan(300);
    const dana = await open('Dana', 'archive');
    await human(dana.page, 'archive line 59').waitFor();
    expect(await human(dana.page, 'the very first line').count()).toBe(0);
    // Scrolling to the top loads the page before.
    await dana.page.locator('#feed').evaluate((el) => (el.scrollTop = 0));
    const old = human(dana.page, 'the very first line of the archive');
    await old.waitFor();
    await expect.poll(() => bar(old), POLL).toEqual({ '🚀': ['1', 'false', 'Omar reacted with 🚀'] });
    expect(dana.errors).toEqual([]);
    await dana.context.close();
  }, 60_000);

  it('the picker works from the keyboard; a reaction toggles with the keyboard and keeps the focus; refusals show under the message; axe finds nothing serious', async () => {
    const maya = await open('Maya');
    const page = maya.page;
    await send(page, 'keyboard line for reactions');
    const msg = human(page, 'keyboard line for reactions');
    const add = msg.locator('.meta .react-add');
    await add.focus();
    await page.keyboard.press('Enter');
    const picker = page.locator('.emoji-picker');
    await picker.waitFor();
    expect(await add.getAttribute('aria-expanded')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-emoji'))).toBe('👍');
    // Escape closes it and gives the focus back.
    await page.keyboard.press('Escape');
    await expect.poll(() => picker.count(), POLL).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.classList.contains('react-add'))).toBe(true);
    expect(await add.getAttribute('aria-expanded')).toBe('false');
    // Arrows move in the grid: → → ↓ is the ninth (👀); Enter picks it, and the focus comes back.
    await page.keyboard.press('Enter');
    await picker.waitFor();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-emoji'))).toBe('👀');
    await page.keyboard.press('Enter');
    await expect.poll(() => bar(msg), POLL).toEqual({ '👀': ['1', 'true', 'You reacted with 👀'] });
    expect(await page.evaluate(() => document.activeElement?.classList.contains('react-add'))).toBe(true);
    // Any emoji, typed: Tab goes to the field; something that is not one emoji is refused there.
    await page.keyboard.press('Enter');
    await picker.waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('emoji-field'))).toBe(true);
    await page.keyboard.type('ok');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.emoji-error').textContent(), POLL).toContain('one emoji');
    await page.locator('.emoji-field').fill('🦄');
    await page.keyboard.press('Enter');
    await expect.poll(async () => Object.keys(await bar(msg)), POLL).toEqual(['👀', '🦄']);

    // Light: nothing serious with reactions shown and with the picker open.
    expect(await axeSerious(page)).toEqual([]);
    await msg.locator('.reactions .react-add').click();
    await picker.waitFor();
    expect(await axeSerious(page)).toEqual([]);
    await page.keyboard.press('Escape');

    // Space on a pressed reaction takes it back, and the focus stays in the bar.
    await chip(msg, '🦄').focus();
    await page.keyboard.press('Space');
    await expect.poll(async () => Object.keys(await bar(msg)), POLL).toEqual(['👀']);
    expect(await page.evaluate(() => document.activeElement?.closest('.reactions') !== null)).toBe(true);
    await chip(msg, '👀').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => msg.locator('.reactions').count(), POLL).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.classList.contains('react-add'))).toBe(true);

    // Refusals: too fast (with the time to wait), too many emoji.
    let answer: { status: number; body: unknown } = { status: 429, body: { error: { code: 'rate_limited', message: 'you are reacting faster than 30 times a minute; please wait a moment', retryAfterSeconds: 7 } } };
    await page.route('**/reactions', (route) => route.fulfill({ status: answer.status, contentType: 'application/json', headers: { 'retry-after': '7' }, body: JSON.stringify(answer.body) }));
    await pick(page, msg, '🔥');
    await expect.poll(() => msg.locator('.reaction-note').textContent(), POLL).toMatch(/try again in [67] s/);
    answer = { status: 409, body: { error: { code: 'too_many_reactions', message: 'a message takes at most 20 different emoji' } } };
    await pick(page, msg, '💯');
    await expect.poll(() => msg.locator('.reaction-note').textContent(), POLL).toContain('at most 20 different emoji');
    await page.unroute('**/reactions');
    expect(await msg.locator('.reactions').count()).toBe(0);

    // Dark, with reactions from someone else and one's own, picker open.
    await pick(page, msg, '✅');
    const dark = await open('Dana', 'lobby', 'dark');
    const theirs = human(dark.page, 'keyboard line for reactions');
    await expect.poll(() => bar(theirs), POLL).toEqual({ '✅': ['1', 'false', 'Maya reacted with ✅'] });
    await chip(theirs, '✅').click();
    await expect.poll(async () => (await bar(theirs))['✅']?.[1], POLL).toBe('true');
    expect(await axeSerious(dark.page)).toEqual([]);
    await theirs.locator('.reactions .react-add').click();
    await dark.page.locator('.emoji-picker').waitFor();
    expect(await axeSerious(dark.page)).toEqual([]);
    await dark.page.screenshot({ path: join(process.cwd(), 'test-output', 'screenshots', 'reactions-dark.png') });
    await page.screenshot({ path: join(process.cwd(), 'test-output', 'screenshots', 'reactions-light.png') });
    expect([...maya.errors, ...dark.errors]).toEqual([]);
    await dark.context.close();
    await maya.context.close();
  }, 90_000);
});
