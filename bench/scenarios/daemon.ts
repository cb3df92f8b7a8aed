/**
 * Daemon CPU per answered message: the CPU time (user + system) the real daemon process spends
 * per `@analyst` message, end to end over HTTP. A figure of one process's CPU time rather than of
 * elapsed time, so it moves much less with what else runs on the machine.
 *
 * - The daemon is the compiled one, started as users start it: `node bin/chorus.js start --config
 *   <file>` in its own process (the launcher imports dist/main.js in the same process, so the
 *   child's pid is the daemon; this is checked). dist/ is built first when stale, outside the
 *   measurement.
 * - Config: 3 agents, the web channel on 127.0.0.1 (port 0: the daemon prints the port it got),
 *   a fresh data_dir under the bench's data root (`--tmpfs` applies), `fsync: always` (the
 *   default), `log_level: warn`, the OpenAI provider against the OpenAI-compatible fake of the
 *   tests (tests/fakes/openai) running in this process and answering at once.
 * - A web group is created over the API, its SSE stream opened, then messages `@analyst …` are
 *   posted one after another, each waiting for the agent's reply on the stream. The first
 *   `warmup` are not measured; around the next `messages` the daemon's utime + stime are read
 *   from `/proc/<pid>/stat` (clock ticks, `getconf CLK_TCK`), after a short pause so that no
 *   round is in progress at either end. Figure: CPU ms / replies received in the window.
 *
 * One fresh daemon per run. Run alone (the "before"/"after" figure of a refactor):
 * `npx tsx bench/scenarios/daemon.ts --runs 5 --messages 200 [--warmup 30]`.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startFakeOpenAi, type FakeOpenAiServer } from '../../tests/fakes/openai/index.js';
import { daemonNodeArgs } from '../../tests/reliability/daemon.js';
import { dataRoot, figure, now, round, sleep, tempDir } from '../lib.js';
import { openEvents, post } from './web.js';

const ROOT = resolve(import.meta.dirname, '../..');
const LAUNCHER = join(ROOT, 'bin', 'chorus.js');
const API_KEY = 'sk-bench-daemon';
const GROUP = 'cpu-room';
const REPLY = 'Revenue grew 12% quarter on quarter.';
/** Quiet time before each CPU reading: the last reply's round finishes its writes. */
const SETTLE_MS = 250;

export interface DaemonCpuResult {
  /** CPU ms (user + system) of the daemon process per answered message in the window. */
  cpuMsPerMessage: number;
  /** Agent replies received on SSE in the measured window (= messages posted). */
  answered: number;
  /** utime + stime over the window, in clock ticks. */
  ticks: number;
  clkTck: number;
  wallMs: number;
  /** Model requests the fake received per answered message in the window. */
  modelCallsPerMessage: number;
  /**
   * From just before the window to just after it: CPU seconds by /proc/<pid>/stat and by the
   * daemon's own `process_cpu_seconds_total`. They agree when the pid is the daemon's.
   */
  check: { procCpuS: number; metricsCpuS: number };
}

let clkTckCache: number | null = null;
/** Clock ticks per second of /proc/<pid>/stat (`getconf CLK_TCK`; 100 on Linux). */
export function clkTck(): number {
  if (clkTckCache === null) {
    try {
      clkTckCache = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTckCache = 100;
    }
  }
  return clkTckCache;
}

/** utime + stime of a process (all its threads, living and exited), in clock ticks. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14, stime field 15.
  return Number(rest[11]) + Number(rest[12]);
}

/** Processes whose parent is `pid` (a re-exec or wrapper would show up here). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** Build dist/ when it is missing or older than src/ (what the launcher would do at start). */
export function ensureDaemonBuilt(log: (line: string) => void): void {
  const build = createRequire(import.meta.url)(join(ROOT, 'scripts', 'build.cjs')) as { ensureBuilt(root: string, log: (l: string) => void): boolean };
  if (!build.ensureBuilt(ROOT, log)) throw new Error('daemon bench: dist/ could not be built (see above)');
}

