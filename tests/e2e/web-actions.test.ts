/**
 * In real Chromium against the real app: command answers and refusals shown
 * to the asker alone (never stored, not in a second page, once), and the message actions —
 * reply (with its "replying to" chip), ask again, regenerate, mute/unmute from the member list —
 * by mouse, by keyboard and on a phone-size screen. Screenshots go to test-output/screenshots.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS } from './browser.js';

const suite = browserSuite('web-actions');
const RATE = 4;

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#16a34a" }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: ${RATE} }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer] }
  - { channel: web, chat_id: fast, title: Fast, participants: [analyst] }
  - { channel: web, chat_id: replies, title: Replies, participants: [analyst, writer] }
  - { channel: web, chat_id: regen, title: Regen, participants: [analyst, writer] }
  - { channel: web, chat_id: members, title: Members, participants: [analyst, writer] }
  - { channel: web, chat_id: keys, title: Keys, participants: [analyst, writer] }
  - { channel: web, chat_id: phone, title: Phone, participants: [analyst, writer] }
  - { channel: web, chat_id: stop, title: Stop, participants: [analyst, writer] }
`;
}

/** What the turn asked the agent (the part of the prompt after "## Your turn"). */
function askedIn(req: LlmRequest): string {
  const user = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  return user.split('## Your turn')[1] ?? '';
}

