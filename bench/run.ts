/**
 * `npm run bench`: what Chorus adds on top of the models. Runs every scenario several
 * times, prints a table (median, min, max, target, pass/miss) and writes bench/results.json with
 * the machine it ran on. `BENCH_QUICK=1` runs a small smoke configuration; `BENCH_SOAK=1` runs the
 * full 100,000-message soak in any profile.
 *
 * The data directories live under `BENCH_DATA_ROOT` (default: the OS temp directory, on this kind
 * of machine the real disk). `npm run bench -- --tmpfs` puts them on /dev/shm: the same figures
 * with the disk taken out, written to bench/results-tmpfs.json, so that set beside results.json
 * shows what is disk and what is code. Which root was used, and whether it is tmpfs, is recorded.
 */
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ChildTask } from './child.js';
import { describeDataRoot, diskWriteBytes, figure, round, runChild, type Figure, type Fsync } from './lib.js';
import { overheadRun, bytesRun, type BytesPoint } from './scenarios/overhead.js';
import { webRun } from './scenarios/web.js';
import { daemonCpuRuns } from './scenarios/daemon.js';
import { scalingRun } from './scenarios/scaling.js';
import { storageRun } from './scenarios/storage.js';
import { cacheRun, voluntaryRun } from './scenarios/tokens.js';
import { toolOverheadRun, toolTokensRun } from './scenarios/tools.js';
import { voluntaryRoundRun } from './scenarios/rounds.js';
import { NOISY_ROOM_SCRIPT, noisyRoomRun } from './scenarios/reactions.js';
import { makeRssData, type SoakPoint, type ThroughputResult } from './scenarios/memory.js';
import { postgresRuns } from './scenarios/postgres.js';
import { fileStoreKeepRun } from './scenarios/files.js';
import { CLUSTER_FULL, CLUSTER_QUICK, clusterRuns } from './scenarios/cluster.js';
import { pageStreamingRun } from './scenarios/page.js';

/** Sizes of one bench run. */
export interface Profile {
  name: string;
  runs: number;
  overhead: { messages: number; warmup: number };
  web: { messages: number; warmup: number };
  /** A real daemon (bin/chorus.js) over HTTP: its CPU per answered message (one daemon per run). */
  daemon: { messages: number; warmup: number };
  scaling: { groups: number; latencyMs: number; concurrency: number };
  storage: { small: number; large: number; messages: number; warmup: number };
  /** History points are fixed (figure names); `batch` fillers are sent at once to get there. */
  bytes: { window: number; batch: number };
  rss: { groups: number; messages: number };
  cache: { turns: number; personaTokens: number };
  voluntary: { messages: number };
  /** Voluntary round time, 8 agents, model latency `latencyMs`. */
  rounds: { latencyMs: number; messages: number };
  throughput: { groups: number; messages: number; inFlight: number };
  /** Keeping a 5 MB photo through FileKeeper: `samples` measured keeps after `warmup`, per run. */
  files: { samples: number; warmup: number };
  /** `pointFigures`: RSS and heap at each point as figures (the ratios always are). */
  soak: { groups: number; points: number[]; fsync: Fsync; pointFigures: boolean; timeoutMs: number };
  childTimeoutMs: number;
}

/** History (human messages in the group) at which bytes per message are measured. */
export const BYTES_POINTS = [10, 500, 10_000] as const;

/** The full soak: 100,000 messages over 100 groups (also with BENCH_SOAK=1 in any profile). */
export const FULL_SOAK: Profile['soak'] = { groups: 100, points: [10_000, 50_000, 100_000], fsync: 'always', pointFigures: true, timeoutMs: 900_000 };

