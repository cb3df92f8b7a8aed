/**
 * Several instances on one PostgreSQL database, with real daemons (`src/main.ts start`
 * as child processes), the web API over HTTP and an OpenAI-compatible fake model that answers at
 * once:
 *
 * - takeover: two instances share 10 groups; the one running groups is killed with SIGKILL and
 *   the time until the survivor runs all 10 is measured (it polls `/readyz`), `takeovers` times,
 *   the victim restarted in between. Default `cluster.lease_seconds` (10).
 * - throughput: `messages` messages (each addressed to one agent: one model call, one reply) over
 *   `groups` groups, `inFlight` at once, posted to 1 instance, then alternately to 2 instances on
 *   one database; messages per second from the first post until the last reply is in the
 *   database.
 *
 * On a 2-core machine the database, the daemons, the fake model and this client share the same
 * two cores: a second instance cannot add CPU there, only coordination. The figures say so.
 *
 * Run alone: `npx tsx bench/scenarios/cluster.ts` (`BENCH_QUICK=1` for the small sizes).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startFakeOpenAi, type FakeOpenAiServer } from '../../tests/fakes/openai/index.js';
import { killAll, startDaemon, type Daemon } from '../../tests/reliability/daemon.js';
import { noPostgresReason, withDatabase } from '../../tests/helpers/postgres.js';
import { median, round } from '../lib.js';
import { benchPostgres } from './postgres.js';

const TOKEN = 'bench-cluster-token-4f1e9a';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const API_KEY = 'sk-bench-cluster';

export interface ClusterProfile {
  takeovers: number;
  leaseSeconds: number;
  throughput: { groups: number; messages: number; inFlight: number };
}

export interface ClusterBench {
  leaseSeconds: number;
  takeoverMs: number[];
  throughput: Array<{ instances: number; msgsPerS: number; messages: number; replies: number; wallMs: number; cpuMsPerMessage: number }>;
}

let dbCounter = 0;
async function freshDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `chorus_cluster_bench_${process.pid}_${++dbCounter}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`).finally(() => admin.end());
  return {
    url: withDatabase(serverUrl, name),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => c.end());
    },
  };
}

function writeConfig(dir: string, id: string, dbUrl: string, llmUrl: string, groups: string[], leaseSeconds: number): string {
  const path = join(dir, `${id}.yaml`);
  writeFileSync(
    path,
    `data_dir: ${join(dir, `data-${id}`)}
storage: { kind: postgres, url: "${dbUrl}" }
cluster: { instance_id: ${id}, lease_seconds: ${leaseSeconds} }
log_level: warn
llm: { provider: openai, api_key: ${API_KEY}, base_url: ${llmUrl}, model: fake-model, summary_model: fake-small, max_concurrency: 64, max_retries: 0 }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write prose." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: 10000 }
channels:
  web: { host: 127.0.0.1, port: 0, auth_token: ${TOKEN} }
groups:
${groups.map((g) => `  - { channel: web, chat_id: ${g}, title: ${g}, participants: [analyst, writer] }`).join('\n')}
`,
  );
  return path;
}

async function owned(url: string): Promise<number | null> {
  try {
    const body = (await (await fetch(`${url}/readyz`, { headers: AUTH })).json()) as { cluster?: { ownedGroups: number } };
    return body.cluster?.ownedGroups ?? null;
  } catch {
    return null;
  }
}

async function until(pred: () => Promise<boolean>, ms: number, every = 25): Promise<void> {
  const t0 = Date.now();
  while (!(await pred())) {
    if (Date.now() - t0 > ms) throw new Error('cluster bench: timed out');
    await new Promise((r) => setTimeout(r, every));
  }
}

async function cpuSeconds(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: AUTH })).text();
  return Number(/^process_cpu_seconds_total ([\d.e+-]+)$/m.exec(text)?.[1] ?? NaN);
}

/** No round queued or running and no model call in flight on this instance (`/metrics`). */
async function quietNow(url: string): Promise<boolean> {
  const text = await (await fetch(`${url}/metrics`, { headers: AUTH })).text();
  return /^chorus_queue_depth 0$/m.test(text) && /^chorus_llm_in_flight 0$/m.test(text);
}

