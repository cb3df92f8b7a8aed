/**
 * Streaming replies on the web page, in real Chromium (playwright-core + Debian's chromium)
 * against the real app and the OpenAI-compatible fake (the real `openai` client, real SSE):
 * - a 20 KB Markdown reply streamed in 4-character chunks every 5 ms streams into the page and
 *   ends rendered as the recorded reply (how long it holds the main thread is measured in the bench);
 * - a reload while an agent writes shows the reply from its first word, with the typing line and
 *   the Stop button, and it goes on streaming;
 * - Stop keeps what was written: the bubble closes at once into a recorded reply marked stopped,
 *   still there after a reload and in the API's messages;
 * - an agent that only considers a voluntary turn (and passes) shows as considering, never as typing.
 *
 * Without a Chromium binary the tests are skipped with the reason printed, unless
 * CHORUS_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { startFakeOpenAi, type FakeOpenAiServer, type OpenAiLoggedRequest } from '../fakes/openai/index.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, SHOTS, LAUNCH_ARGS, POLL } from './browser.js';

const suite = browserSuite('web-streaming');

/** About 20 KB of Markdown with everything a long answer has: headings, lists, code, tables, quotes. */
function longMarkdown(): string {
  const parts: string[] = ['# Quarterly report', '', 'An overview of **every** team, with numbers and *some* code.', ''];
  for (let i = 1; parts.join('\n').length < 20_000; i++) {
    parts.push(
      `## Section ${i}: results`,
      '',
      `Revenue in region ${i} grew by ${i}.${i}% while costs stayed flat; see the table and the script below. @writer can check it.`,
      '',
      `- first point of section ${i}`,
      `- second point, with \`inline code\` and a [link](https://example.com/${i})`,
      '- third point',
      '',
      '1. step one',
      '2. step two',
      '',
      '```ts',
      `function total${i}(rows: number[]): number {`,
      '  let sum = 0;',
      '',
      '  for (const r of rows) sum += r;',
      '  return sum;',
      '}',
      '```',
      '',
      '| Region | Q1 | Q2 |',
      '| --- | ---: | ---: |',
      `| North | ${i * 10} | ${i * 11} |`,
      `| South | ${i * 7} | ${i * 8} |`,
      '',
      `> A note on section ${i}: numbers are preliminary.`,
      '',
    );
  }
  parts.push('That is all.');
  return parts.join('\n');
}

const LONG = longMarkdown();
/** 4 characters per chunk, as a fast local model streams. */
const LONG_CHUNKS = LONG.match(/[\s\S]{1,4}/g)!;
/** A slow reply: word by word, long enough to reload and stop in the middle of it. */
const SLOW_WORDS = Array.from({ length: 400 }, (_, i) => `word${i + 1} `);

function configYaml(dataDir: string, fakeUrl: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: openai, base_url: "${fakeUrl}", model: pass-model, max_tokens: 4096, max_retries: 0, context_tokens: 32768 }
agents:
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#16a34a", model: long-model }
  - { id: slowpoke, name: Slowpoke, persona: "You are Slowpoke.", avatar: "🐢", color: "#2563eb", model: slow-model }
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", model: pass-model }
  - { id: critic, name: Critic, persona: "You are Critic.", avatar: "🧐", model: pass-model }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: long, title: Long, participants: [writer] }
  - { channel: web, chat_id: slow, title: Slow, participants: [slowpoke] }
  - { channel: web, chat_id: quiet, title: Quiet, participants: [analyst, critic] }
