/**
 * `npx tsx bench/report.ts`: bench/results.json (disk) beside bench/results-tmpfs.json (memory)
 * as one Markdown table, for docs/performance.md: what the disk costs is the difference.
 * `--summary`: the few headline figures (docs/performance.md).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from './run.js';

async function load(name: string): Promise<BenchResult | null> {
  try {
    return JSON.parse(await readFile(fileURLToPath(new URL(name, import.meta.url)), 'utf8')) as BenchResult;
  } catch {
    return null;
  }
}

const disk = await load('./results.json');
const mem = await load('./results-tmpfs.json');
if (!disk) throw new Error('bench/results.json is missing: run `npm run bench` first');
/** The headline figures docs/performance.md leads with (`--summary`). */
const SUMMARY = ['bytes_written_per_message_10', 'bytes_written_per_message_500', 'bytes_written_per_message_10000', 'throughput_msgs_per_s', 'throughput_msgs_per_s_nofsync', 'overhead_p50_ms', 'overhead_p99_ms', 'e2e_web_p99_ms', 'daemon_cpu_ms_per_answered_message', 'group_scaling_ratio', 'rss_mb_per_1000_groups', 'soak_rss_mb_10k', 'soak_rss_mb_100k'];
const summary = process.argv.includes('--summary');
const num = (x: number | undefined) => (x === undefined ? '—' : x.toLocaleString('en-US', { maximumFractionDigits: 3 }));
const rows = summary ? ['| figure | disk | tmpfs | target |', '|---|---|---|---|'] : ['| figure | disk: median (min–max) | tmpfs: median | target | result (disk) |', '|---|---|---|---|---|'];
for (const [k, f] of Object.entries(disk.figures)) {
  const m = mem?.figures[k];
  const result = f.pass === null ? '—' : f.pass ? 'pass' : '**MISS**';
  if (!summary) rows.push(`| \`${k}\` | ${num(f.median)} (${num(f.min)}–${num(f.max)}) | ${num(m?.median)} | ${f.target} | ${result} |`);
  else if (SUMMARY.includes(k)) rows.push(`| \`${k}\` | ${num(f.median)} | ${num(m?.median)} | ${f.pass === null ? '—' : `${f.target}: ${result}`} |`);
}
const about = (r: BenchResult) => `${r.machine['cpu']} × ${r.machine['cores']}, Node ${r.machine['node']}, ${String(r.machine['date']).slice(0, 10)}, load ${JSON.stringify(r.machine['load_avg_start'])} → ${JSON.stringify(r.machine['load_avg_end'])}`;
console.log(summary ? rows.join('\n') : `Disk run: ${about(disk)}.${mem ? `\ntmpfs run: ${about(mem)}.` : ''}\n\n${rows.join('\n')}`);