export const FULL: Profile = {
  name: 'full',
  runs: 3,
  overhead: { messages: 300, warmup: 30 },
  web: { messages: 300, warmup: 30 },
  daemon: { messages: 300, warmup: 30 },
  scaling: { groups: 1000, latencyMs: 50, concurrency: 256 },
  storage: { small: 10, large: 2000, messages: 200, warmup: 20 },
  bytes: { window: 50, batch: 50 },
  rss: { groups: 1000, messages: 100 },
  cache: { turns: 30, personaTokens: 1000 },
  voluntary: { messages: 5 },
  rounds: { latencyMs: 200, messages: 3 },
  throughput: { groups: 100, messages: 10_000, inFlight: 100 },
  files: { samples: 30, warmup: 3 },
  soak: FULL_SOAK,
  childTimeoutMs: 180_000,
};

export const QUICK: Profile = {
  name: 'quick',
  runs: 3,
  overhead: { messages: 60, warmup: 10 },
  web: { messages: 60, warmup: 10 },
  daemon: { messages: 100, warmup: 20 },
  scaling: { groups: 200, latencyMs: 50, concurrency: 64 },
  storage: { small: 10, large: 200, messages: 40, warmup: 5 },
  bytes: { window: 20, batch: 100 },
  rss: { groups: 100, messages: 20 },
  cache: { turns: 30, personaTokens: 1000 },
  voluntary: { messages: 3 },
  rounds: { latencyMs: 200, messages: 3 },
  throughput: { groups: 100, messages: 1000, inFlight: 100 },
  files: { samples: 15, warmup: 2 },
  soak: { groups: 100, points: [1000, 2500, 5000], fsync: 'always', pointFigures: true, timeoutMs: 120_000 },
  childTimeoutMs: 60_000,
};

/** The smallest run that still produces every figure (the smoke test). */
export const TINY: Profile = {
  name: 'tiny',
  runs: 1,
  overhead: { messages: 5, warmup: 1 },
  web: { messages: 5, warmup: 1 },
  daemon: { messages: 5, warmup: 1 },
  scaling: { groups: 8, latencyMs: 10, concurrency: 4 },
  storage: { small: 2, large: 6, messages: 4, warmup: 1 },
  bytes: { window: 2, batch: 500 },
  rss: { groups: 3, messages: 2 },
  cache: { turns: 3, personaTokens: 1000 },
  voluntary: { messages: 1 },
  rounds: { latencyMs: 20, messages: 1 },
  throughput: { groups: 3, messages: 12, inFlight: 3 },
  files: { samples: 2, warmup: 1 },
  soak: { groups: 3, points: [6, 12, 18], fsync: 'always', pointFigures: false, timeoutMs: 60_000 },
  childTimeoutMs: 60_000,
};

type Target = { op: '<=' | '>=' | 'report'; value?: number; note?: string };

const BYTES_TARGET: Target = { op: '<=', value: 8192 };
const DISK_TARGET: Target = { op: 'report', note: '/proc/self/io write_bytes; 0 on tmpfs' };

