/**
 * Shared pieces of the benchmarks: statistics, a temporary data directory (under
 * `BENCH_DATA_ROOT`, default the OS temp directory), a config with N agents, an app on the real
 * router and the real file store, the process's disk-write counter, and a channel that timestamps
 * the moment a reply is handed over to it.
 */
import { fork } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createApp, type App } from '../src/app.js';
import { parseConfigText } from '../src/config/load.js';
import type { ChorusConfig } from '../src/config/schema.js';
import type { Channel, ChannelHost, LlmProvider, PostedMessage, PostOptions } from '../src/core/ports.js';
import type { ToolHost } from '../src/core/toolPorts.js';
import type { AgentDef, ChatRef, GroupConfig, InboundMessage } from '../src/core/types.js';
import { FileStore } from '../src/store/files/FileStore.js';
import { FakeLlm, type FakeLlmOptions } from '../tests/helpers/fake-llm.js';
import { silentLogger } from '../tests/helpers/logger.js';

// ---------------------------------------------------------------------------------------------
// Statistics

/** Nearest-rank percentile of an unsorted sample (p in 0..100). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))]!;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One figure over several runs. */
export interface Figure {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function figure(runs: number[]): Figure {
  return { median: median(runs), min: Math.min(...runs), max: Math.max(...runs), runs };
}

export const now = (): number => performance.now();

export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

// ---------------------------------------------------------------------------------------------
// Data directories and the disk

/** Where the benchmarks put their data directories: `BENCH_DATA_ROOT`, else the OS temp directory. */
export function dataRoot(): string {
  return process.env['BENCH_DATA_ROOT'] || tmpdir();
}

/** The file system type of the mount holding `dir` (from /proc/mounts; `unknown` elsewhere). */
export function fsTypeOf(dir: string): string {
  let path: string;
  let mounts: string;
  try {
    path = realpathSync(dir);
    mounts = readFileSync('/proc/mounts', 'utf8');
  } catch {
    return 'unknown';
  }
  let best = { point: '', type: 'unknown' };
  for (const line of mounts.split('\n')) {
    const [, rawPoint, type] = line.split(' ');
    if (!rawPoint || !type) continue;
    // /proc/mounts escapes spaces and the like as octal.
    const point = rawPoint.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const inside = point === '/' || path === point || path.startsWith(point + sep);
    if (inside && point.length >= best.point.length) best = { point, type };
  }
  return best.type;
}

/** The data root and whether it is memory (tmpfs): written into the results. */
export function describeDataRoot(): { root: string; fs_type: string; tmpfs: boolean } {
  const root = dataRoot();
  const type = fsTypeOf(root);
  return { root, fs_type: type, tmpfs: type === 'tmpfs' || type === 'ramfs' };
}

/**
 * Bytes this process caused to be written to storage (`write_bytes` of /proc/self/io: counted
 * when a page of a file becomes dirty, so a small append costs a whole page each time the page is
 * written back or synced). Always 0 on tmpfs. Null where /proc/self/io cannot be read.
 */
export function diskWriteBytes(): number | null {
  try {
    const m = /^write_bytes:\s*(\d+)/m.exec(readFileSync('/proc/self/io', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

export async function tempDir(tag: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(dataRoot(), `chorus-bench-${tag}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

// ---------------------------------------------------------------------------------------------
// Config and app

export const AGENT_IDS = ['analyst', 'writer', 'critic', 'planner', 'coder', 'designer', 'lawyer', 'skeptic'] as const;

/** A persona of roughly `tokens` estimated tokens (4 characters each), like a real system prompt. */
export function persona(id: string, tokens = 60): string {
  const head = `You are the ${id} of a small product team. `;
  const rules = [
    'Answer in at most three short paragraphs.',
    'Quote figures with their source and say when a number is an estimate.',
    'When another participant is better placed to answer, say so and address them.',
    'Keep to the facts of the discussion; do not invent meetings, people or documents.',
    'Prefer concrete next steps over general advice, and name the owner of each step.',
    'If a question is ambiguous, state the reading you chose before answering it.',
  ];
  let s = head;
  for (let i = 0; s.length < tokens * 4; i++) s += rules[i % rules.length] + ' ';
  return s.slice(0, tokens * 4).trim();
}

export interface BenchConfigOptions {
  dataDir: string;
  agents?: number;
  personaTokens?: number;
  group?: Partial<GroupConfig>;
  maxConcurrency?: number;
  web?: boolean;
  /** llm.model (the default one is deprecated in the SDK and warns on every call). */
  model?: string;
}

/** A validated config: N agents, cooldown 0 unless given, generous rate limits, web off unless asked. */
export function benchConfig(o: BenchConfigOptions): ChorusConfig {
  const n = o.agents ?? 3;
  const agents = AGENT_IDS.slice(0, n)
    .map((id) => `  - id: ${id}\n    name: ${id[0]!.toUpperCase()}${id.slice(1)}\n    persona: ${JSON.stringify(persona(id, o.personaTokens))}`)
    .join('\n');
  const group = { cooldown_seconds: 0, ...o.group };
  const groupYaml = Object.entries(group)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
    .join('\n');
  const yaml = `
data_dir: ${JSON.stringify(o.dataDir)}
log_level: silent
llm:
  provider: scripted
  model: ${o.model ?? 'claude-opus-4-5'}
  max_concurrency: ${o.maxConcurrency ?? 16}
agents:
${agents}
group_defaults:
${groupYaml}
limits:
  user_messages_per_minute: 10000
  max_message_chars: 8000
channels:
  web: { enabled: ${o.web ? 'true' : 'false'}, host: 127.0.0.1, port: 0 }
`;
  return parseConfigText(yaml, 'bench', {}).config;
}

/**
 * A channel that records when each reply is handed to it, per chat. `waitFor(chatId)` resolves
 * with the performance.now() of the next agent reply posted to that chat.
 */
export class TimedChannel implements Channel {
  readonly kind = 'web' as const;
  readonly capabilities = { maxMessageLength: 16000 };
  posted = 0;
  private n = 0;
  private readonly waiters = new Map<string, Array<(t: number) => void>>();

  async start(_host: ChannelHost): Promise<void> {}
  async stop(): Promise<void> {}

  /** Resolves at the moment the next agent reply for `chatId` is handed over. */
  waitFor(chatId: string): Promise<number> {
    return new Promise((resolve) => {
      let list = this.waiters.get(chatId);
      if (!list) this.waiters.set(chatId, (list = []));
      list.push(resolve);
    });
  }

  async postAsAgent(chat: ChatRef, _agent: AgentDef, _text: string, _opts?: PostOptions): Promise<PostedMessage> {
    const t = now();
    this.posted++;
    const w = this.waiters.get(chat.chatId)?.shift();
    if (w) w(t);
    return { ids: [`p${++this.n}`] };
  }
  async postAsSystem(_chat: ChatRef, _text: string): Promise<PostedMessage> {
    return { ids: [`s${++this.n}`] };
  }
  async react(): Promise<boolean> {
    return true;
  }
  async relay(_chat: ChatRef, _from: unknown, _text: string): Promise<PostedMessage> {
    return { ids: [] };
  }
  async editPosted(): Promise<void> {}
  async deletePosted(): Promise<void> {}
  startTyping(): () => void {
    return () => undefined;
  }
  async isAdmin(): Promise<boolean> {
    return true;
  }
  warnings(): string[] {
    return [];
  }
}

export interface BenchApp {
  app: App;
  store: FileStore;
  channel: TimedChannel | null;
  config: ChorusConfig;
  dir: string;
  close(): Promise<void>;
}

export type Fsync = 'always' | 'never';

/**
 * createApp with the real file store (`fsync` default `always`, as in the config) in a fresh
 * temporary directory under the data root (or in `dir`).
 */
export async function benchApp(o: Omit<BenchConfigOptions, 'dataDir'> & { llm: LlmProvider; dir?: string; timedChannel?: boolean; fsync?: Fsync; tools?: ToolHost }): Promise<BenchApp> {
  const tmp = o.dir ? { dir: o.dir, remove: async () => undefined } : await tempDir('app');
  const config = benchConfig({ ...o, dataDir: tmp.dir });
  const store = new FileStore({ dataDir: tmp.dir, fsync: o.fsync ?? config.storage.fsync, logger: silentLogger });
  const channel = o.timedChannel === false || o.web ? null : new TimedChannel();
  const app = await createApp({ config, llm: o.llm, logger: silentLogger, store, tools: o.tools, ...(channel ? { channels: [channel] } : {}) });
  await app.start();
  return {
    app,
    store,
    channel,
    config,
    dir: tmp.dir,
    async close() {
      await app.stop();
      await tmp.remove();
    },
  };
}

/**
 * The test FakeLlm without its call log: for runs of thousands of messages, where the recorded
 * requests (each with its prompt) would otherwise be the biggest thing in the heap.
 */
export class UnrecordedLlm extends FakeLlm {
  constructor(opts: FakeLlmOptions = {}) {
    super(opts);
  }
  override async complete(req: Parameters<FakeLlm['complete']>[0]): ReturnType<FakeLlm['complete']> {
    try {
      return await super.complete(req);
    } finally {
      this.calls.length = 0;
    }
  }
}

let msgCounter = 0;

/** An inbound web message from one person. */
export function inbound(chatId: string, text: string, author = 'maya'): InboundMessage {
  return { channel: 'web', chatId, messageId: `bench-${++msgCounter}`, author: { id: author, name: author }, text, ts: Date.now() };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Run `fn` `n` times and gather one number per run. */
export async function repeat(n: number, fn: (i: number) => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await fn(i));
  return out;
}

/** Run one task of bench/child.ts in a fresh process with --expose-gc; bounded by `timeoutMs`. */
export function runChild<T>(task: Record<string, unknown>, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./child.ts', import.meta.url)), [JSON.stringify(task)], {
      execArgv: ['--import', 'tsx', '--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let settled = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(() => reject(new Error(`child ${String(task['kind'])} timed out after ${timeoutMs} ms`)));
    }, timeoutMs);
    const finish = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
    };
    child.on('message', (m: { ok: boolean; result?: T; error?: string }) => finish(() => (m.ok ? resolve(m.result as T) : reject(new Error(m.error)))));
    child.on('exit', (code) => finish(() => reject(new Error(`child ${String(task['kind'])} exited with ${code} before answering`))));
    child.on('error', (err) => finish(() => reject(err)));
  });
}
