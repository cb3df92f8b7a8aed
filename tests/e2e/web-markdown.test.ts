/**
 * Markdown messages and a feed that follows the conversation, in real Chromium (playwright-core +
 * Debian's chromium) against the real app with the offline scripted provider:
 * - message text is Markdown (marked + DOMPurify bundled into the page's script): code blocks keep their
 *   indentation, scroll sideways and have a Copy button; bold and lists render; raw HTML and
 *   `javascript:` links stay inert under the page's strict CSP;
 * - the feed follows new entries while the reader is at the bottom (also while a multi-line draft
 *   makes the composer tall, and after sending it), shows "N new messages ↓" when scrolled up,
 *   separates days with a date line and shows the full date-time on hover.
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

const suite = browserSuite('web-markdown');

const AGENTS = ['analyst', 'writer', 'critic'];

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst, a numbers person.", avatar: "📈", color: "#2563eb" }
  - { id: writer, name: Writer, persona: "You are Writer, a careful writer.", avatar: "✍️", color: "#16a34a" }
  - { id: critic, name: Critic, persona: "You are Critic, a sharp critic.", avatar: "🧐", color: "#dc2626" }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer, critic] }
`;
}

/** A code block whose lines are indented by 4 and 8 spaces. */
const CODE = 'def greet(name):\n    if name:\n        return "hi " + name\n    return "hi"';
/** 2,000 lines, each far wider than the page. */
const WIDE_CODE = Array.from({ length: 2000 }, (_, i) => `line_${i} = "${'x'.repeat(300)}"`).join('\n');

/**
 * Groups written as stored history: "Code" holds agent replies with code blocks; "Days" holds 60
 * messages, the first 30 on 1 January 2025 and the rest on 2 January, all agents muted so that
 * live messages posted in the test get no replies (the count of new messages is then exact).
 */
function writeHistory(dataDir: string): void {
  const write = (id: string, title: string, muted: string[], entries: Record<string, unknown>[]) => {
    const dir = join(dataDir, 'groups', id, 'log');
    mkdirSync(dir, { recursive: true });
    const state = { muted, lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
    const head = { id, title, channel: 'web', chatId: id, participants: AGENTS, config: {}, createdAt: 0, state };
    const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head })];
    for (let i = 0; i < entries.length; i += 50) lines.push(JSON.stringify({ v: 1, n: lines.length + 1, ts: 0, entries: entries.slice(i, i + 50) }));
    writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
  };
  const t0 = Date.UTC(2025, 0, 1, 12);
  write('code', 'Code', [], [
    { id: 'code.1', seq: 1, kind: 'human', ts: t0, authorId: 'web:maya', authorName: 'Maya', text: '@writer show me', platformMessageId: 'h1' },
    { id: 'code.2', seq: 2, kind: 'agent', ts: t0 + 1000, authorId: 'agent:writer', authorName: 'Writer', agentId: 'writer', text: 'Here it is, @analyst:\n\n```python\n' + CODE + '\n```\n\nUse `greet("@critic")` to call it.' },
    { id: 'code.3', seq: 3, kind: 'agent', ts: t0 + 2000, authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', text: 'The long one:\n\n```\n' + WIDE_CODE + '\n```' },
  ]);
  const days: Record<string, unknown>[] = [];
  for (let i = 1; i <= 60; i++) {
    const ts = i <= 30 ? t0 + i * 60_000 : t0 + 86_400_000 + i * 60_000;
    days.push({ id: `days.${i}`, seq: i, kind: 'human', ts, authorId: 'web:maya', authorName: 'Maya', text: `old message ${i}\nwith a second line`, platformMessageId: `h${i}` });
  }
  write('days', 'Days', AGENTS, days);
}

