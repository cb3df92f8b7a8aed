/**
 * How much work the web page does to scroll a 10,000-message group back to its first message:
 * a real app over a log written straight into a temporary data directory, the page in headless
 * Chromium, scrolled to the top until nothing older is left. Prints the wall-clock time and the
 * browser's own counters (Performance.getMetrics over CDP: time spent in layout, style, script
 * and tasks), which a busy machine disturbs less than the wall clock.
 *
 *   npx tsx bench/web/scrollback.ts [messages]      (CHROMIUM_PATH, default /usr/bin/chromium)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { createApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { silentLogger } from '../../tests/helpers/logger.js';

const MESSAGES = Number(process.argv[2] ?? 10_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function writeArchive(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'archive', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head: { id: 'archive', title: 'Archive', channel: 'web', chatId: 'archive', participants: ['analyst'], config: {}, createdAt: 0, state } })];
  for (let r = 0; r < MESSAGES / 100; r++) {
    const entries = Array.from({ length: 100 }, (_, k) => {
      const seq = r * 100 + k + 1;
      return { id: `archive.${seq}`, seq, kind: 'human', ts: Date.UTC(2025, 0, 1) + seq * 60_000, authorId: 'web:maya', authorName: 'Maya', text: `archived message ${seq}`, platformMessageId: `a${seq}` };
    });
    lines.push(JSON.stringify({ v: 1, n: r + 2, ts: 0, entries }));
  }
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

const dataDir = mkdtempSync(join(tmpdir(), 'chorus-scrollback-'));
writeArchive(dataDir);
const { config } = parseConfigText(`
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
`, 'bench');
const app = await createApp({ config, logger: silentLogger });
await app.start();
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(() => localStorage.setItem('chorus.name', 'Bench'));
  const page = await context.newPage();
  await page.goto(`${app.webUrl}/#/g/archive`);
  await page.locator('body[data-ready="true"]').waitFor({ timeout: 30_000 });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const metrics = async () => Object.fromEntries(((await cdp.send('Performance.getMetrics')) as { metrics: Array<{ name: string; value: number }> }).metrics.map((m) => [m.name, m.value]));
  const trace = process.env.TRACE === '1';
  const events: Array<{ name: string; ph: string; dur?: number; tid: number }> = [];
  if (trace) {
    cdp.on('Tracing.dataCollected', (ev) => events.push(...(ev.value as unknown as typeof events)));
    await cdp.send('Tracing.start', { categories: 'devtools.timeline,blink,cc,disabled-by-default-devtools.timeline', transferMode: 'ReportEvents' });
  }
  const before = await metrics();
  const started = performance.now();
  const older = page.locator('#load-older');
  while (await older.isVisible()) {
    await page.locator('#feed').evaluate((el) => (el.scrollTop = 0));
    await sleep(20);
  }
  const count = await page.locator('#messages > li.msg').count();
  const wall = (performance.now() - started) / 1000;
  const after = await metrics();
  if (trace) {
    const done = new Promise((r) => cdp.once('Tracing.tracingComplete', r));
    await cdp.send('Tracing.end');
    await done;
    const by = new Map<string, number>();
    for (const e of events) if (e.ph === 'X' && e.dur) by.set(e.name, (by.get(e.name) ?? 0) + e.dur / 1e6);
    console.log([...by].sort((a, b) => b[1] - a[1]).slice(0, 70).map(([n, t]) => `${t.toFixed(2)}s ${n}`).join('\n'));
  }
  const d = (k: string) => (after[k]! - before[k]!).toFixed(1);
  console.log(JSON.stringify({ messages: count, wall_s: Number(wall.toFixed(1)), layout_s: Number(d('LayoutDuration')), style_s: Number(d('RecalcStyleDuration')), script_s: Number(d('ScriptDuration')), task_s: Number(d('TaskDuration')), layouts: Number(d('LayoutCount')), nodes: after.Nodes }));
} finally {
  await browser.close();
  await app.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
