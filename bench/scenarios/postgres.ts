/**
 * The PostgreSQL store beside the file store: the same overhead and throughput scenarios
 * (one instance, the real router, the model taking no time), with the store swapped.
 *
 * - overhead: `router.receive` → the reply handed to the channel, one group, messages one after
 *   another (see overhead.ts); every message is two commits (the message, then the reply).
 * - throughput: `groups` groups, `inFlight` conversations at once (see memory.ts); appends of one
 *   tick share a transaction.
 *
 * The server is a throwaway one started here (tests/helpers/postgres.ts: fsync off, so the
 * figures are the round trips and the server's CPU, not a disk) or the one in `BENCH_PG_URL`.
 * Each run gets a fresh database. On this kind of machine the server shares the two cores with
 * the benchmark. Without a server: "skipped: no PostgreSQL".
 *
 * Run alone (file store and Postgres side by side): `npx tsx bench/scenarios/postgres.ts`
 * (`BENCH_QUICK=1` for the small sizes).
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createApp } from '../../src/app.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { silentLogger } from '../../tests/helpers/logger.js';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { noPostgresReason, startPostgres, withDatabase, type PgServer } from '../../tests/helpers/postgres.js';
import { benchConfig, inbound, now, percentile, round, TimedChannel, UnrecordedLlm } from '../lib.js';
import { overheadRun, type OverheadResult } from './overhead.js';
import { throughputRun, type ThroughputResult } from './memory.js';
import { keepRun, type FileKeepResult } from './files.js';

const REPLY = 'Revenue grew 12% quarter on quarter; the margin is flat because of the new hires. Writer can phrase it for the board.';
const GROUP3 = ['analyst', 'writer', 'critic'];

/** A server for the bench: `BENCH_PG_URL`, else a throwaway one; null when none can run. */
export async function benchPostgres(): Promise<PgServer | null> {
  const url = process.env['BENCH_PG_URL'];
  if (url) return { url, stop: async () => undefined };
  return startPostgres();
}

let dbCounter = 0;

/** A fresh database on the server; dropped by the returned function. */
async function freshDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `chorus_bench_${process.pid}_${++dbCounter}`;
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

async function pgApp(serverUrl: string, llm: FakeLlm) {
  const db = await freshDatabase(serverUrl);
  const config = benchConfig({ dataDir: '/nonexistent-postgres-bench', agents: 3 });
  const store = new PostgresStore({ url: db.url, logger: silentLogger });
  const channel = new TimedChannel();
  const app = await createApp({ config, llm, logger: silentLogger, store, channels: [channel] });
  await app.start();
  return {
    app,
    store,
    channel,
    async close() {
      await app.stop();
      await db.drop();
    },
  };
}

/** Overhead with the Postgres store (as overheadRun). */
export async function pgOverheadRun(serverUrl: string, o: { messages: number; warmup: number }): Promise<OverheadResult & { commitsPerMessage: number }> {
  const b = await pgApp(serverUrl, new FakeLlm({ replies: { analyst: REPLY } }));
  try {
    const { router } = b.app;
    await router.gateway.createGroup({ title: 'Overhead', participants: GROUP3, id: 'room' });
    const samples: number[] = [];
    let c0 = 0;
    for (let i = 0; i < o.warmup + o.messages; i++) {
      if (i === o.warmup) c0 = b.store.stats.commits;
      const posted = b.channel.waitFor('room');
      const t0 = now();
      const res = await router.receive(inbound('room', `@analyst how did revenue do in week ${i}?`));
      if (res.status !== 'recorded') throw new Error(`overhead (postgres): message not recorded (${res.status})`);
      const t1 = await posted;
      if (i >= o.warmup) samples.push(t1 - t0);
      await router.idle();
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99), samples: samples.length, commitsPerMessage: (b.store.stats.commits - c0) / o.messages };
  } finally {
    await b.close();
  }
}

/** Throughput with the Postgres store (as throughputRun, in this process). */
export async function pgThroughputRun(serverUrl: string, o: { groups: number; messages: number; inFlight: number }): Promise<ThroughputResult & { commits: number }> {
  const b = await pgApp(serverUrl, new UnrecordedLlm({ replies: { analyst: 'Noted; the numbers add up.' } }));
  try {
    const { router } = b.app;
    const ids = Array.from({ length: o.groups }, (_, i) => `t${i}`);
    for (let i = 0; i < ids.length; i += 100) await Promise.all(ids.slice(i, i + 100).map((id) => router.gateway.createGroup({ title: id, participants: GROUP3, id })));
    await b.store.flush();
    const c0 = b.store.stats.commits;
    const lanes = Math.min(o.inFlight, ids.length);
    let next = 0;
    let sent = 0;
    const t0 = now();
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        const mine = ids.filter((_, g) => g % lanes === lane);
        for (let r = 0; ; r++) {
          const i = next++;
          if (i >= o.messages) return;
          const id = mine[r % mine.length]!;
          const posted = b.channel.waitFor(id);
          const res = await router.receive(inbound(id, `@analyst check line ${i}`, `p${lane}`));
          if (res.status !== 'recorded') throw new Error(`${id}: message ${i} was ${res.status}`);
          sent++;
          await posted;
        }
      }),
    );
    const wallMs = now() - t0;
    await router.idle();
    const commits = b.store.stats.commits - c0;
    return { msgsPerS: sent / (wallMs / 1000), messages: sent, wallMs, flushes: commits, fsyncs: 0, commits };
  } finally {
    await b.close();
  }
}