interface Running {
  child: ChildProcess;
  pid: number;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

async function startChorus(configPath: string, timeoutMs = 60_000): Promise<Running> {
  const child = spawn(process.execPath, [...daemonNodeArgs(), LAUNCHER, 'start', '--config', configPath], {
    cwd: ROOT,
    env: { ...process.env, CHORUS_LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Only the tail is kept (for error messages); the pipes are always drained.
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let gone = false;
  void exited.then(() => (gone = true));
  const stop = async () => {
    if (gone) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  };
  try {
    const url = await new Promise<string>((res, rej) => {
      const deadline = setTimeout(() => rej(new Error(`daemon did not print its URL within ${timeoutMs} ms:\n${out}`)), timeoutMs);
      const probe = () => {
        const m = /Open (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
        if (!m) return;
        clearTimeout(deadline);
        child.stdout!.off('data', probe);
        res(m[1]!);
      };
      child.stdout!.on('data', probe);
      void exited.then(() => {
        clearTimeout(deadline);
        rej(new Error(`daemon exited before it was ready:\n${out}`));
      });
    });
    const pid = child.pid!;
    // The pid must be the node process running the daemon: the launcher itself, not a wrapper.
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (argv[1] !== LAUNCHER) throw new Error(`daemon bench: pid ${pid} runs ${argv.join(' ')}, not ${LAUNCHER}`);
    const kids = childrenOf(pid);
    if (kids.length) throw new Error(`daemon bench: pid ${pid} has child processes (${kids.join(', ')}): the daemon may not be running in it`);
    return { child, pid, url, output: () => out, stop };
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    throw err;
  }
}

/** `process_cpu_seconds_total` of the daemon's /metrics (user + system, counted from its start-up). */
async function metricsCpuSeconds(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const v = Number(/^process_cpu_seconds_total ([\d.e+-]+)$/m.exec(text)?.[1]);
  if (!Number.isFinite(v)) throw new Error('daemon bench: /metrics has no process_cpu_seconds_total');
  return v;
}

async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url);
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

async function waitReady(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await getJson(`${url}/readyz`).catch(() => null);
    if (r?.status === 200 && (r.body as { ready?: boolean }).ready === true) return;
    if (Date.now() > deadline) throw new Error(`daemon bench: /readyz not ready after ${timeoutMs} ms: ${JSON.stringify(r?.body)}`);
    await sleep(50);
  }
}

function writeConfig(dir: string, llmUrl: string): string {
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `data_dir: ${JSON.stringify(join(dir, 'data'))}
log_level: warn
llm: { provider: openai, api_key: ${API_KEY}, base_url: ${JSON.stringify(llmUrl)}, model: fake-model, summary_model: fake-small, max_retries: 0 }
agents:
  - { id: analyst, name: Analyst, persona: "You are the analyst of a small product team. Quote figures with their source." }
  - { id: writer, name: Writer, persona: "You are the writer of a small product team. Answer in short paragraphs." }
  - { id: critic, name: Critic, persona: "You are the critic of a small product team. Say what is missing." }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 10000, max_message_chars: 8000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
`,
  );
  return path;
}

/** One run: a fresh daemon and data_dir, `warmup` unmeasured messages, then `messages` measured. */
export async function daemonCpuRun(o: { messages: number; warmup: number }, llm: FakeOpenAiServer): Promise<DaemonCpuResult> {
  const tmp = await tempDir('daemon');
  let d: Running | null = null;
  let closeEvents = () => undefined as void;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    d = await startChorus(writeConfig(tmp.dir, llm.url));
    await waitReady(d.url);
    const created = await fetch(`${d.url}/api/groups`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'CPU', participants: ['analyst', 'writer', 'critic'], id: GROUP }),
    });
    if (created.status !== 201) throw new Error(`daemon bench: creating the group answered ${created.status} ${await created.text()}`);
    let replies = 0;
    let calls = 0;
    let waiter: (() => void) | null = null;
    closeEvents = await openEvents(d.url, GROUP, () => {
      replies++;
      const w = waiter;
      waiter = null;
      w?.();
    });
    const send = async (i: number) => {
      const replied = new Promise<void>((r) => (waiter = r));
      const status = await post(agent, d!.url, GROUP, `@analyst how did revenue do in week ${i}?`);
      if (status !== 202) throw new Error(`daemon bench: POST answered ${status}`);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`daemon bench: no reply to message ${i} within 30 s:\n${d!.output()}`)), 30_000)));
      await Promise.race([replied, late]).finally(() => clearTimeout(timer));
      // The fake keeps every request (prompt and all); count them and let them go.
      calls += llm.requests.length;
      llm.requests.length = 0;
    };
    for (let i = 0; i < o.warmup; i++) await send(i);
    // The daemon's own CPU counter (prom-client, from getrusage) beside /proc, outside the window:
    // over the same stretch the two agree only if this pid is the process that does the work. The
    // daemon reads its counter at some moment while it answers /metrics, so /proc is read just
    // before and just after each answer: the counter must fall between (answering costs CPU too,
    // more on a busy machine, and would otherwise count on one side only).
    const p0 = cpuTicks(d.pid);
    const m0 = await metricsCpuSeconds(d.url);
    const p0after = cpuTicks(d.pid);
    await sleep(SETTLE_MS);
    calls = 0;
    llm.requests.length = 0;
    const replies0 = replies;
    const t0 = now();
    const cpu0 = cpuTicks(d.pid);
    for (let i = o.warmup; i < o.warmup + o.messages; i++) await send(i);
    await sleep(SETTLE_MS);
    const cpu1 = cpuTicks(d.pid);
    const wallMs = now() - t0;
    calls += llm.requests.length;
    const answered = replies - replies0;
    if (answered !== o.messages) throw new Error(`daemon bench: ${answered} replies to ${o.messages} messages`);
    const p1 = cpuTicks(d.pid);
    const metricsCpuS = (await metricsCpuSeconds(d.url)) - m0;
    const p1after = cpuTicks(d.pid);
    const procCpuS = (p1 - p0after) / clkTck();
    const procMostS = (p1after - p0) / clkTck();
    // A wrong pid reads far less (a wrapper) or nothing; allow three ticks of rounding and 10%.
    const slack = 3 / clkTck() + 0.1 * metricsCpuS;
    if (!(metricsCpuS >= procCpuS - slack && metricsCpuS <= procMostS + slack)) {
      throw new Error(`daemon bench: /proc/${d.pid}/stat counted ${round(procCpuS)}–${round(procMostS)} s of CPU, the daemon itself ${round(metricsCpuS)} s: not the daemon's process?`);
    }
    const ticks = cpu1 - cpu0;
    return {
      cpuMsPerMessage: (ticks * 1000) / clkTck() / answered,
      answered,
      ticks,
      clkTck: clkTck(),
      wallMs,
      modelCallsPerMessage: calls / answered,
      check: { procCpuS, metricsCpuS },
    };
  } finally {
    closeEvents();
    agent.destroy();
    await d?.stop();
    await tmp.remove();
  }
}

