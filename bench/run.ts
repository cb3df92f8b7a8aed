/**
 * `npm run bench`: what Chorus adds on top of the models (issue 7). Runs every scenario several
 * times, prints a table (median, min, max, target, pass/miss) and writes bench/results.json with
 * the machine it ran on. `BENCH_QUICK=1` runs a small smoke configuration. The data directories
 * live under the OS temp directory (`TMPDIR`), so `TMPDIR=/dev/shm npm run bench` measures with
 * the disk taken out.
 */
import { cpus, tmpdir, totalmem } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { figure, round, runChild, type Figure } from './lib.js';
import { overheadRun, bytesRun } from './scenarios/overhead.js';
import { webRun } from './scenarios/web.js';
import { scalingRun } from './scenarios/scaling.js';
import { storageRun } from './scenarios/storage.js';
import { cacheRun, voluntaryRun } from './scenarios/tokens.js';
import { makeRssData, type ThroughputResult } from './scenarios/memory.js';

/** Sizes of one bench run. */
export interface Profile {
  name: string;
  runs: number;
  overhead: { messages: number; warmup: number };
  web: { messages: number; warmup: number };
  scaling: { groups: number; latencyMs: number; concurrency: number };
  storage: { small: number; large: number; messages: number; warmup: number };
  bytes: { points: number[]; window: number };
  rss: { groups: number; messages: number };
  cache: { turns: number; personaTokens: number };
  voluntary: { messages: number };
  throughput: { groups: number; messages: number };
  childTimeoutMs: number;
}

export const FULL: Profile = {
  name: 'full',
  runs: 3,
  overhead: { messages: 300, warmup: 30 },
  web: { messages: 300, warmup: 30 },
  scaling: { groups: 1000, latencyMs: 50, concurrency: 256 },
  storage: { small: 10, large: 2000, messages: 200, warmup: 20 },
  bytes: { points: [10, 50, 300], window: 20 },
  rss: { groups: 1000, messages: 100 },
  cache: { turns: 30, personaTokens: 1000 },
  voluntary: { messages: 5 },
  throughput: { groups: 100, messages: 10_000 },
  childTimeoutMs: 180_000,
};

export const QUICK: Profile = {
  name: 'quick',
  runs: 3,
  overhead: { messages: 60, warmup: 10 },
  web: { messages: 60, warmup: 10 },
  scaling: { groups: 200, latencyMs: 50, concurrency: 64 },
  storage: { small: 10, large: 200, messages: 40, warmup: 5 },
  bytes: { points: [10, 50], window: 10 },
  rss: { groups: 100, messages: 20 },
  cache: { turns: 30, personaTokens: 1000 },
  voluntary: { messages: 3 },
  throughput: { groups: 20, messages: 1000 },
  childTimeoutMs: 60_000,
};

/** The smallest run that still produces every figure (the smoke test). */
export const TINY: Profile = {
  name: 'tiny',
  runs: 1,
  overhead: { messages: 5, warmup: 1 },
  web: { messages: 5, warmup: 1 },
  scaling: { groups: 8, latencyMs: 10, concurrency: 4 },
  storage: { small: 2, large: 6, messages: 4, warmup: 1 },
  bytes: { points: [2, 4], window: 2 },
  rss: { groups: 3, messages: 2 },
  cache: { turns: 3, personaTokens: 1000 },
  voluntary: { messages: 1 },
  throughput: { groups: 3, messages: 12 },
  childTimeoutMs: 60_000,
};

type Target = { op: '<=' | 'report'; value?: number; note?: string };

