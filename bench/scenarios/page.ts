/**
 * The web page while a long reply streams: the real app, the OpenAI-compatible fake streaming a
 * 20 KB Markdown answer (headings, lists, code, tables, quotes) in 4-character chunks every 5 ms,
 * and the page in headless Chromium. The figure is the longest main-thread task the page ran
 * meanwhile (a `longtask` PerformanceObserver): what a reader feels as the page freezing. Before
 * the page rendered settled blocks once and only the open tail again, one task took over a minute.
 *
 * Skipped (null) when there is no Chromium at CHROMIUM_PATH (default /usr/bin/chromium).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { createApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { startFakeOpenAi } from '../../tests/fakes/openai/index.js';
import { silentLogger } from '../../tests/helpers/logger.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const HAVE_CHROMIUM = existsSync(CHROMIUM);

/** About 20 KB of Markdown with everything a long answer has. */
export function longMarkdown(): string {
  const parts: string[] = ['# Quarterly report', '', 'An overview of **every** team, with numbers and *some* code.', ''];
  for (let i = 1; parts.join('\n').length < 20_000; i++) {
    parts.push(
      `## Section ${i}: results`,
      '',
      `Revenue in region ${i} grew by ${i}.${i}% while costs stayed flat; see the table and the script below.`,
      '',
      `- first point of section ${i}`,
      `- second point, with \`inline code\` and a [link](https://example.com/${i})`,
      '',
      '```ts',
      `function total${i}(rows: number[]): number {`,
      '  let sum = 0;',
      '  for (const r of rows) sum += r;',
      '  return sum;',
      '}',
      '```',
      '',
      '| Region | Q1 | Q2 |',
      '| --- | ---: | ---: |',
      `| North | ${i * 10} | ${i * 11} |`,
      '',
      `> A note on section ${i}: numbers are preliminary.`,
      '',
    );
  }
  parts.push('That is all.');
  return parts.join('\n');
}

export interface PageStreamingResult {
  longestTaskMs: number;
  longTasks: number;
  streamMs: number;
}

/** One streamed 20 KB reply watched by one page. */
export async function pageStreamingRun(): Promise<PageStreamingResult | null> {
  if (!HAVE_CHROMIUM) return null;
  // The page bundle, as `npm run build` makes it, into the cache the server reads from src/.
  const builder = createRequire(import.meta.url)('../../scripts/build-page.cjs') as { cachedPage(dir: string): string };
  builder.cachedPage(join(import.meta.dirname, '..', '..', 'src', 'channels', 'web', 'public'));
  const text = longMarkdown();
  const fake = await startFakeOpenAi({ reply: () => ({ text, chunks: text.match(/[\s\S]{1,4}/g)!, chunkDelayMs: 5 }) });
  const dataDir = mkdtempSync(join(tmpdir(), 'chorus-bench-page-'));
  const { config } = parseConfigText(
    `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: openai, base_url: "${fake.url}", model: long-model, max_tokens: 4096, max_retries: 0, context_tokens: 32768 }
agents:
  - { id: writer, name: Writer, persona: "You are Writer." }
group_defaults: { cooldown_seconds: 0 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: long, title: Long, participants: [writer] }
`,
    'bench',
  );
  const app = await createApp({ config, logger: silentLogger });
  await app.start();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    await context.addInitScript(() => localStorage.setItem('chorus.name', 'Bench'));
    const page = await context.newPage();
    await page.goto(`${app.webUrl}/#/g/long`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 30_000 });
    await page.evaluate(() => {
      const w = window as unknown as { longest: number; tasks: number };
      w.longest = 0;
      w.tasks = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          w.longest = Math.max(w.longest, e.duration);
          w.tasks++;
        }
      }).observe({ type: 'longtask' });
    });
    const t0 = performance.now();
    await page.locator('#input').fill('@writer the full report, please');
    await page.locator('#input').press('Enter');
    await page.locator('.msg.agent[data-agent-id="writer"]:not(.streaming)').waitFor({ timeout: 600_000 });
    const streamMs = performance.now() - t0;
    const { longest, tasks } = await page.evaluate(() => {
      const w = window as unknown as { longest: number; tasks: number };
      return { longest: w.longest, tasks: w.tasks };
    });
    return { longestTaskMs: longest, longTasks: tasks, streamMs };
  } finally {
    await browser.close();
    await app.stop();
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