suite('Markdown, following and catching up, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-md-'));
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

  async function openPage(): Promise<{ page: Page; errors: string[]; dialogs: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, timezoneId: 'UTC' });
    // A returning reader: the page asks a newcomer for a name before the first message.
    await withName(context);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    const dialogs: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(base + '/');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { page, errors, dialogs };
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

  async function post(groupId: string, text: string): Promise<void> {
    const res = await fetch(`${base}/api/groups/${groupId}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text, author_name: 'Ravi' }),
    });
    expect(res.status).toBe(202);
  }

  /** Pixels between the bottom of the feed's content and the bottom of its viewport, after layout. */
  function gapBelow(page: Page): Promise<number> {
    return page.locator('#feed').evaluate(
      (el) => new Promise<number>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(el.scrollHeight - el.scrollTop - el.clientHeight)))),
    );
  }

  it("bundles the two libraries into the page's script under the strict CSP", async () => {
    const html = await (await fetch(base + '/')).text();
    const script = /<script type="module" src="(\/app\.\w+\.js)"><\/script>/.exec(html)?.[1];
    expect(script).toBeDefined();
    const res = await fetch(base + script);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/javascript');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const text = await res.text();
    expect(text).toMatch(/marked v[\d.]+/);
    expect(text).toContain('DOMPurify');
    // No route reaches node_modules any more, whatever the path.
    for (const path of ['/vendor/marked.esm.js', '/vendor/purify.es.mjs', '/vendor/../package.json']) expect((await fetch(base + path)).status).toBe(404);
  });

  it('renders a fenced code block in a reply with its indentation, a Copy button, and mentions outside code only', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Code');
    const reply = page.locator('.msg.agent[data-agent-id="writer"]');
    const code = reply.locator('.text pre > code');
    await expect.poll(() => code.count(), POLL).toBe(1);
    expect(await code.textContent()).toBe(CODE + '\n');
    expect(await code.evaluate((el) => getComputedStyle(el).whiteSpace)).toBe('pre');
    expect(await code.evaluate((el) => getComputedStyle(el).fontFamily)).toMatch(/mono/i);
    // "@analyst" in the prose is highlighted; "@critic" inside inline code is not.
    expect(await reply.locator('.text .mention').allTextContents()).toEqual(['@analyst']);
    expect(await reply.locator('.text p code').textContent()).toBe('greet("@critic")');
    const copy = reply.locator('.code-block .copy-btn');
    expect(await copy.count()).toBe(1);
    await copy.click();
    await expect.poll(() => copy.textContent(), POLL).toBe('copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(CODE + '\n');
    await reply.screenshot({ path: join(SHOTS, 'markdown-code-block.png') });
    await page.emulateMedia({ colorScheme: 'dark' });
    await reply.screenshot({ path: join(SHOTS, 'markdown-code-block-dark.png') });
    expect(errors).toEqual([]);
  });

  it('scrolls a 2,000-line code block sideways instead of widening the page', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Code');
    const pre = page.locator('.msg.agent[data-agent-id="analyst"] .code-block pre');
    await expect.poll(() => pre.count(), POLL).toBe(1);
    const m = await pre.evaluate((el) => {
      const feed = document.getElementById('feed')!;
      const bubble = el.closest('.bubble')!;
      return {
        lines: el.textContent!.split('\n').filter(Boolean).length,
        preScroll: el.scrollWidth,
        preClient: el.clientWidth,
        overflowX: getComputedStyle(el).overflowX,
        feedScroll: feed.scrollWidth,
        feedClient: feed.clientWidth,
        pageScroll: document.documentElement.scrollWidth,
        pageClient: document.documentElement.clientWidth,
        bubbleRight: bubble.getBoundingClientRect().right,
        feedRight: feed.getBoundingClientRect().right,
      };
    });
    expect(m.lines).toBe(2000);
    expect(m.overflowX).toBe('auto');
    // The block is much wider than its box (it scrolls); the feed and the page are not.
    expect(m.preScroll).toBeGreaterThan(m.preClient * 2);
    expect(m.feedScroll).toBeLessThanOrEqual(m.feedClient);
    expect(m.pageScroll).toBeLessThanOrEqual(m.pageClient);
    expect(m.bubbleRight).toBeLessThanOrEqual(m.feedRight);
    await pre.evaluate((el) => (el.scrollLeft = 400));
    expect(await pre.evaluate((el) => el.scrollLeft)).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, 'markdown-wide-code.png') });
    expect(errors).toEqual([]);
  });

  it('renders bold, lists, tables and safe links, and keeps raw HTML and javascript: links inert', async () => {
    const { page, errors, dialogs } = await openPage();
    await openGroup(page, 'Lobby');
    await send(page, 'plan: **x** and _y_\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nsee https://example.com/docs');
    const msg = page.locator('.msg.human .text', { hasText: 'plan:' });
    await expect.poll(() => msg.count(), POLL).toBe(1);
    expect(await msg.locator('strong').textContent()).toBe('x');
    expect(await msg.locator('em').textContent()).toBe('y');
    expect(await msg.locator('li').allTextContents()).toEqual(['one', 'two']);
    expect(await msg.locator('table td').allTextContents()).toEqual(['1', '2']);
    const link = msg.locator('a');
    expect(await link.getAttribute('href')).toBe('https://example.com/docs');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer nofollow');
    expect(await link.getAttribute('target')).toBe('_blank');

    const evil = 'evil <img src=x onerror=alert(1)> [a](javascript:alert(2)) [b](data:text/html,<script>alert(3)</script>) <a href="javascript:alert(4)">c</a> ![d](https://example.com/x.png)';
    await send(page, evil);
    const bad = page.locator('.msg.human .text', { hasText: 'evil' });
    await expect.poll(() => bad.count(), POLL).toBe(1);
    // The raw HTML shows as the characters typed; the link words stay, the links do not.
    expect(await bad.textContent()).toContain('<img src=x onerror=alert(1)>');
    expect(await bad.textContent()).toContain('<a href="javascript:alert(4)">c</a>');
    expect(await page.locator('#messages img').count()).toBe(0);
    expect(await page.locator('#messages script').count()).toBe(0);
    expect(await page.locator('#messages [onerror]').count()).toBe(0);
    expect(await page.locator('#messages a[href^="javascript"], #messages a[href^="data"]').count()).toBe(0);
    expect(await bad.locator('a').count()).toBe(0);
    await page.waitForTimeout(300);
    expect(dialogs).toEqual([]);
    await page.locator('#feed').screenshot({ path: join(SHOTS, 'markdown-rich-and-inert.png') });
    expect(errors).toEqual([]);
  });

  it('separates days with a date line and shows the full date-time on hover', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Days');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'old message 60' }).count(), POLL).toBe(1);
    const seps = page.locator('#messages > .day-separator');
    // The newest 50 (messages 11-60) span both days: one line, right before message 31.
    expect(await seps.count()).toBe(1);
    expect(await seps.textContent()).toMatch(/2025/);
    expect(await seps.textContent()).toMatch(/January|2\b/);
    const next = await seps.evaluate((el) => el.nextElementSibling!.textContent);
    expect(next).toContain('old message 31');
    const time = page.locator('.msg.human', { hasText: 'old message 31' }).locator('time');
    expect(await time.getAttribute('title')).toMatch(/2025/);
    expect(await time.getAttribute('datetime')).toBe(new Date(Date.UTC(2025, 0, 1, 12) + 86_400_000 + 31 * 60_000).toISOString());
    await seps.scrollIntoViewIfNeeded();
    await page.locator('#feed').screenshot({ path: join(SHOTS, 'feed-day-separator.png') });
    // Loading the older page (messages 1-10, same day as 11-30) adds no line, at the top or elsewhere.
    await page.locator('#feed').evaluate((el) => (el.scrollTop = 0));
    await expect.poll(() => page.locator('#messages > .msg.human[data-seq="1"]').count(), POLL).toBe(1);
    expect(await seps.count()).toBe(1);
    expect(await seps.evaluate((el) => el.nextElementSibling!.textContent)).toContain('old message 31');
    expect(errors).toEqual([]);
  });

  it('follows new messages at the bottom, also with a tall multi-line draft and after sending it', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Days');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'old message 60' }).count(), POLL).toBe(1);
    await expect.poll(() => gapBelow(page), POLL).toBeLessThan(2);
    await post('days', 'live one');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'live one' }).count(), POLL).toBe(1);
    expect(await gapBelow(page)).toBeLessThan(2);
    // A draft of many lines makes the composer tall, and the feed shorter.
    const feedBefore = await page.locator('#feed').evaluate((el) => el.clientHeight);
    const draft = Array.from({ length: 9 }, (_, i) => `draft line ${i + 1}`).join('\n');
    await page.locator('#input').fill(draft);
    await expect.poll(() => page.locator('#feed').evaluate((el) => el.clientHeight), POLL).toBeLessThan(feedBefore - 100);
    await post('days', 'live two, while drafting');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'live two' }).count(), POLL).toBe(1);
    expect(await gapBelow(page)).toBeLessThan(2);
    // Sending shrinks the composer again; the sent message and the next one are in view.
    await page.locator('#input').press('Enter');
    await expect.poll(() => page.locator('#input').inputValue(), POLL).toBe('');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'draft line 9' }).count(), POLL).toBe(1);
    await post('days', 'live three, after sending');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'live three' }).count(), POLL).toBe(1);
    expect(await gapBelow(page)).toBeLessThan(2);
    expect(await page.locator('#new-messages').isVisible()).toBe(false);
    expect(errors).toEqual([]);
  });

  it('scrolled up, counts new messages on a "new messages ↓" button that goes down and clears', async () => {
    const { page, errors } = await openPage();
    await openGroup(page, 'Days');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'old message 60' }).count(), POLL).toBe(1);
    const feed = page.locator('#feed');
    // Up, but not so far that older history loads. The page's own follow-to-bottom frames after
    // loading pass first, and the page has seen the scroll (its handler runs before this one)
    // before anything is posted: on a busy machine a late frame would otherwise pull it down again.
    await feed.evaluate(async (el) => {
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const seen = new Promise((r) => el.addEventListener('scroll', r, { once: true }));
      el.scrollTop = el.scrollHeight / 2;
      await seen;
    });
    const top = await feed.evaluate((el) => el.scrollTop);
    const button = page.locator('#new-messages');
    for (const n of [1, 2, 3]) await post('days', `while away ${n}`);
    await expect.poll(() => page.locator('.msg.human', { hasText: 'while away 3' }).count(), POLL).toBe(1);
    await expect.poll(() => button.textContent(), POLL).toBe('3 new messages ↓');
    expect(await button.isVisible()).toBe(true);
    // The reader was not moved.
    expect(await feed.evaluate((el) => el.scrollTop)).toBe(top);
    expect(await gapBelow(page)).toBeGreaterThan(100);
    await page.screenshot({ path: join(SHOTS, 'feed-new-messages-button.png') });
    await button.click();
    await expect.poll(() => gapBelow(page), POLL).toBeLessThan(2);
    expect(await button.isVisible()).toBe(false);
    // Back at the bottom, the feed follows again.
    await post('days', 'after catching up');
    await expect.poll(() => page.locator('.msg.human', { hasText: 'after catching up' }).count(), POLL).toBe(1);
    expect(await gapBelow(page)).toBeLessThan(2);
    expect(await button.isVisible()).toBe(false);
    expect(errors).toEqual([]);
  });
});
