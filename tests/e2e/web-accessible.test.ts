/**
 * Readable colours and a page that works on a phone, in real Chromium (playwright-core +
 * Debian's chromium) against the real app with the offline scripted provider:
 * - agent colours used as text reach 4.5:1 against their background, in light and dark themes,
 *   even for configured colours that do not (green on white, navy on the dark theme);
 * - at phone size (390×844) every visible button and group row is at least 40 px;
 * - the demo banner is small on a phone and can be dismissed for good; the sidebar closes after
 *   navigating and after creating a group; the connection status is on screen;
 * - removing a member asks in the page first;
 * - unread counts survive a reload; reopening a group marks where the news starts.
 *
 * Without a Chromium binary the tests are skipped with the reason printed, unless
 * CHORUS_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, SHOTS, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-accessible');

const PHONE = { width: 390, height: 844 };

/** Configured colours, some of which are unreadable as text on one theme or the other. */
const COLORS = { analyst: '#2563eb', writer: '#16a34a', critic: '#ca8a04', night: '#1e3a8a', pale: '#e5e7eb' } as const;

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "${COLORS.analyst}" }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "${COLORS.writer}" }
  - { id: critic, name: Critic, persona: "You are Critic.", color: "${COLORS.critic}" }
  - { id: night, name: Night, persona: "You are Night.", color: "${COLORS.night}" }
  - { id: pale, name: Pale, persona: "You are Pale.", color: "${COLORS.pale}" }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer, critic], config: { reply_strategy: mention_only } }
  - { channel: web, chat_id: notes, title: Notes, participants: [analyst], config: { reply_strategy: mention_only } }
  - { channel: web, chat_id: crew, title: Crew, participants: [analyst, writer], config: { reply_strategy: mention_only } }
`;
}

const AGENTS = [
  ['analyst', 'Analyst'],
  ['writer', 'Writer'],
  ['critic', 'Critic'],
  ['night', 'Night'],
  ['pale', 'Pale'],
] as const;

/** A group where every agent has spoken once, mentioning the others, one of them with code. */
function writeHistory(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'palette', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const participants = AGENTS.map(([id]) => id);
  const head = { id: 'palette', title: 'Palette', channel: 'web', chatId: 'palette', participants, config: { reply_strategy: 'mention_only' }, createdAt: 0, state };
  const now = Date.now() - 60_000;
  const entries: Record<string, unknown>[] = [
    { id: 'palette.1', seq: 1, kind: 'human', ts: now, authorId: 'web:maya', authorName: 'Maya', text: 'colours, everyone', platformMessageId: 'h1' },
  ];
  AGENTS.forEach(([agentId, name], k) => {
    const others = AGENTS.filter(([id]) => id !== agentId).map(([id]) => '@' + id).join(' ');
    const text = k === 0 ? 'Numbers:\n\n```\n  indented\n```' : `Hello ${others}`;
    entries.push({ id: `palette.${k + 2}`, seq: k + 2, kind: 'agent', ts: now + k + 1, authorId: `agent:${agentId}`, authorName: name, agentId, text });
  });
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head }), JSON.stringify({ v: 1, n: 2, ts: 0, entries })];
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

/**
 * A group with one of everything the feed draws: people and agents, a reply, a table, coloured
 * code, a long folded reply, a system line and the decision lines (hidden by default).
 */
function writeShowcase(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'showcase', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const head = { id: 'showcase', title: 'Showcase', channel: 'web', chatId: 'showcase', participants: ['analyst', 'writer', 'critic'], config: { reply_strategy: 'mention_only' }, createdAt: 0, state };
  const now = Date.now() - 60_000;
  const agent = (seq: number, agentId: string, name: string, text: string, extra: Record<string, unknown> = {}) =>
    ({ id: `showcase.${seq}`, seq, kind: 'agent', ts: now + seq, authorId: `agent:${agentId}`, authorName: name, agentId, text, ...extra });
  const meta = { model: 'scripted', usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0 }, latencyMs: 500, costUsd: null, depth: 0, reason: 'addressed' };
  const entries: Record<string, unknown>[] = [
    { id: 'showcase.1', seq: 1, kind: 'human', ts: now, authorId: 'web:maya', authorName: 'Maya', text: '@analyst the numbers, as a table please', platformMessageId: 'h1' },
    agent(2, 'analyst', 'Analyst', '| Quarter | Revenue |\n|---|---|\n| Q1 | 1.2 M |\n| Q2 | 1.4 M |', { meta }),
    { id: 'showcase.3', seq: 3, kind: 'human', ts: now + 3, authorId: 'telegram:7', authorName: 'Ravi', text: 'and the script?', platformMessageId: 'h3', replyTo: 'showcase.2' },
    agent(4, 'writer', 'Writer', '```python\ndef total(items):\n    # every price, once\n    return sum(i.price for i in items)\n```'),
    agent(5, 'critic', 'Critic', Array.from({ length: 60 }, (_, i) => `Point ${i + 1}: a long review line that goes on for a while.`).join('\n\n')),
    { id: 'showcase.6', seq: 6, kind: 'system', ts: now + 6, authorId: 'system', authorName: 'Chorus', text: 'Critic joined the group.' },
    { id: 'showcase.7', seq: 7, kind: 'decision', ts: now + 7, authorId: 'system', authorName: 'Chorus', text: '', decision: { type: 'cooldown', agentId: 'writer' }, hiddenFromAgents: true },
  ];
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head }), JSON.stringify({ v: 1, n: 2, ts: 0, entries })];
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  nodes: number;
  where: string[];
}