/** The build the daemons run (the stamp's time): each start rebuilds dist/ if src/ changed meanwhile. */
function buildStamp(): number {
  try {
    return statSync(join(ROOT, 'dist', '.build-stamp')).mtimeMs;
  } catch {
    return NaN;
  }
}

/** Which code is measured: the commit, and whether src/ differs from it (a figure to compare later). */
export function codeState(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git('status', '--porcelain', '--', 'src') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** `runs` runs (a fresh daemon each), one fake model for all; dist/ built first if stale. */
export async function daemonCpuRuns(o: { runs: number; messages: number; warmup: number }, log: (line: string) => void = () => undefined): Promise<DaemonCpuResult[]> {
  if (process.platform !== 'linux') throw new Error('daemon bench: needs /proc (Linux)');
  ensureDaemonBuilt(log);
  const build = buildStamp();
  let warned = false;
  const llm = await startFakeOpenAi({ apiKey: API_KEY, reply: () => ({ text: REPLY }) });
  try {
    const out: DaemonCpuResult[] = [];
    for (let i = 0; i < o.runs; i++) {
      const t0 = Date.now();
      const r = await daemonCpuRun(o, llm);
      out.push(r);
      if (!warned && buildStamp() !== build && (warned = true)) log('  warning: dist/ was rebuilt during the runs (src/ changed): the runs measured different code');
      log(
        `  daemon cpu run ${i + 1}/${o.runs}: ${round(r.cpuMsPerMessage, 3)} ms/message (${r.ticks} ticks of 1/${r.clkTck} s over ${r.answered} messages, ${round(r.wallMs / r.answered, 2)} ms wall each, ${round(r.modelCallsPerMessage, 2)} model calls each; /proc ${round(r.check.procCpuS, 2)} s vs the daemon's own ${round(r.check.metricsCpuS, 2)} s; ${((Date.now() - t0) / 1000).toFixed(1)} s)`,
      );
    }
    return out;
  } finally {
    await llm.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '5' }, messages: { type: 'string', default: '200' }, warmup: { type: 'string', default: '30' } },
  });
  const o = { runs: Number(values.runs), messages: Number(values.messages), warmup: Number(values.warmup) };
  for (const [k, v] of Object.entries(o)) if (!Number.isInteger(v) || v < (k === 'warmup' ? 0 : 1)) throw new Error(`--${k} must be a whole number`);
  const log = (s: string) => process.stderr.write(s + '\n');
  const load0 = loadavg().map((x) => round(x, 2));
  log(`daemon cpu: ${o.runs} runs × ${o.messages} messages (+${o.warmup} warm-up), 3 agents, @analyst over HTTP, fake OpenAI model, data under ${dataRoot()}; code ${codeState()}`);
  const rs = await daemonCpuRuns(o, log);
  const f = figure(rs.map((r) => round(r.cpuMsPerMessage)));
  console.log('\n| figure | median | min | max | runs |\n|---|---|---|---|---|');
  console.log(`| daemon_cpu_ms_per_answered_message | ${round(f.median)} | ${f.min} | ${f.max} | ${f.runs.join(', ')} |`);
  console.log(`\n${o.messages} messages per run; CPU of the daemon process (utime + stime, /proc/<pid>/stat, ${rs[0]!.clkTck} ticks/s)`);
  // Contention still shows in CPU time (caches, context switches), far less than in elapsed time.
  console.log(`load average ${JSON.stringify(load0)} → ${JSON.stringify(loadavg().map((x) => round(x, 2)))}, ${cpus().length} cores`);
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