export const TARGETS: Record<string, Target> = {
  overhead_p50_ms: { op: 'report' },
  overhead_p99_ms: { op: '<=', value: 5 },
  e2e_web_p50_ms: { op: 'report' },
  e2e_web_p99_ms: { op: '<=', value: 15 },
  group_scaling_ratio: { op: '<=', value: 1.2 },
  storage_scaling_ratio: { op: '<=', value: 1.5 },
  bytes_written_per_message: { op: 'report', note: 'flat in history' },
  rss_mb_per_1000_groups: { op: '<=', value: 150 },
  cache_cost_ratio: { op: '<=', value: 0.35 },
  voluntary_calls_per_message_hybrid: { op: 'report' },
  voluntary_calls_per_message_selector: { op: 'report' },
  throughput_msgs_per_s: { op: 'report' },
};

export interface BenchResult {
  machine: Record<string, unknown>;
  profile: string;
  figures: Record<string, Figure & { target: string; pass: boolean | null }>;
  details: Record<string, unknown>;
}

type Log = (line: string) => void;

async function runs<T>(n: number, label: string, log: Log, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    out.push(await fn(i));
    log(`  ${label} run ${i + 1}/${n} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return out;
}

/** Run every scenario with the given sizes. */
export async function runBench(p: Profile, log: Log = () => undefined): Promise<BenchResult> {
  const raw: Record<string, number[]> = {};
  const details: Record<string, unknown> = {};

  log('overhead (router, one group, @analyst, LLM 0 ms)');
  const oh = await runs(p.runs, 'overhead', log, () => overheadRun(p.overhead));
  raw['overhead_p50_ms'] = oh.map((r) => r.p50);
  raw['overhead_p99_ms'] = oh.map((r) => r.p99);

  log('e2e web (POST → SSE reply)');
  const web = await runs(p.runs, 'web', log, () => webRun(p.web));
  raw['e2e_web_p50_ms'] = web.map((r) => r.p50);
  raw['e2e_web_p99_ms'] = web.map((r) => r.p99);

  log(`group scaling (${p.scaling.groups} groups at once, LLM ${p.scaling.latencyMs} ms, concurrency ${p.scaling.concurrency})`);
  const sc = await runs(p.runs, 'scaling', log, () => scalingRun(p.scaling));
  raw['group_scaling_ratio'] = sc.map((r) => r.ratio);
  details['group_scaling'] = sc.map((r) => ({ wall_ms: round(r.wallMs, 1), ideal_ms: r.idealMs }));

  log(`storage scaling (${p.storage.small} vs ${p.storage.large} groups on disk)`);
  const st = await runs(p.runs, 'storage', log, async () => {
    const small = await storageRun({ groups: p.storage.small, messages: p.storage.messages, warmup: p.storage.warmup });
    const large = await storageRun({ groups: p.storage.large, messages: p.storage.messages, warmup: p.storage.warmup });
    return { small, large };
  });
  raw['storage_scaling_ratio'] = st.map((r) => r.large / r.small);
  details['storage_ms_per_message'] = st.map((r) => ({ [p.storage.small]: round(r.small), [p.storage.large]: round(r.large) }));

  log('bytes written per reply by history');
  const by = await runs(p.runs, 'bytes', log, () => bytesRun(p.bytes));
  const at = p.bytes.points.includes(50) ? 50 : p.bytes.points[p.bytes.points.length - 1]!;
  raw['bytes_written_per_message'] = by.map((r) => r.byHistory[at]!);
  details['bytes_written_per_message_by_history'] = Object.fromEntries(p.bytes.points.map((pt) => [pt, round(by[0]!.byHistory[pt]!, 0)]));
  details['store_writes_per_reply'] = by[0]!.writesPerReply;

  log(`rss (${p.rss.groups} groups × 4 agents × ${p.rss.messages} answered messages)`);
  const data = await makeRssData(p.rss);
  try {
    const rss = await runs(p.runs, 'rss', log, () => runChild<{ emptyMb: number; loadedMb: number; groups: number }>({ kind: 'rss', dir: data.dir }, p.childTimeoutMs));
    raw['rss_mb_per_1000_groups'] = rss.map((r) => ((r.loadedMb - r.emptyMb) * 1000) / r.groups);
    details['rss'] = { empty_mb: round(rss[0]!.emptyMb, 1), loaded_mb: round(rss[0]!.loadedMb, 1), groups: rss[0]!.groups, bytes_on_disk_per_group: data.groupBytes };
  } finally {
    await data.remove();
  }

  log('cache cost (30 turns, 3 agents, Anthropic provider → fake API)');
  const cc = await runs(p.runs, 'cache', log, () => cacheRun(p.cache));
  raw['cache_cost_ratio'] = cc.map((r) => r.ratio);
  details['cache_tokens'] = { input: cc[0]!.inputTokens, cache_read: cc[0]!.cacheReadTokens, cache_write: cc[0]!.cacheWriteTokens, calls: cc[0]!.calls };
  const short = await cacheRun({ ...p.cache, personaTokens: 100 });
  details['cache_cost_ratio_short_persona'] = round(short.ratio);

  log('voluntary calls (8 agents, unaddressed message)');
  raw['voluntary_calls_per_message_hybrid'] = await voluntaryRun({ strategy: 'hybrid', messages: p.voluntary.messages });
  raw['voluntary_calls_per_message_selector'] = await voluntaryRun({ strategy: 'selector', messages: p.voluntary.messages });

  log(`throughput (${p.throughput.groups} groups, ${p.throughput.messages} messages, LLM 0 ms)`);
  const tp = await runs(p.runs, 'throughput', log, () => runChild<ThroughputResult>({ kind: 'throughput', ...p.throughput }, p.childTimeoutMs));
  raw['throughput_msgs_per_s'] = tp.map((r) => r.msgsPerS);
  details['soak'] = tp.map((r) => ({
    messages: r.messages,
    rss_warm_mb: round(r.warmRssMb, 1),
    rss_end_mb: round(r.endRssMb, 1),
    heap_warm_mb: round(r.warmHeapMb, 1),
    heap_end_mb: round(r.endHeapMb, 1),
  }));

  const figures: BenchResult['figures'] = {};
  for (const [key, values] of Object.entries(raw)) {
    const f = figure(values.map((v) => round(v)));
    const t = TARGETS[key]!;
    figures[key] = { ...f, target: t.op === 'report' ? (t.note ? `report (${t.note})` : 'report') : `≤ ${t.value}`, pass: t.op === 'report' ? null : f.median <= t.value! };
  }
  return {
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memory_gb: round(totalmem() / 2 ** 30, 1),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      tmpdir: tmpdir(),
      date: new Date().toISOString(),
    },
    profile: p.name,
    figures,
    details,
  };
}

export function formatTable(r: BenchResult): string {
  const rows = [['figure', 'median', 'min', 'max', 'target', 'result']];
  for (const [k, f] of Object.entries(r.figures)) rows.push([k, String(f.median), String(f.min), String(f.max), f.target, f.pass === null ? '—' : f.pass ? 'pass' : 'MISS']);
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => '| ' + row.map((c, i) => c.padEnd(w[i]!)).join(' | ') + ' |';
  return [line(rows[0]!), '|' + w.map((n) => '-'.repeat(n + 2)).join('|') + '|', ...rows.slice(1).map(line)].join('\n');
}

async function main(): Promise<void> {
  const profile = process.env['BENCH_QUICK'] ? QUICK : FULL;
  const t0 = Date.now();
  const log: Log = (s) => process.stderr.write(s + '\n');
  log(`chorus bench (${profile.name}), data under ${tmpdir()}`);
  const result = await runBench(profile, log);
  result.machine['duration_s'] = round((Date.now() - t0) / 1000, 1);
  console.log('\n' + formatTable(result));
  console.log(`\n${result.machine['cpu']} × ${result.machine['cores']}, node ${result.machine['node']}, ${result.machine['duration_s']} s`);
  const out = fileURLToPath(new URL(profile === FULL ? './results.json' : './results.quick.json', import.meta.url));
  await writeFile(out, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${out}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