/** Every figure of every profile; the soak's per-point figures are added by `targetFor`. */
export const TARGETS: Record<string, Target> = {
  overhead_p50_ms: { op: 'report' },
  overhead_p99_ms: { op: '<=', value: 5 },
  e2e_web_p50_ms: { op: 'report' },
  e2e_web_p99_ms: { op: '<=', value: 15 },
  daemon_cpu_ms_per_answered_message: { op: 'report', note: 'CPU (user + system) of the daemon process per @analyst message over HTTP, fake OpenAI model' },
  group_scaling_ratio: { op: '<=', value: 1.5, note: 'goal 1.2' },
  storage_scaling_ratio: { op: '<=', value: 1.5 },
  ...Object.fromEntries(BYTES_POINTS.map((h) => [`bytes_written_per_message_${h}`, BYTES_TARGET])),
  bytes_written_history_ratio: { op: 'report', note: `${BYTES_POINTS.at(-1)}/${BYTES_POINTS[0]}, flat ≈ 1` },
  // Only where the kernel says what the process wrote (Linux).
  ...(diskWriteBytes() === null ? {} : Object.fromEntries(BYTES_POINTS.map((h) => [`disk_bytes_written_per_message_${h}`, DISK_TARGET]))),
  rss_mb_per_1000_groups: { op: '<=', value: 150 },
  cache_cost_ratio: { op: '<=', value: 0.35 },
  tool_step_tokens: { op: 'report', note: 'prompt tokens one step (call + result) adds to the next call, Anthropic provider → fake API' },
  tool_step_cached_share: { op: 'report', note: "share of a step call's prompt read from the cache" },
  tool_step_overhead_ms: { op: 'report', note: 'median ms one read-only tool step adds to a turn (model and tool instant; two durable writes and a second model call)' },
  voluntary_calls_per_message_hybrid: { op: 'report' },
  voluntary_calls_per_message_selector: { op: 'report' },
  voluntary_round_latency_ratio_sequential: { op: 'report', note: 'round ms / model latency; 8 agents, all pass' },
  voluntary_round_latency_ratio_parallel: { op: '<=', value: 2.2, note: 'the same, voluntary_execution parallel; goal 2: two waves at the default 4 slots per group' },
  voluntary_round_latency_ratio_parallel_one_wave: { op: '<=', value: 2, note: 'parallel with max_concurrency 32: 8 slots per group, one wave' },
  voluntary_round_calls_parallel_first_two: { op: 'report', note: 'calls when the first 2 candidates reply (sequential: 2)' },
  noisy_room_agent_messages_reactions_off: { op: 'report', note: `agent messages for ${NOISY_ROOM_SCRIPT.length} unaddressed messages, 8 agents, hybrid, scripted provider, reacting off` },
  noisy_room_agent_messages_reactions_on: { op: 'report', note: 'the same script with reacting on: acknowledgements become reactions' },
  throughput_msgs_per_s: { op: '>=', value: 3000, note: 'fsync always' },
  throughput_msgs_per_s_nofsync: { op: 'report', note: 'fsync never' },
  // The same scenarios on the PostgreSQL store (one instance, a local throwaway server); absent when no server can run.
  overhead_p50_ms_postgres: { op: 'report', note: 'postgres store' },
  overhead_p99_ms_postgres: { op: 'report', note: 'postgres store' },
  throughput_msgs_per_s_postgres: { op: 'report', note: 'postgres store, one instance' },
  file_keep_5mb_p50_ms: { op: 'report', note: 'FileKeeper.keep of a 5 MB JPEG with GPS: type, GPS taken out, SHA-256, durable write; file store, fsync always' },
  file_keep_5mb_p99_ms: { op: 'report', note: 'the same, p99' },
  file_keep_5mb_p50_ms_postgres: { op: 'report', note: 'the same on the postgres store (bench server: fsync off)' },
  file_keep_5mb_p99_ms_postgres: { op: 'report', note: 'the same, p99' },
  cluster_takeover_ms: { op: 'report', note: 'SIGKILL → the survivor runs every group; lease 10 s; median of the runs' },
  cluster_throughput_msgs_per_s_1_instance: { op: 'report', note: 'daemons over HTTP, postgres, 1 instance' },
  cluster_throughput_msgs_per_s_2_instances: { op: 'report', note: 'the same, 2 instances on one database (2 cores shared by all)' },
  cluster_cpu_ms_per_reply_1_instance: { op: 'report', note: 'user + system CPU of the daemons ÷ replies (messages that wait for a round are answered together, so replies < messages)' },
  cluster_cpu_ms_per_reply_2_instances: { op: 'report', note: 'the same, 2 instances' },
  page_longest_task_ms_streaming: { op: '<=', value: 100, note: 'longest main-thread task of the web page in Chromium while a 20 KB Markdown reply streams in 4-character chunks every 5 ms; absent without Chromium' },
  soak_rss_growth_ratio: { op: '<=', value: 1.3, note: 'last/first point' },
  soak_heap_growth_ratio: { op: 'report', note: 'last/first point' },
};