suite('web page: ephemeral answers and message actions', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  let writerN = 0;
  const contexts: BrowserContext[] = [];
  const llm = new FakeLlm({
    latencyMs: 150,
    replies: {
      writer: async (req) => {
        if (!req.mustReply) return '[PASS]';
        // A long answer, for the Stop button: it waits until its call is cancelled.
        if (req.messages.at(-1)!.content.includes('write a very long essay')) {
          await new Promise((resolve) => {
            const timer = setTimeout(resolve, 20_000);
            req.signal?.addEventListener('abort', () => {
              clearTimeout(timer);
              resolve(undefined);
            });
          });
          return 'This essay should never be shown.';
        }
        return `Writer answer number ${++writerN}.`;
      },
      analyst: (req) => (req.mustReply ? 'Analyst here.' : '[PASS]'),
    },
  });

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-actions-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
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

  async function openPage(group: string, opts: { phone?: boolean; name?: string; dark?: boolean } = {}): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({
      viewport: opts.phone ? { width: 390, height: 844 } : { width: 1280, height: 800 },
      hasTouch: opts.phone ?? false,
      isMobile: opts.phone ?? false,
      colorScheme: opts.dark ? 'dark' : 'light',
      deviceScaleFactor: 1,
    });
    contexts.push(context);
    if (opts.name) await context.addInitScript((n) => localStorage.setItem('chorus.name', n), opts.name);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('dialog', (d) => {
      errors.push('unexpected dialog: ' + d.message());
      void d.dismiss();
    });
    await page.goto(`${base}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), POLL).toBe('live');
    return { page, errors };
  }

  async function send(page: Page, text: string): Promise<void> {
    const input = page.locator('#input');
    await input.fill(text);
    await input.press('Enter');
    await expect.poll(() => input.inputValue(), POLL).toBe('');
  }

  const stored = async (group: string): Promise<TranscriptEntry[]> =>
    ((await (await fetch(`${base}/api/groups/${group}/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;
  const agentMsgs = (page: Page, agent: string) => page.locator(`.msg.agent[data-agent-id="${agent}"]:not(.streaming)`);

  /** Open the "⋯" menu of a message with the mouse (hover first, as a reader would). */
  async function openMenu(page: Page, msg: ReturnType<Page['locator']>): Promise<void> {
    await msg.hover();
    await msg.locator('.actions-btn').click();
    await msg.locator('.msg-menu').waitFor();
  }

  it('/help is answered to the asker alone: not stored, not in a second page, dismissible', async () => {
    const a = await openPage('lobby', { name: 'Maya' });
    const b = await openPage('lobby', { name: 'Tom' });
    await a.page.screenshot({ path: join(SHOTS, 'actions-help-before.png') });
    await send(a.page, '/help');
    const local = a.page.locator('.msg.local');
    await expect.poll(() => local.count(), POLL).toBe(1);
    expect(await local.locator('.text').textContent()).toContain('Chorus commands');
    expect(await local.locator('.local-label').textContent()).toBe('Only you can see this');
    expect(await local.locator('.local-asked').textContent()).toBe('/help');
    await a.page.screenshot({ path: join(SHOTS, 'actions-help-after.png') });
    // Something everyone sees, sent after: once it is in the second page, /help would be too.
    await send(a.page, 'after the help');
    await expect.poll(() => b.page.locator('.msg.human .text', { hasText: 'after the help' }).count(), POLL).toBe(1);
    expect(await b.page.locator('.msg.local').count()).toBe(0);
    expect(await b.page.locator('#messages').textContent()).not.toContain('Chorus commands');
    const all = await stored('lobby');
    expect(all.some((e) => e.text.includes('/help') || e.text.includes('Chorus commands'))).toBe(false);
    // It is shown once, and goes when dismissed (or on reload: it was never stored).
    expect(await a.page.locator('.msg.local').count()).toBe(1);
    await local.locator('.local-dismiss').click();
    expect(await a.page.locator('.msg.local').count()).toBe(0);
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
  });

  it('a refusal says when to try again, appears once, keeps the text in the box, and is stored nowhere', async () => {
    for (let i = 1; i <= RATE; i++) {
      const res = await fetch(`${base}/api/groups/fast/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: `filler ${i}`, author_name: 'Maya' }) });
      expect(res.status).toBe(202);
    }
    const { page, errors } = await openPage('fast', { name: 'Maya' });
    const other = await openPage('fast', { name: 'Tom' });
    const input = page.locator('#input');
    await input.fill('one message too many');
    await input.press('Enter');
    const refusal = page.locator('.msg.local.local-refusal');
    await expect.poll(() => refusal.count(), POLL).toBe(1);
    // What is seen ticks down; screen readers get the sentence once (the feed is a live region).
    const text = (await refusal.locator('.text > [aria-hidden="true"]').textContent()) ?? '';
    expect(await refusal.locator('.text > .sr-only').textContent()).toMatch(/try again in \d+ s\./);
    expect(text).toMatch(/faster than 4 a minute; try again in \d+ s\./);
    const seconds = Number(/try again in (\d+) s/.exec(text)![1]);
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
    expect(await input.inputValue()).toBe('one message too many');
    expect(await page.locator('#composer-error').isHidden()).toBe(true);
    // The shown wait counts down.
    const shown = async () => Number(/try again in (\d+) s/.exec((await refusal.locator('.retry-wait').textContent()) ?? '')?.[1] ?? NaN);
    await expect.poll(shown, POLL).toBeLessThan(seconds);
    await page.screenshot({ path: join(SHOTS, 'actions-refusal.png') });
    // Trying again while still refused replaces the line instead of adding one.
    await input.press('Enter');
    await expect.poll(async () => (await refusal.locator('.text').textContent()) ?? '', POLL).toMatch(/try again in/);
    expect(await refusal.count()).toBe(1);
    expect(await other.page.locator('.msg.local').count()).toBe(0);
    const all = await stored('fast');
    expect(all.some((e) => e.text.includes('faster than') || e.text.includes('one message too many'))).toBe(false);
    expect(errors).toEqual([]);
  });

  it('reply: the chip shows and cancels; the message carries reply_to and addresses the agent', async () => {
    const { page, errors } = await openPage('replies', { name: 'Maya' });
    await send(page, '@writer first question');
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBe(1);
    const first = agentMsgs(page, 'writer').first();
    const firstId = await first.getAttribute('data-entry-id');
    await openMenu(page, first);
    await page.screenshot({ path: join(SHOTS, 'actions-menu-open.png') });
    expect(await first.locator('.msg-menu [role="menuitem"]').allTextContents()).toEqual(['Reply to Writer', 'Ask Writer again', 'Regenerate this reply']);
    await first.locator('[data-action="reply"]').click();
    const chip = page.locator('#reply-chip');
    await expect.poll(() => chip.isVisible(), POLL).toBe(true);
    expect(await chip.textContent()).toContain('Replying to Writer');
    // Cancel, then reply again: nothing is sent with a cancelled reply.
    await chip.locator('.reply-cancel').click();
    expect(await chip.isHidden()).toBe(true);
    await openMenu(page, first);
    await first.locator('[data-action="reply"]').click();
    await page.locator('#input').fill('and what about the second part');
    await page.screenshot({ path: join(SHOTS, 'actions-reply-chip.png') });
    const request = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/api/groups/replies/messages'));
    await page.locator('#input').press('Enter');
    expect((await request).postDataJSON().reply_to).toBe(firstId);
    // mention_only: without reply_to nobody would answer this message.
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBe(2);
    expect(await chip.isHidden()).toBe(true);
    const lastTurn = llm.callsFor('writer').at(-1)!;
    expect(lastTurn.mustReply).toBe(true);
    expect(lastTurn.messages.at(-1)!.content).toContain('and what about the second part');
    const human = (await stored('replies')).filter((e) => e.kind === 'human').at(-1)!;
    expect(human.text).toBe('and what about the second part');
    expect(human.replyTo).toBe(firstId);
    // The reply shows what it answers; a click brings that message into view.
    const ref = page.locator('.msg.human', { hasText: 'and what about the second part' }).locator('.reply-ref');
    expect(await ref.textContent()).toMatch(/^↩ Writer: Writer answer number \d+\.$/);
    await page.screenshot({ path: join(SHOTS, 'actions-reply-answered.png') });
    expect(errors).toEqual([]);
  });

  it('regenerate shows another answer in the first answer’s bubble and keeps the first; ask again answers the same question', async () => {
    const { page, errors } = await openPage('regen', { name: 'Maya' });
    await send(page, '@writer tell me a story about lighthouses');
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBe(1);
    const first = agentMsgs(page, 'writer').first();
    const firstText = await first.locator('.text').textContent();
    await page.screenshot({ path: join(SHOTS, 'actions-regenerate-before.png') });
    await openMenu(page, first);
    await first.locator('[data-action="regenerate"]').click();
    // The new answer takes the first one's bubble (‹ 2/2 ›); the first is one click away.
    await expect.poll(() => page.locator('.msg.agent[data-agent-id="writer"] .alt-count').textContent(), POLL).toBe('2/2');
    expect(await agentMsgs(page, 'writer').count()).toBe(1);
    const second = agentMsgs(page, 'writer').first();
    expect(await second.locator('.regen-tag').textContent()).toContain('another answer');
    expect(askedIn(llm.callsFor('writer').at(-1)!)).toContain('tell me a story about lighthouses');
    await page.screenshot({ path: join(SHOTS, 'actions-regenerate-after.png') });
    await second.locator('.alt-prev').click();
    expect(await agentMsgs(page, 'writer').first().locator('.text').textContent()).toBe(firstText);
    expect(await agentMsgs(page, 'writer').first().locator('.regen-tag').count()).toBe(0);
    await agentMsgs(page, 'writer').first().locator('.alt-next').click();
    // A later, unrelated message; "ask again" still asks about the story.
    await send(page, '@analyst something else entirely');
    await expect.poll(() => agentMsgs(page, 'analyst').count(), POLL).toBe(1);
    const calls = llm.callsFor('writer').length;
    await openMenu(page, second);
    await second.locator('[data-action="ask-again"]').click();
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBe(2);
    const asked = askedIn(llm.callsFor('writer')[calls]!);
    expect(asked).toContain('tell me a story about lighthouses');
    expect(asked).not.toContain('something else entirely');
    const all = await stored('regen');
    expect(all.filter((e) => e.agentId === 'writer').map((e) => e.meta?.regenerates ?? null)).toEqual([null, all.find((e) => e.agentId === 'writer')!.id, null]);
    expect(all.some((e) => e.text.startsWith('/ask'))).toBe(false);
    expect(await page.locator('.msg.local').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('mute and unmute from the member list, muting after an in-page confirm', async () => {
    const { page, errors } = await openPage('members', { name: 'Maya' });
    await page.locator('#panel-toggle').click();
    const row = page.locator('.member[data-agent-id="writer"]');
    await row.locator('.mute').click();
    await expect.poll(() => row.locator('.confirm-mute-box').isVisible(), POLL).toBe(true);
    expect(await row.locator('.confirm-question').textContent()).toBe('Mute Writer? It will answer only when @mentioned.');
    await page.screenshot({ path: join(SHOTS, 'actions-mute-confirm.png') });
    // Escape (focus is on Cancel) leaves the agent as it was.
    await page.keyboard.press('Escape');
    expect(await row.locator('.confirm-mute-box').count()).toBe(0);
    expect(app.gateway.getGroup('members')!.members.find((m) => m.agentId === 'writer')!.muted).toBe(false);
    await row.locator('.mute').click();
    await row.locator('.confirm-mute').click();
    await expect.poll(() => row.locator('.member-note').textContent(), POLL).toContain('muted');
    expect(await row.locator('.unmute').textContent()).toBe('Unmute');
    expect(app.gateway.getGroup('members')!.members.find((m) => m.agentId === 'writer')!.muted).toBe(true);
    await expect.poll(() => page.locator('.msg.system .text', { hasText: 'Writer is muted' }).count(), POLL).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'actions-muted.png') });
    await row.locator('.unmute').click();
    await expect.poll(() => row.locator('.mute:not(.unmute)').count(), POLL).toBe(1);
    expect(app.gateway.getGroup('members')!.members.find((m) => m.agentId === 'writer')!.muted).toBe(false);
    await expect.poll(() => page.locator('.msg.system .text', { hasText: 'Writer is unmuted' }).count(), POLL).toBe(1);
    expect(errors).toEqual([]);
  });

  it('the action menu works from the keyboard alone', async () => {
    const { page, errors } = await openPage('keys', { name: 'Maya' });
    await send(page, '@writer keyboard question');
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBe(1);
    const msg = agentMsgs(page, 'writer').first();
    // Shift+Tab from the composer reaches the newest message's actions button.
    await page.locator('#picker-btn').focus();
    await page.keyboard.press('Shift+Tab');
    const focused = () => page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      return el ? `${el.className}|${el.dataset.action ?? ''}|${el.getAttribute('aria-expanded') ?? ''}` : '';
    });
    expect(await focused()).toMatch(/^actions-btn\|\|false$/);
    expect(await msg.locator('.actions-btn').evaluate((el) => getComputedStyle(el).opacity)).toBe('1');
    await page.keyboard.press('Enter');
    expect(await focused()).toMatch(/menu-item\|reply\|/);
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toMatch(/\|ask-again\|/);
    await page.keyboard.press('End');
    expect(await focused()).toMatch(/\|regenerate\|/);
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toMatch(/\|reply\|/);
    await page.screenshot({ path: join(SHOTS, 'actions-keyboard-menu.png') });
    await page.keyboard.press('Escape');
    expect(await msg.locator('.msg-menu').count()).toBe(0);
    expect(await focused()).toMatch(/^actions-btn\|\|false$/);
    // ↓ on the button opens the menu too; Enter on Reply puts the chip in the composer.
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    expect(await page.locator('#reply-chip').isVisible()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    await page.keyboard.press('Escape');
    expect(await page.locator('#reply-chip').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('Stop shows while an agent is writing and ends its turn; the message stays', async () => {
    const { page, errors } = await openPage('stop', { name: 'Maya' });
    const stop = page.locator('#stop-round');
    expect(await stop.isHidden()).toBe(true);
    await send(page, '@writer write a very long essay');
    await expect.poll(() => page.locator('#typing').textContent(), POLL).toContain('Writer is typing');
    await expect.poll(() => stop.isVisible(), POLL).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'actions-stop-before.png') });
    await stop.click();
    await expect.poll(() => page.locator('.msg', { hasText: 'Maya' }).filter({ hasText: /stopped/i }).count(), POLL).toBeGreaterThan(0);
    await expect.poll(() => stop.isHidden(), POLL).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'actions-stop-after.png') });
    const all = await stored('stop');
    expect(all.some((e) => e.text === '@writer write a very long essay')).toBe(true);
    expect(all.some((e) => e.text.includes('This essay should never be shown'))).toBe(false);
    expect(errors).toEqual([]);
  });

  it('dark theme: the menu, a line for this reader only and the reply chip (screenshot)', async () => {
    const { page, errors } = await openPage('lobby', { dark: true, name: 'Maya' });
    await send(page, '/group list');
    await expect.poll(() => page.locator('.msg.local').count(), POLL).toBe(1);
    await send(page, '@writer a question in the dark');
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBeGreaterThan(0);
    const msg = agentMsgs(page, 'writer').last();
    await openMenu(page, msg);
    await msg.locator('[data-action="reply"]').click();
    await openMenu(page, msg);
    expect(await page.locator('#reply-chip').isVisible()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'actions-dark.png') });
    expect(errors).toEqual([]);
  });

  it('phone size (390×844): the actions are shown without hover, tappable, inside the screen', async () => {
    const { page, errors } = await openPage('phone', { phone: true, name: 'Maya' });
    await send(page, '@writer hello from a phone');
    await expect.poll(() => agentMsgs(page, 'writer').count(), POLL).toBe(1);
    const msg = agentMsgs(page, 'writer').first();
    const btn = msg.locator('.actions-btn');
    expect(Number(await btn.evaluate((el) => getComputedStyle(el).opacity))).toBeGreaterThan(0.5);
    const box = (await btn.boundingBox())!;
    expect(box.width).toBeGreaterThanOrEqual(40);
    expect(box.height).toBeGreaterThanOrEqual(40);
    await page.screenshot({ path: join(SHOTS, 'actions-phone-before.png') });
    await btn.tap();
    const menu = msg.locator('.msg-menu');
    await menu.waitFor();
    const m = (await menu.boundingBox())!;
    expect(m.x).toBeGreaterThanOrEqual(0);
    expect(m.x + m.width).toBeLessThanOrEqual(390);
    for (const item of await menu.locator('[role="menuitem"]').all()) expect((await item.boundingBox())!.height).toBeGreaterThanOrEqual(40);
    await page.screenshot({ path: join(SHOTS, 'actions-phone-menu.png') });
    await menu.locator('[data-action="regenerate"]').tap();
    await expect.poll(() => msg.locator('.alt-count').textContent(), POLL).toBe('2/2');
    expect(await agentMsgs(page, 'writer').count()).toBe(1);
    // The switch is finger-sized too.
    expect((await msg.locator('.alt-prev').boundingBox())!.height).toBeGreaterThanOrEqual(40);
    await btn.tap();
    await menu.locator('[data-action="reply"]').tap();
    expect(await page.locator('#reply-chip').isVisible()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'actions-phone-after.png') });
    await page.locator('#reply-chip .reply-cancel').tap();
    expect(await page.locator('#reply-chip').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });
});