`;
}

suite('streaming replies in Chromium', () => {
  let browser: Browser;
  let fake: FakeOpenAiServer;
  let app: App;
  let base: string;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-streaming-'));
    fake = await startFakeOpenAi({
      reply: (req: OpenAiLoggedRequest) => {
        const model = req.body['model'];
        if (model === 'long-model') return { text: LONG, chunks: LONG_CHUNKS, chunkDelayMs: 5 };
        if (model === 'slow-model') return { text: SLOW_WORDS.join(''), chunks: SLOW_WORDS, chunkDelayMs: 60 };
        // Voluntary turns think a moment, then pass: long enough for a typing line to show.
        return { text: '[PASS]', delayMs: 400 };
      },
    });
    const { config } = parseConfigText(configYaml(dataDir, fake.url), 'test');
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
    await fake?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function openPage(group: string): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    contexts.push(context);
    await context.addInitScript(() => localStorage.setItem('chorus.name', 'Maya'));
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/#/g/${group}`);
    await waitLive(page);
    return { page, errors };
  }

  async function waitLive(page: Page): Promise<void> {
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), POLL).toBe('live');
  }

  async function send(page: Page, text: string): Promise<void> {
    const input = page.locator('#input');
    await input.fill(text);
    await input.press('Enter');
    await expect.poll(() => input.inputValue(), POLL).toBe('');
  }

  const stored = async (group: string): Promise<TranscriptEntry[]> =>
    ((await (await fetch(`${base}/api/groups/${group}/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;

  const finalReplies = (page: Page, agent: string) => page.locator(`.msg.agent[data-agent-id="${agent}"]:not(.streaming)`);

  it('a 20 KB Markdown reply in 4-character chunks every 5 ms streams into the page and ends as the recorded reply', async () => {
    expect(LONG.length).toBeGreaterThanOrEqual(20_000);
    const { page, errors } = await openPage('long');
    // How long the page's main thread is held meanwhile is a figure of `npm run bench`
    // (page_longest_task_ms_streaming), where a busy machine cannot fail a test with it.
    await send(page, '@writer the full report, please');
    await expect.poll(() => page.locator('.msg.streaming[data-agent-id="writer"]').count(), POLL).toBe(1);
    await expect.poll(() => finalReplies(page, 'writer').count(), { timeout: 240_000, interval: 250 }).toBe(1);
    // What streamed is what was recorded, rendered the same way.
    const last = finalReplies(page, 'writer').last();
    expect(await last.locator('.text h2').count()).toBeGreaterThan(10);
    expect(await last.locator('.text table').count()).toBeGreaterThan(10);
    expect(await page.locator('.msg.streaming').count()).toBe(0);
    const entry = (await stored('long')).filter((e) => e.kind === 'agent').at(-1)!;
    expect(entry.text).toBe(LONG);
    expect(errors).toEqual([]);
  }, 300_000);

  const bubble = (page: Page) => page.locator('.msg.streaming[data-agent-id="slowpoke"]');
  const bubbleText = async (page: Page) => ((await bubble(page).locator('.text').textContent()) ?? '').replace(/\s+/g, ' ').trim();
  /** The last word of the slow reply shown, as a number (word17 → 17). */
  const lastWord = async (page: Page) => Number(/word(\d+)$/.exec(await bubbleText(page))?.[1] ?? 0);

  it('a reload mid-reply shows it from its first word, with the typing line and Stop, and it goes on', async () => {
    const { page, errors } = await openPage('slow');
    await send(page, 'tell me a long story');
    await expect.poll(() => lastWord(page), POLL).toBeGreaterThanOrEqual(20);
    await page.reload();
    await waitLive(page);
    // Straight after the reload, before another word could make up for a gap: the reply so far.
    await expect.poll(() => bubble(page).count(), POLL).toBe(1);
    const after = await bubbleText(page);
    expect(after.startsWith('word1 word2 word3 ')).toBe(true);
    const n = Number(/word(\d+)$/.exec(after)![1]);
    expect(after).toBe(SLOW_WORDS.slice(0, n).join('').trim());
    expect(await page.locator('#typing').textContent()).toContain('Slowpoke is typing');
    expect(await page.locator('#stop-round').isVisible()).toBe(true);
    // It goes on streaming, every word in its place.
    await expect.poll(() => lastWord(page), POLL).toBeGreaterThan(n + 10);
    const later = await bubbleText(page);
    expect(later).toBe(SLOW_WORDS.slice(0, Number(/word(\d+)$/.exec(later)![1])).join('').trim());
    await page.screenshot({ path: join(SHOTS, 'streaming-after-reload.png') });
    await fetch(`${base}/api/groups/slow/stop`, { method: 'POST' });
    await expect.poll(() => bubble(page).count(), POLL).toBe(0);
    expect(errors).toEqual([]);
  }, 60_000);

  it('Stop keeps what was written: the bubble closes at once into a reply marked stopped, kept on reload and in the API', async () => {
    await app.router.idle();
    const { page, errors } = await openPage('slow');
    await send(page, 'another long story, please');
    await expect.poll(() => lastWord(page), POLL).toBeGreaterThanOrEqual(15);
    const stop = page.locator('#stop-round');
    expect(await stop.isVisible()).toBe(true);
    const shown = await bubbleText(page);
    await stop.click();
    // At once: well before the grace a reply without a message gets (10 s).
    await expect.poll(() => bubble(page).count(), { timeout: 3_000, interval: 25 }).toBe(0);
    const reply = finalReplies(page, 'slowpoke').last();
    await expect.poll(() => reply.locator('.stopped-tag').count(), { timeout: 3_000, interval: 25 }).toBe(1);
    const text = ((await reply.locator('.text').textContent()) ?? '').replace(/\s+/g, ' ').trim();
    expect(text.startsWith(shown)).toBe(true);
    expect(text.endsWith('…')).toBe(true);
    await expect.poll(() => stop.isHidden(), POLL).toBe(true);
    await expect.poll(() => page.locator('#typing').textContent(), POLL).toBe('');
    await page.screenshot({ path: join(SHOTS, 'streaming-stopped.png') });

    // Recorded: in the API's messages, marked stopped, just before the stop notice.
    const all = await stored('slow');
    const kept = all.filter((e) => e.kind === 'agent' && e.agentId === 'slowpoke').at(-1)!;
    expect(kept.meta?.cut).toBe('stopped');
    expect(kept.text.startsWith('word1 word2 ')).toBe(true);
    expect(kept.text.endsWith('…')).toBe(true);
    expect(kept.text.replace(/\s+/g, ' ').startsWith(shown)).toBe(true);
    const notice = all.find((e) => e.seq > kept.seq && e.decision?.type === 'stopped');
    expect(notice?.text).toMatch(/^⏹ Stopped by /);
    expect(all.filter((e) => e.seq > kept.seq && e.seq < notice!.seq)).toEqual([]);

    // Still there after a reload, with nothing left streaming.
    await page.reload();
    await waitLive(page);
    const again = page.locator(`.msg.agent[data-entry-id="${kept.id}"]`);
    await expect.poll(() => again.locator('.stopped-tag').count(), POLL).toBe(1);
    expect(await bubble(page).count()).toBe(0);
    expect(await page.locator('#stop-round').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  }, 60_000);

  it('agents that only consider a voluntary turn and pass show as considering, never as typing', async () => {
    const { page, errors } = await openPage('quiet');
    // Every text the typing line ever shows is kept: a flash between two polls counts too.
    await page.evaluate(() => {
      const el = document.getElementById('typing')!;
      const seen: string[] = ((window as unknown as { typingSeen: string[] }).typingSeen = []);
      new MutationObserver(() => seen.push(el.textContent ?? '')).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await send(page, 'anyone around?');
    // Both agents thought it over (the fake takes 400 ms each) and passed: one folded line.
    const round = page.locator('.msg.decision-round');
    await expect.poll(() => round.getAttribute('data-count').catch(() => null), POLL).toBe('2');
    expect(await round.locator('.round-summary').textContent()).toMatch(/Analyst, Critic passed|Critic, Analyst passed/);
    await app.router.idle();
    const seen = await page.evaluate(() => (window as unknown as { typingSeen: string[] }).typingSeen);
    expect(seen.filter((t) => t.includes('typing'))).toEqual([]);
    // While they thought it over the line said so, and it ended quietly with their passes.
    expect(seen.some((t) => /^(Analyst|Critic)( and (Analyst|Critic))? (is|are) considering…$/.test(t))).toBe(true);
    await expect.poll(() => page.locator('#typing').textContent(), POLL).toBe('');
    expect(await page.locator('#stop-round').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });
});