/** axe-core's violations on the page as it is now (WCAG 2.0-2.2 A/AA and best practices). */
async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated rather than added as a <script>: the page's CSP allows no inline scripts.
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[]; failureSummary?: string }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, where: v.nodes.slice(0, 4).map((n) => `${n.target.join(' ')} — ${(n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 160)}`) }));
  });
}

/** WCAG 2 contrast of two '#rrggbb' colours, to show the configured colours really fail. */
function contrast(a: string, b: string): number {
  const lum = (hex: string) => {
    const n = parseInt(hex.slice(1), 16);
    const lin = (c: number) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
    return 0.2126 * lin((n >> 16) & 255) + 0.7152 * lin((n >> 8) & 255) + 0.0722 * lin(n & 255);
  };
  return (Math.max(lum(a), lum(b)) + 0.05) / (Math.min(lum(a), lum(b)) + 0.05);
}

suite('accessible, phone-friendly and catching up, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-a11y-'));
    writeHistory(dataDir);
    writeShowcase(dataDir);
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

  async function newContext(opts: { dark?: boolean; phone?: boolean } = {}): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: opts.phone ? PHONE : { width: 1280, height: 800 }, colorScheme: opts.dark ? 'dark' : 'light', deviceScaleFactor: 1 });
    contexts.push(context);
    return withName(context, 'Tester');
  }

  async function openPage(opts: { dark?: boolean; phone?: boolean; url?: string; context?: BrowserContext } = {}): Promise<{ page: Page; errors: string[] }> {
    const context = opts.context ?? (await newContext(opts));
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('dialog', (d) => {
      errors.push('native dialog: ' + d.message());
      void d.dismiss();
    });
    await page.goto(opts.url ?? base + '/');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { page, errors };
  }

  async function reload(page: Page): Promise<void> {
    await page.reload();
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
  }

  async function openGroup(page: Page, title: string): Promise<void> {
    await page.locator('.group-item', { hasText: title }).click();
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe(title);
  }

  async function post(groupId: string, text: string): Promise<void> {
    const res = await fetch(`${base}/api/groups/${groupId}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text, author_name: 'Maya' }),
    });
    expect(res.status).toBe(202);
  }

  /** Contrast of every element matching `selector` against the first opaque background behind it. */
  function contrasts(page: Page, selector: string): Promise<{ text: string; color: string; ratio: number }[]> {
    return page.locator(selector).evaluateAll((els) => {
      const rgb = (s: string) => (s.match(/[\d.]+/g) || []).map(Number);
      const lum = ([r = 0, g = 0, b = 0]: number[]) => {
        const lin = (c: number) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
      };
      return els.map((el) => {
        const color = getComputedStyle(el).color;
        let node: Element | null = el;
        let bg = 'rgb(255, 255, 255)';
        while (node) {
          const c = getComputedStyle(node).backgroundColor;
          const parts = rgb(c);
          if (parts.length >= 3 && (parts.length === 3 || parts[3] === 1)) {
            bg = c;
            break;
          }
          node = node.parentElement;
        }
        const a = lum(rgb(color));
        const b = lum(rgb(bg));
        return { text: el.textContent || '', color, ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
      });
    });
  }

  it('shows agent names and mentions at 4.5:1 or better in light and dark themes', async () => {
    // The configured colours really fail as text: green and yellow on white, navy on the dark theme.
    expect(contrast(COLORS.writer, '#ffffff')).toBeLessThan(4.5);
    expect(contrast(COLORS.critic, '#ffffff')).toBeLessThan(4.5);
    expect(contrast(COLORS.night, '#171b23')).toBeLessThan(4.5);
    expect(contrast(COLORS.pale, '#ffffff')).toBeLessThan(4.5);
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage({ dark: scheme === 'dark', url: base + '/#/g/palette' });
      await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Palette');
      await expect.poll(() => page.locator('.msg.agent .author').count(), POLL).toBe(AGENTS.length);
      const names = await contrasts(page, '.msg.agent .author');
      expect(names.map((n) => n.text).sort()).toEqual(AGENTS.map(([, name]) => name).sort());
      for (const n of names) expect(n.ratio, `${n.text} in ${scheme}: ${n.color}`).toBeGreaterThanOrEqual(4.5);
      const mentions = await contrasts(page, '.msg.agent .mention');
      expect(mentions.length).toBeGreaterThanOrEqual(AGENTS.length);
      for (const m of mentions) expect(m.ratio, `${m.text} in ${scheme}: ${m.color}`).toBeGreaterThanOrEqual(4.5);
      // A colour that is readable keeps its hue: Analyst's blue is used as configured on white.
      if (scheme === 'light') expect(names.find((n) => n.text === 'Analyst')?.color).toBe('rgb(37, 99, 235)');
      await page.screenshot({ path: join(SHOTS, `a11y-contrast-${scheme}.png`) });
      expect(errors).toEqual([]);
    }
  });

  /** Every visible button (and group row) on the page that is smaller than 40 px. */
  function smallTargets(page: Page): Promise<string[]> {
    return page.evaluate(() => {
      const out: string[] = [];
      for (const el of Array.from(document.querySelectorAll('button, .group-item'))) {
        if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: false })) continue;
        const r = el.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        if (r.height < 40 || r.width < 40) out.push(`${el.id || el.className} "${(el.textContent || '').trim().slice(0, 20)}" ${Math.round(r.width)}×${Math.round(r.height)}`);
      }
      return out;
    });
  }

  it('has tap targets of at least 40 px at phone size, in the feed, sidebar, panel and dialog', async () => {
    const { page, errors } = await openPage({ phone: true, url: base + '/#/g/palette' });
    await expect.poll(() => page.locator('.msg.agent').count(), POLL).toBe(AGENTS.length);
    const counted = await page.locator('button').evaluateAll((els) => els.filter((e) => e.checkVisibility()).length);
    // Header, composer, banner, the code block's Copy: there is something to measure.
    expect(counted).toBeGreaterThanOrEqual(5);
    expect(await smallTargets(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'a11y-phone-feed-light.png') });

    await page.locator('#menu-toggle').click();
    await expect.poll(() => page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().left), POLL).toBeGreaterThanOrEqual(0);
    expect(await page.locator('.group-item').count()).toBeGreaterThanOrEqual(4);
    expect(await smallTargets(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'a11y-phone-sidebar-light.png') });
    await page.locator('#new-group').click();
    await page.locator('#create-dialog').waitFor();
    expect(await smallTargets(page)).toEqual([]);
    await page.locator('#create-cancel').click();
    // The sidebar covers most of the screen: tap the strip of scrim to its right.
    await page.locator('#scrim').click({ position: { x: PHONE.width - 15, y: PHONE.height / 2 } });

    await page.locator('#panel-toggle').click();
    await expect.poll(() => page.locator('#members .member').count(), POLL).toBe(AGENTS.length);
    expect(await smallTargets(page)).toEqual([]);
    await page.locator('#members .remove').first().click();
    await page.locator('#members .confirm-remove').waitFor();
    expect(await smallTargets(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'a11y-phone-panel-light.png') });
    await page.locator('#members .cancel-remove').click();
    expect(errors).toEqual([]);
  });

  it('on a phone: the banner is one short line and stays dismissed, status is on screen, the sidebar closes after navigating and creating', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage({ phone: true, dark: scheme === 'dark', url: base + '/#/g/lobby' });
      const banner = page.locator('#banner');
      expect(await banner.isVisible()).toBe(true);
      expect(await banner.textContent()).toContain('canned until an API key is configured');
      const bannerBox = (await banner.boundingBox())!;
      // One line (was 125 of 844 px): well under a tenth of the screen.
      expect(bannerBox.height).toBeLessThanOrEqual(PHONE.height / 14);
      // The connection status shows in the header, inside the screen, while the sidebar is away.
      const status = page.locator('#conn-phone');
      await expect.poll(() => status.textContent(), POLL).toBe('live');
      expect(await status.isVisible()).toBe(true);
      const box = (await status.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
      expect(await page.locator('#conn').evaluate((el) => el.getBoundingClientRect().right)).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SHOTS, `a11y-phone-banner-${scheme}.png`) });

      await page.locator('#banner-close').click();
      expect(await banner.isVisible()).toBe(false);
      await reload(page);
      expect(await banner.isVisible()).toBe(false);
      expect(await page.evaluate(() => localStorage.getItem('chorus.bannerDismissed'))).toBe('1');
      await page.screenshot({ path: join(SHOTS, `a11y-phone-dismissed-${scheme}.png`) });

      const sidebarRight = () => page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().right);
      await page.locator('#menu-toggle').click();
      await expect.poll(() => page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().left), POLL).toBeGreaterThanOrEqual(0);
      await page.locator('.group-item', { hasText: 'Notes' }).click();
      await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Notes');
      await expect.poll(sidebarRight, POLL).toBeLessThanOrEqual(0);
      expect(await page.locator('#scrim').isVisible()).toBe(false);

      await page.locator('#menu-toggle').click();
      await expect.poll(() => page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().left), POLL).toBeGreaterThanOrEqual(0);
      await page.locator('#new-group').click();
      const title = `Phone room ${scheme}`;
      await page.locator('#create-name').fill(title);
      await page.locator('#create-agents input[value="writer"]').check();
      await page.locator('#create-submit').click();
      await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe(title);
      await expect.poll(sidebarRight, POLL).toBeLessThanOrEqual(0);
      expect(await page.locator('#scrim').isVisible()).toBe(false);
      expect(await page.locator('#input').isVisible()).toBe(true);
      await page.screenshot({ path: join(SHOTS, `a11y-phone-created-${scheme}.png`) });
      expect(errors).toEqual([]);
    }
  }, 60_000);

  it('removes a member only after a confirm in the page; Cancel and Escape keep them', async () => {
    const { page, errors } = await openPage({ url: base + '/#/g/crew' });
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Crew');
    await page.locator('#panel-toggle').click();
    const writer = page.locator('#members .member[data-agent-id="writer"]');
    await writer.waitFor();
    const remove = writer.locator('.remove');
    expect((await remove.textContent())?.trim()).toBe('Remove');
    expect(await remove.getAttribute('aria-label')).toBe('Remove Writer');
    const participants = () => app.gateway.getGroup('crew')?.participants;

    await remove.click();
    await writer.locator('.confirm-remove').waitFor();
    expect(await writer.locator('.confirm-question').textContent()).toContain('Remove Writer');
    await page.screenshot({ path: join(SHOTS, 'a11y-remove-confirm-light.png') });
    await writer.locator('.cancel-remove').click();
    expect(await writer.locator('.confirm-remove').count()).toBe(0);
    expect(participants()).toEqual(['analyst', 'writer']);

    await remove.click();
    await writer.locator('.confirm-remove').waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => writer.locator('.confirm-remove').count(), POLL).toBe(0);
    expect(participants()).toEqual(['analyst', 'writer']);

    await remove.click();
    await writer.locator('.confirm-remove').click();
    await expect.poll(() => page.locator('#members .member').count(), POLL).toBe(1);
    expect(participants()).toEqual(['analyst']);
    expect(errors).toEqual([]);
  });

  it('keeps unread badges across a reload and clears them once the group is opened', async () => {
    const context = await newContext();
    const { page, errors } = await openPage({ context, url: base + '/#/g/notes' });
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Notes');
    // Lobby answers only @mentions: two posts there are exactly two unread messages.
    const badge = page.locator('.group-item[data-group-id="lobby"] .badge');
    expect(await badge.count()).toBe(0);
    await post('lobby', 'unread one');
    await post('lobby', 'unread two');
    await expect.poll(() => badge.textContent().catch(() => null), POLL).toBe('2');
    await reload(page);
    expect(await page.locator('#group-title').textContent()).toBe('Notes');
    expect(await badge.textContent()).toBe('2');
    expect(await page.title()).toBe('(2) Chorus');
    await page.screenshot({ path: join(SHOTS, 'a11y-unread-after-reload-light.png') });
    await openGroup(page, 'Lobby');
    await expect.poll(() => badge.count(), POLL).toBe(0);
    await reload(page);
    expect(await badge.count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('marks "new since you left" when a group is reopened, also after a reload', async () => {
    const context = await newContext();
    const { page, errors } = await openPage({ context, url: base + '/#/g/crew' });
    await post('lobby', 'before you left');
    await openGroup(page, 'Lobby');
    await expect.poll(() => page.locator('.msg.human .text', { hasText: 'before you left' }).count(), POLL).toBe(1);
    // Nothing is new on a group just read.
    expect(await page.locator('.new-since').count()).toBe(0);
    await openGroup(page, 'Crew');
    await post('lobby', 'while you were away 1');
    await post('lobby', 'while you were away 2');
    await expect.poll(() => page.locator('.group-item[data-group-id="lobby"] .badge').textContent().catch(() => null), POLL).toBe('2');
    await reload(page);
    await openGroup(page, 'Lobby');
    const divider = page.locator('#messages > .new-since');
    await expect.poll(() => divider.count(), POLL).toBe(1);
    // Right after the divider comes the first message posted while away; the old one is above it.
    const next = await divider.evaluate((el) => {
      let n = el.nextElementSibling;
      while (n && n.classList.contains('day-separator')) n = n.nextElementSibling;
      return n ? n.textContent : null;
    });
    expect(next).toContain('while you were away 1');
    const order = await page.locator('#messages > *').evaluateAll((els) => els.map((e) => (e.classList.contains('new-since') ? 'DIVIDER' : e.textContent || '')));
    const at = (s: string) => order.findIndex((t) => t.includes(s));
    expect(at('before you left')).toBeLessThan(at('DIVIDER'));
    expect(at('DIVIDER')).toBeLessThan(at('while you were away 2'));
    await page.screenshot({ path: join(SHOTS, 'a11y-new-since-light.png') });
    // The divider and date lines are list items of the feed's list, as axe-core checks.
    const listRules = (await axeViolations(page)).filter((v) => v.id.startsWith('list') || v.impact === 'critical' || v.impact === 'serious');
    expect(listRules).toEqual([]);
    // Read now: reopening shows no divider.
    await openGroup(page, 'Crew');
    await openGroup(page, 'Lobby');
    await expect.poll(() => page.locator('.msg.human .text', { hasText: 'while you were away 2' }).count(), POLL).toBe(1);
    expect(await divider.count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('has no critical or serious axe-core violations on desktop and phone, light and dark', async () => {
    const report: string[] = [];
    const found: Record<string, AxeViolation[]> = {};
    for (const view of [{ phone: false, dark: false }, { phone: false, dark: true }, { phone: true, dark: false }, { phone: true, dark: true }]) {
      const name = `${view.phone ? 'phone' : 'desktop'} ${view.dark ? 'dark' : 'light'}`;
      const { page, errors } = await openPage({ ...view, url: base + '/#/g/showcase' });
      await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Showcase');
      await expect.poll(() => page.locator('#messages > .msg').count(), POLL).toBeGreaterThanOrEqual(6);
      // Code colours arrive a moment later (their script loads on demand): check them too.
      await expect.poll(() => page.locator('#messages code.hljs').count(), POLL).toBe(1);
      const violations = await axeViolations(page);
      found[name] = violations;
      const count = (impact: string) => violations.filter((v) => v.impact === impact).reduce((n, v) => n + v.nodes, 0);
      report.push(`${name}: ${count('critical')} critical, ${count('serious')} serious, ${count('moderate')} moderate, ${count('minor')} minor`);
      await page.screenshot({ path: join(SHOTS, `a11y-axe-${name.replace(' ', '-')}.png`) });
      // The same with the panel open, and on a phone with the drawer open.
      await page.locator('#panel-toggle').click();
      await page.locator('#members .member').first().waitFor();
      found[`${name}, panel open`] = await axeViolations(page);
      await page.keyboard.press('Escape');
      if (view.phone) {
        await page.locator('#menu-toggle').click();
        await expect.poll(() => page.locator('#sidebar').evaluate((el) => el.getBoundingClientRect().left), POLL).toBeGreaterThanOrEqual(0);
        found[`${name}, drawer open`] = await axeViolations(page);
        await page.keyboard.press('Escape');
      }
      expect(errors).toEqual([]);
    }
    console.log('[axe] ' + report.join('; '));
    for (const [name, violations] of Object.entries(found)) {
      const bad = violations.filter((v) => v.impact === 'critical' || v.impact === 'serious');
      expect(bad, `${name}: ${JSON.stringify(bad, null, 2)}`).toEqual([]);
    }
  }, 90_000);

  it('Escape closes the panel and the drawer and gives focus back; a closed drawer has no tab stops', async () => {
    // Desktop: the panel.
    const desk = await openPage({ url: base + '/#/g/crew' });
    await expect.poll(() => desk.page.locator('#group-title').textContent(), POLL).toBe('Crew');
    await desk.page.locator('#panel-toggle').focus();
    await desk.page.keyboard.press('Enter');
    await desk.page.locator('#panel').waitFor();
    expect(await desk.page.evaluate(() => document.activeElement?.id)).toBe('panel-close');
    await desk.page.keyboard.press('Escape');
    await expect.poll(() => desk.page.locator('#panel').isVisible(), POLL).toBe(false);
    expect(await desk.page.evaluate(() => document.activeElement?.id)).toBe('panel-toggle');
    expect(await desk.page.locator('#panel-toggle').getAttribute('aria-expanded')).toBe('false');
    // The sidebar is not a drawer on a desktop: it stays reachable.
    expect(await desk.page.locator('#sidebar').evaluate((el) => (el as HTMLElement).inert)).toBe(false);
    expect(desk.errors).toEqual([]);

    // Phone: the drawer, then the panel.
    const { page, errors } = await openPage({ phone: true, url: base + '/#/g/crew' });
    await expect.poll(() => page.locator('#group-title').textContent(), POLL).toBe('Crew');
    const sidebar = page.locator('#sidebar');
    expect(await sidebar.evaluate((el) => (el as HTMLElement).inert)).toBe(true);
    // Tab through the whole page: focus never lands in the closed drawer.
    const stops: string[] = [];
    await page.locator('#menu-toggle').focus();
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const where = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        return el ? `${el.closest('#sidebar') ? 'SIDEBAR ' : ''}${el.id || el.className || el.tagName}` : 'none';
      });
      stops.push(where);
    }
    expect(stops.filter((s) => s.startsWith('SIDEBAR'))).toEqual([]);

    await page.locator('#menu-toggle').click();
    await expect.poll(() => sidebar.evaluate((el) => el.getBoundingClientRect().left), POLL).toBeGreaterThanOrEqual(0);
    expect(await sidebar.evaluate((el) => (el as HTMLElement).inert)).toBe(false);
    expect(await page.locator('#menu-toggle').getAttribute('aria-expanded')).toBe('true');
    // Focus moved into the drawer; Escape closes it and returns focus to the menu button.
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest('#sidebar')))).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => sidebar.evaluate((el) => el.getBoundingClientRect().right), POLL).toBeLessThanOrEqual(0);
    expect(await sidebar.evaluate((el) => (el as HTMLElement).inert)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('menu-toggle');

    // The phone's ⚙ button has a name, and Escape closes the full-screen panel it opens.
    expect(await page.locator('#panel-toggle').getAttribute('aria-label')).toBe('Members & settings');
    await page.locator('#panel-toggle').click();
    await page.locator('#panel').waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('#panel').isVisible(), POLL).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('panel-toggle');
    expect(errors).toEqual([]);
  });
});