function targetFor(key: string): Target {
  const t = TARGETS[key] ?? (/^soak_(rss|heap)_mb_/.test(key) ? { op: 'report' as const } : undefined);
  if (!t) throw new Error(`no target for figure ${key}`);
  return t;
}

function targetText(t: Target): string {
  if (t.op === 'report') return t.note ? `report (${t.note})` : 'report';
  return `${t.op === '<=' ? '≤' : '≥'} ${t.value}${t.note ? ` (${t.note})` : ''}`;
}

/** 10000 → "10k", 2500 → "2.5k", 30 → "30". */
function countLabel(n: number): string {
  return n >= 1000 ? `${n / 1000}k` : String(n);
}

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
  const loadAtStart = loadavg().map((x) => round(x, 2));

  log('overhead (router, one group, @analyst, LLM 0 ms)');
  const oh = await runs(p.runs, 'overhead', log, () => overheadRun(p.overhead));
  raw['overhead_p50_ms'] = oh.map((r) => r.p50);
  raw['overhead_p99_ms'] = oh.map((r) => r.p99);

  log('e2e web (POST → SSE reply)');
  const web = await runs(p.runs, 'web', log, () => webRun(p.web));
  raw['e2e_web_p50_ms'] = web.map((r) => r.p50);
  raw['e2e_web_p99_ms'] = web.map((r) => r.p99);

  log(`daemon CPU per answered message (bin/chorus.js over HTTP, ${p.daemon.messages} messages per run after ${p.daemon.warmup} warm-up, fake OpenAI model)`);
  const dc = await daemonCpuRuns({ runs: p.runs, ...p.daemon }, log);
  raw['daemon_cpu_ms_per_answered_message'] = dc.map((r) => r.cpuMsPerMessage);
  details['daemon_cpu'] = dc.map((r) => ({
    messages: r.answered,
    cpu_ticks: r.ticks,
    clk_tck: r.clkTck,
    wall_ms: round(r.wallMs, 0),
    model_calls_per_message: round(r.modelCallsPerMessage, 3),
    check_proc_cpu_s: round(r.check.procCpuS, 2),
    check_metrics_cpu_s: round(r.check.metricsCpuS, 2),
  }));

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

  log(`bytes written per reply at history ${BYTES_POINTS.join(' / ')} (window ${p.bytes.window}, filler ${p.bytes.batch} at once)`);
  const by = await runs(p.runs, 'bytes', log, () => bytesRun({ points: [...BYTES_POINTS], window: p.bytes.window, batch: p.bytes.batch }));
  const at = (r: BytesPoint[], h: number) => r.find((x) => x.history === h)!;
  for (const h of BYTES_POINTS) {
    raw[`bytes_written_per_message_${h}`] = by.map((r) => at(r, h).storeBytes);
    if (TARGETS[`disk_bytes_written_per_message_${h}`]) raw[`disk_bytes_written_per_message_${h}`] = by.map((r) => at(r, h).diskBytes ?? NaN);
  }
  raw['bytes_written_history_ratio'] = by.map((r) => at(r, BYTES_POINTS.at(-1)!).storeBytes / at(r, BYTES_POINTS[0]).storeBytes);
  details['bytes_by_history'] = by.map((r) =>
    r.map((x) => ({
      history: x.history,
      entries: x.entries,
      store_bytes: round(x.storeBytes, 0),
      log_bytes: round(x.logBytes, 0),
      checkpoint_size: x.checkpointSize,
      records_per_reply: round(x.recordsPerReply, 2),
      window_bytes_unamortised: round(x.windowBytes, 0),
      disk_bytes: x.diskBytes === null ? null : round(x.diskBytes, 0),
      flushes: round(x.flushes, 2),
    })),
  );

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

  log('one tool call (model and tool instant, with vs without one read-only step)');
  const tc = await runs(p.runs, 'tools', log, () => toolOverheadRun(p.overhead));
  raw['tool_step_overhead_ms'] = tc.map((r) => r.perStep);
  const tt = await toolTokensRun({ turns: 5 });
  raw['tool_step_tokens'] = [tt.stepTokens];
  raw['tool_step_cached_share'] = [tt.stepCachedShare];
  details['tool_step'] = { with_tool_ms: round(tc[0]!.withTool), without_ms: round(tc[0]!.without), definition_tokens: tt.definitionTokens };

  log('voluntary calls (8 agents, unaddressed message)');
  raw['voluntary_calls_per_message_hybrid'] = await voluntaryRun({ strategy: 'hybrid', messages: p.voluntary.messages });
  raw['voluntary_calls_per_message_selector'] = await voluntaryRun({ strategy: 'selector', messages: p.voluntary.messages });

  log(`voluntary round time (8 agents, unaddressed message, LLM ${p.rounds.latencyMs} ms, sequential vs parallel)`);
  const rt: Record<string, Awaited<ReturnType<typeof voluntaryRoundRun>>> = {};
  for (const mode of ['sequential', 'parallel'] as const) {
    rt[mode] = await voluntaryRoundRun({ mode, latencyMs: p.rounds.latencyMs, messages: p.rounds.messages, repliers: 'none' });
    raw[`voluntary_round_latency_ratio_${mode}`] = rt[mode]!.ms.map((ms) => ms / p.rounds.latencyMs);
  }
  const oneWave = await voluntaryRoundRun({ mode: 'parallel', latencyMs: p.rounds.latencyMs, messages: p.rounds.messages, repliers: 'none', maxConcurrency: 32 });
  raw['voluntary_round_latency_ratio_parallel_one_wave'] = oneWave.ms.map((ms) => ms / p.rounds.latencyMs);
  const firstTwo = await voluntaryRoundRun({ mode: 'parallel', latencyMs: p.rounds.latencyMs, messages: p.rounds.messages, repliers: 'first-two' });
  raw['voluntary_round_calls_parallel_first_two'] = firstTwo.calls;
  details['voluntary_round'] = {
    latency_ms: p.rounds.latencyMs,
    sequential_ms: rt['sequential']!.ms.map((x) => round(x, 1)),
    parallel_ms: rt['parallel']!.ms.map((x) => round(x, 1)),
    calls_sequential: rt['sequential']!.calls,
    calls_parallel: rt['parallel']!.calls,
    parallel_first_two_ms: firstTwo.ms.map((x) => round(x, 1)),
    parallel_first_two_cancelled: firstTwo.cancelled,
  };

  log(`noisy room (${NOISY_ROOM_SCRIPT.length} unaddressed messages, 8 agents, hybrid, scripted provider, reacting off vs on)`);
  const quiet = await noisyRoomRun({ reactions: true });
  const noisy = await noisyRoomRun({ reactions: false });
  raw['noisy_room_agent_messages_reactions_off'] = [noisy.agentMessages];
  raw['noisy_room_agent_messages_reactions_on'] = [quiet.agentMessages];
  details['noisy_room'] = { messages: NOISY_ROOM_SCRIPT.length, off: { agent_messages: noisy.agentMessages, reactions: noisy.reactions, model_calls: noisy.calls }, on: { agent_messages: quiet.agentMessages, reactions: quiet.reactions, model_calls: quiet.calls } };

  const tp = p.throughput;
  for (const fsync of ['always', 'never'] as const) {
    log(`throughput (${tp.groups} groups, ${tp.messages} messages, ${Math.min(tp.inFlight, tp.groups)} in flight, LLM 0 ms, fsync ${fsync})`);
    const task: ChildTask = { kind: 'throughput', ...tp, fsync };
    const r = await runs(p.runs, `throughput fsync ${fsync}`, log, () => runChild<ThroughputResult>(task, p.childTimeoutMs));
    raw[fsync === 'always' ? 'throughput_msgs_per_s' : 'throughput_msgs_per_s_nofsync'] = r.map((x) => x.msgsPerS);
    details[`throughput_fsync_${fsync}`] = r.map((x) => ({ messages: x.messages, wall_ms: round(x.wallMs, 0), flushes: x.flushes, fsyncs: x.fsyncs }));
  }

  log(`keeping a 5 MB photo (FileKeeper.keep, file store, fsync always; ${p.files.samples} keeps after ${p.files.warmup})`);
  const fk = await runs(p.runs, 'files', log, () => fileStoreKeepRun(p.files));
  raw['file_keep_5mb_p50_ms'] = fk.map((r) => r.p50);
  raw['file_keep_5mb_p99_ms'] = fk.map((r) => r.p99);
  details['file_keep'] = { photo_bytes: fk[0]!.bytes, samples_per_run: fk[0]!.samples, intake_p50_ms: fk.map((r) => round(r.intakeP50, 2)) };

  log(`postgres store: overhead and throughput (${tp.groups} groups, ${tp.messages} messages, ${Math.min(tp.inFlight, tp.groups)} in flight), keeping a 5 MB photo`);
  const pgr = await postgresRuns(p, log);
  if (pgr) {
    raw['overhead_p50_ms_postgres'] = pgr.overhead.map((r) => r.p50);
    raw['overhead_p99_ms_postgres'] = pgr.overhead.map((r) => r.p99);
    raw['throughput_msgs_per_s_postgres'] = pgr.throughput.map((r) => r.msgsPerS);
    raw['file_keep_5mb_p50_ms_postgres'] = pgr.files.map((r) => r.p50);
    raw['file_keep_5mb_p99_ms_postgres'] = pgr.files.map((r) => r.p99);
    details['postgres'] = {
      commits_per_message_overhead: round(pgr.overhead[0]!.commitsPerMessage, 2),
      throughput: pgr.throughput.map((x) => ({ messages: x.messages, wall_ms: round(x.wallMs, 0), commits: x.commits })),
    };
  } else details['postgres'] = 'skipped: no PostgreSQL';

  // Several instances on one database: real daemons, SIGKILL, 1 vs 2 instances.
  // Not in the tiny profile (the smoke test): starting and killing daemons takes a minute.
  const cl = p.name === 'tiny' ? undefined : await clusterRuns(p.name === 'full' ? CLUSTER_FULL : CLUSTER_QUICK, log);
  if (cl === undefined) details['cluster'] = 'skipped: tiny profile';
  else if (cl) {
    raw['cluster_takeover_ms'] = cl.takeoverMs;
    raw['cluster_throughput_msgs_per_s_1_instance'] = [cl.throughput[0]!.msgsPerS];
    raw['cluster_throughput_msgs_per_s_2_instances'] = [cl.throughput[1]!.msgsPerS];
    cl.throughput.forEach((x, i) => (raw[`cluster_cpu_ms_per_reply_${i === 0 ? '1_instance' : '2_instances'}`] = [(x.cpuMsPerMessage * x.messages) / x.replies]));
    details['cluster'] = { lease_seconds: cl.leaseSeconds, takeover_ms: cl.takeoverMs, throughput: cl.throughput.map((x) => ({ instances: x.instances, msgs_per_s: round(x.msgsPerS, 1), wall_ms: x.wallMs, replies: x.replies, cpu_ms_per_message: round(x.cpuMsPerMessage, 2), cpu_ms_per_reply: round((x.cpuMsPerMessage * x.messages) / x.replies, 2) })) };
  } else details['cluster'] = 'skipped: no PostgreSQL';

  log('the web page while a 20 KB reply streams (Chromium, longtask observer)');
  const pg = await pageStreamingRun();
  if (pg) {
    raw['page_longest_task_ms_streaming'] = [pg.longestTaskMs];
    details['page_streaming'] = { long_tasks: pg.longTasks, stream_ms: round(pg.streamMs, 0) };
  }

  const soak = process.env['BENCH_SOAK'] && process.env['BENCH_SOAK'] !== '0' && p.soak.points.at(-1)! < FULL_SOAK.points.at(-1)! ? FULL_SOAK : p.soak;
  log(`soak (${soak.points.at(-1)} messages over ${soak.groups} groups, LLM 0 ms, fsync ${soak.fsync}; memory at ${soak.points.join(' / ')})`);
  const sk = (await runs(1, 'soak', log, () => runChild<{ points: SoakPoint[]; entriesPerGroup: number }>({ kind: 'soak', groups: soak.groups, points: soak.points, fsync: soak.fsync } satisfies ChildTask, soak.timeoutMs)))[0]!;
  const first = sk.points[0]!;
  const last = sk.points.at(-1)!;
  if (soak.pointFigures) {
    for (const pt of sk.points) {
      raw[`soak_rss_mb_${countLabel(pt.messages)}`] = [pt.rssMb];
      raw[`soak_heap_mb_${countLabel(pt.messages)}`] = [pt.heapMb];
    }
  }
  raw['soak_rss_growth_ratio'] = [last.rssMb / first.rssMb];
  raw['soak_heap_growth_ratio'] = [last.heapMb / first.heapMb];
  details['soak'] = sk.points.map((x) => ({ messages: x.messages, rss_mb: round(x.rssMb, 1), heap_mb: round(x.heapMb, 1), msgs_per_s: round(x.msgsPerS, 0), dedupe_ids: x.dedupeIds }));
  details['soak_setup'] = { groups: soak.groups, fsync: soak.fsync, entries_per_group: round(sk.entriesPerGroup, 0) };

  const figures: BenchResult['figures'] = {};
  for (const [key, values] of Object.entries(raw)) {
    const f = figure(values.map((v) => round(v)));
    const t = targetFor(key);
    figures[key] = { ...f, target: targetText(t), pass: t.op === 'report' ? null : t.op === '<=' ? f.median <= t.value! : f.median >= t.value! };
  }
  return {
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memory_gb: round(totalmem() / 2 ** 30, 1),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      tmpdir: tmpdir(),
      data_root: describeDataRoot(),
      // 1/5/15-minute load averages: other work on the machine shows up in every figure.
      load_avg_start: loadAtStart,
      load_avg_end: loadavg().map((x) => round(x, 2)),
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
  if (process.argv.includes('--tmpfs') && !process.env['BENCH_DATA_ROOT']) {
    if (!existsSync('/dev/shm')) throw new Error('--tmpfs: there is no /dev/shm here; set BENCH_DATA_ROOT to a tmpfs directory');
    // Inherited by the child processes too.
    process.env['BENCH_DATA_ROOT'] = '/dev/shm';
  }
  const profile = process.env['BENCH_QUICK'] ? QUICK : FULL;
  const root = describeDataRoot();
  const t0 = Date.now();
  const log: Log = (s) => process.stderr.write(s + '\n');
  log(`chorus bench (${profile.name}), data under ${root.root} (${root.fs_type}${root.tmpfs ? ', memory: no disk in these figures' : ''})`);
  const result = await runBench(profile, log);
  result.machine['duration_s'] = round((Date.now() - t0) / 1000, 1);
  console.log('\n' + formatTable(result));
  console.log(`\n${result.machine['cpu']} × ${result.machine['cores']}, node ${result.machine['node']}, data on ${root.root} (${root.fs_type}), ${result.machine['duration_s']} s`);
  const name = `./results${root.tmpfs ? '-tmpfs' : ''}${profile === FULL ? '' : '.quick'}.json`;
  const out = fileURLToPath(new URL(name, import.meta.url));
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