/** SIGKILL the instance running groups; ms until the other runs them all. */
async function takeoverRun(serverUrl: string, llm: FakeOpenAiServer, n: number, leaseSeconds: number, log: (s: string) => void): Promise<number[]> {
  const db = await freshDatabase(serverUrl);
  const dir = mkdtempSync(join(tmpdir(), 'chorus-bench-cluster-'));
  const groups = Array.from({ length: 10 }, (_, i) => `t${i}`);
  const cfg = { a: writeConfig(dir, 'a', db.url, llm.url, groups, leaseSeconds), b: writeConfig(dir, 'b', db.url, llm.url, groups, leaseSeconds) };
  const live: Record<'a' | 'b', Daemon | null> = { a: await startDaemon(cfg.a, {}, 120_000), b: await startDaemon(cfg.b, {}, 120_000) };
  const out: number[] = [];
  try {
    for (let k = 0; k < n; k++) {
      // Both run groups (the restarted one is handed its share by the other).
      await until(async () => ((await owned(live.a!.url)) ?? 0) > 0 && ((await owned(live.b!.url)) ?? 0) > 0, 120_000, 100);
      const victim: 'a' | 'b' = k % 2 === 0 ? 'a' : 'b';
      const survivor: 'a' | 'b' = victim === 'a' ? 'b' : 'a';
      const d = live[victim]!;
      const t0 = Date.now();
      d.kill('SIGKILL');
      await d.exited;
      await until(async () => (await owned(live[survivor]!.url)) === groups.length, 120_000);
      out.push(Date.now() - t0);
      log(`  takeover ${k + 1}/${n}: ${out.at(-1)} ms (lease ${leaseSeconds} s)`);
      live[victim] = await startDaemon(cfg[victim], {}, 120_000);
    }
  } finally {
    for (const d of Object.values(live)) d?.kill('SIGTERM');
    await Promise.all(Object.values(live).map((d) => d?.exited));
    await db.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

/** Messages per second with `instances` daemons on one database. */
async function throughputRun(serverUrl: string, llm: FakeOpenAiServer, instances: number, o: ClusterProfile['throughput']): Promise<ClusterBench['throughput'][number]> {
  const db = await freshDatabase(serverUrl);
  const dir = mkdtempSync(join(tmpdir(), 'chorus-bench-cluster-'));
  const groups = Array.from({ length: o.groups }, (_, i) => `q${i}`);
  const ids = ['a', 'b', 'c'].slice(0, instances);
  const daemons = await Promise.all(ids.map((id) => startDaemon(writeConfig(dir, id, db.url, llm.url, groups, 10), {}, 120_000)));
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    // Groups spread over the instances before the clock starts.
    await until(async () => {
      const counts = await Promise.all(daemons.map((d) => owned(d.url)));
      return counts.every((c) => (c ?? 0) >= Math.floor(groups.length / instances)) && counts.reduce<number>((s, c) => s + (c ?? 0), 0) === groups.length;
    }, 120_000, 100);
    let next = 0;
    const cpu0 = await Promise.all(daemons.map((d) => cpuSeconds(d.url)));
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: o.inFlight }, async (_, lane) => {
        for (;;) {
          const i = next++;
          if (i >= o.messages) return;
          const d = daemons[i % daemons.length]!;
          const g = groups[(lane + i) % groups.length]!;
          const res = await fetch(`${d.url}/api/groups/${g}/messages`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ text: `@analyst line ${i}`, client_id: `m${i}`, author_name: `u${lane}` }) });
          if (res.status !== 202) throw new Error(`cluster bench: ${res.status} ${await res.text()}`);
        }
      }),
    );
    // Done when every message is in a log and no round is left anywhere. (Messages that wait
    // while their group's round runs are answered together: fewer replies than messages.)
    let quiet = 0;
    await until(async () => {
      const { rows } = await client.query<{ humans: number; inbox: number }>(
        `SELECT (SELECT count(*)::int FROM chorus_entries WHERE entry->>'kind' = 'human') AS humans, (SELECT count(*)::int FROM chorus_inbox) AS inbox`,
      );
      const idle = rows[0]!.humans >= o.messages && rows[0]!.inbox === 0 && (await Promise.all(daemons.map((d) => quietNow(d.url)))).every(Boolean);
      quiet = idle ? quiet + 1 : 0;
      return quiet >= 2;
    }, 300_000, 20);
    const wallMs = Date.now() - t0;
    const cpu1 = await Promise.all(daemons.map((d) => cpuSeconds(d.url)));
    // CPU the Chorus processes spent (user + system), per message: what sizes an instance.
    const cpuMsPerMessage = (cpu1.reduce((a, b) => a + b, 0) - cpu0.reduce((a, b) => a + b, 0)) * 1000 / o.messages;
    // Messages that arrive while their group's round runs are answered together, so the number of
    // replies (and model calls) depends on timing: reported beside the CPU, which it drives.
    const { rows: counted } = await client.query<{ replies: number }>(`SELECT count(*)::int AS replies FROM chorus_entries WHERE entry->>'kind' = 'agent'`);
    return { instances, msgsPerS: o.messages / (wallMs / 1000), messages: o.messages, replies: counted[0]!.replies, wallMs, cpuMsPerMessage };
  } finally {
    await client.end();
    for (const d of daemons) d.kill('SIGTERM');
    await Promise.all(daemons.map((d) => d.exited));
    await db.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every cluster figure of a profile, or null (after "skipped: no PostgreSQL") without a server. */
export async function clusterRuns(p: ClusterProfile, log: (line: string) => void): Promise<ClusterBench | null> {
  const server = await benchPostgres();
  if (!server) {
    log(`skipped: no PostgreSQL (${noPostgresReason})`);
    return null;
  }
  const llm = await startFakeOpenAi({ apiKey: API_KEY, reply: () => ({ text: 'Noted; the numbers add up.' }) });
  try {
    const out: ClusterBench = { leaseSeconds: p.leaseSeconds, takeoverMs: [], throughput: [] };
    if (p.takeovers > 0) out.takeoverMs = await takeoverRun(server.url, llm, p.takeovers, p.leaseSeconds, log);
    for (const n of [1, 2]) {
      const r = await throughputRun(server.url, llm, n, p.throughput);
      log(`  throughput with ${n} instance(s): ${round(r.msgsPerS, 1)} msg/s (${r.messages} messages in ${r.wallMs} ms, ${r.replies} replies; ${round(r.cpuMsPerMessage, 2)} ms of Chorus CPU per message, ${round((r.cpuMsPerMessage * r.messages) / r.replies, 2)} per reply)`);
      out.throughput.push(r);
    }
    return out;
  } finally {
    killAll();
    await llm.close();
    await server.stop();
  }
}

export const CLUSTER_FULL: ClusterProfile = { takeovers: 5, leaseSeconds: 10, throughput: { groups: 10, messages: 600, inFlight: 20 } };
export const CLUSTER_QUICK: ClusterProfile = { takeovers: 3, leaseSeconds: 10, throughput: { groups: 10, messages: 200, inFlight: 20 } };

async function main(): Promise<void> {
  const base = process.env['BENCH_QUICK'] ? CLUSTER_QUICK : CLUSTER_FULL;
  // BENCH_CLUSTER_TAKEOVERS=0: throughput only.
  const p = { ...base, takeovers: Number(process.env['BENCH_CLUSTER_TAKEOVERS'] ?? base.takeovers) };
  const log = (s: string) => process.stderr.write(s + '\n');
  log(`cluster: takeover after SIGKILL (${p.takeovers}×, lease ${p.leaseSeconds} s); throughput ${p.throughput.messages} messages over ${p.throughput.groups} groups, ${p.throughput.inFlight} in flight, 1 and 2 instances`);
  const r = await clusterRuns(p, log);
  if (!r) return;
  const [one, two] = r.throughput;
  console.log('\n| figure | value |\n|---|---|');
  if (r.takeoverMs.length) console.log(`| takeover_ms_median (lease ${r.leaseSeconds} s) | ${median(r.takeoverMs)} (runs: ${r.takeoverMs.join(', ')}) |`);
  console.log(`| cluster_throughput_msgs_per_s_1_instance | ${round(one!.msgsPerS, 1)} |`);
  console.log(`| cluster_throughput_msgs_per_s_2_instances | ${round(two!.msgsPerS, 1)} |`);
  console.log(`| scaling 2/1 | ${round(two!.msgsPerS / one!.msgsPerS, 2)} |`);
  console.log(`| chorus_cpu_ms_per_message (1 / 2 instances) | ${round(one!.cpuMsPerMessage, 2)} / ${round(two!.cpuMsPerMessage, 2)} |`);
  console.log(`| replies (1 / 2 instances) | ${one!.replies} / ${two!.replies} |`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      killAll();
      process.exit(1);
    },
  );
}