/** Keeping a 5 MB photo with the Postgres store (as files.ts does on the file store), on a fresh database. */
export async function pgFileKeepRun(serverUrl: string, o: { samples: number; warmup: number }): Promise<FileKeepResult> {
  const db = await freshDatabase(serverUrl);
  const store = new PostgresStore({ url: db.url, logger: silentLogger });
  try {
    await store.open();
    return await keepRun(store, o);
  } finally {
    await store.close();
    await db.drop();
  }
}

export interface PostgresBench {
  overhead: Array<OverheadResult & { commitsPerMessage: number }>;
  throughput: Array<ThroughputResult & { commits: number }>;
  /** Keeping a 5 MB photo (files.ts), when the profile asks for it. */
  files: FileKeepResult[];
}

/** Every Postgres run of a profile, or null (after logging "skipped: no PostgreSQL") without a server. */
export async function postgresRuns(
  p: { runs: number; overhead: { messages: number; warmup: number }; throughput: { groups: number; messages: number; inFlight: number }; files?: { samples: number; warmup: number } },
  log: (line: string) => void,
): Promise<PostgresBench | null> {
  const server = await benchPostgres();
  if (!server) {
    log(`skipped: no PostgreSQL (${noPostgresReason})`);
    return null;
  }
  try {
    const out: PostgresBench = { overhead: [], throughput: [], files: [] };
    for (let i = 0; i < p.runs; i++) {
      const t0 = Date.now();
      out.overhead.push(await pgOverheadRun(server.url, p.overhead));
      log(`  overhead (postgres) run ${i + 1}/${p.runs} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
    for (let i = 0; i < p.runs; i++) {
      const t0 = Date.now();
      out.throughput.push(await pgThroughputRun(server.url, p.throughput));
      log(`  throughput (postgres) run ${i + 1}/${p.runs} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
    for (let i = 0; p.files && i < p.runs; i++) {
      const t0 = Date.now();
      out.files.push(await pgFileKeepRun(server.url, p.files));
      log(`  keeping a 5 MB photo (postgres) run ${i + 1}/${p.runs} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
    return out;
  } finally {
    await server.stop();
  }
}

/** `npx tsx bench/scenarios/postgres.ts`: the file store and the Postgres store, side by side. */
async function main(): Promise<void> {
  const { FULL, QUICK } = await import('../run.js');
  const p = process.env['BENCH_QUICK'] ? QUICK : FULL;
  const log = (s: string) => process.stderr.write(s + '\n');
  log(`overhead and throughput, file store vs PostgreSQL (${p.name}: ${p.runs} runs; overhead ${p.overhead.messages} messages; throughput ${p.throughput.messages} messages over ${p.throughput.groups} groups, ${p.throughput.inFlight} in flight)`);
  const fileOverhead: OverheadResult[] = [];
  const fileThroughput: ThroughputResult[] = [];
  for (let i = 0; i < p.runs; i++) fileOverhead.push(await overheadRun(p.overhead));
  log('  overhead (files) done');
  for (let i = 0; i < p.runs; i++) fileThroughput.push(await throughputRun({ ...p.throughput, fsync: 'always' }));
  log('  throughput (files, fsync always) done');
  const pgr = await postgresRuns(p, log);
  const med = (xs: number[]) => round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!, 2);
  const rows: Array<[string, string, string]> = [
    ['overhead_p50_ms', String(med(fileOverhead.map((r) => r.p50))), pgr ? String(med(pgr.overhead.map((r) => r.p50))) : 'skipped'],
    ['overhead_p99_ms', String(med(fileOverhead.map((r) => r.p99))), pgr ? String(med(pgr.overhead.map((r) => r.p99))) : 'skipped'],
    ['throughput_msgs_per_s', String(med(fileThroughput.map((r) => r.msgsPerS))), pgr ? String(med(pgr.throughput.map((r) => r.msgsPerS))) : 'skipped'],
  ];
  console.log('\n| figure (median) | files (fsync always) | postgres |\n|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  if (pgr) {
    console.log(`\npostgres: ${med(pgr.overhead.map((r) => r.commitsPerMessage))} commits per message in the overhead run; ` + `throughput runs: ${pgr.throughput.map((r) => `${r.messages} messages in ${r.commits} commits`).join(', ')}`);
    console.log(`runs: overhead p99 ${pgr.overhead.map((r) => round(r.p99, 2)).join(' / ')} ms; throughput ${pgr.throughput.map((r) => round(r.msgsPerS, 0)).join(' / ')} msg/s`);
  }
  console.log(`files: overhead p99 ${fileOverhead.map((r) => round(r.p99, 2)).join(' / ')} ms; throughput ${fileThroughput.map((r) => round(r.msgsPerS, 0)).join(' / ')} msg/s`);
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
