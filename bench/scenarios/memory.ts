/**
 * Scenarios that need a fresh process (run in a child forked with --expose-gc, see bench/child.ts):
 *
 * - rss: RSS with `groups` groups × 4 agents × `messages` human messages (each answered, so twice as
 *   many transcript entries) loaded from disk, minus RSS of the same app started on an empty data
 *   directory. The data is made by driving one real group through the router, then copying its
 *   files under new ids (`makeRssData`, run in the parent).
 * - throughput: `groups` groups, `messages` in total, LLM latency 0; every group is a person who
 *   sends the next message when the previous reply arrived (100 conversations at once), with
 *   fsync always or never.
 * - soak: the same load for 100,000 messages; RSS and heap after a full GC at set points.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { AGENT_IDS, benchApp, inbound, now, tempDir, UnrecordedLlm, type BenchApp, type Fsync } from '../lib.js';

const TEMPLATE = 'tplgroupzz';
const FOUR = AGENT_IDS.slice(0, 4);

/** Fill a directory with `groups` copies of one group that had `messages` answered messages. */
export async function makeRssData(o: { groups: number; messages: number }): Promise<{ dir: string; remove: () => Promise<void>; groupBytes: number }> {
  const tmp = await tempDir('rss');
  const src = join(tmp.dir, 'template');
  const llm = new FakeLlm({ fallback: (q) => (q.mustReply ? `${q.agent?.name} here: for item ${Math.random().toString(36).slice(2, 8)} I would keep the current plan and revisit it next week.` : '[PASS]') });
  const b = await benchApp({ llm, agents: 4, dir: src });
  await b.app.router.gateway.createGroup({ title: 'Template', participants: [...FOUR], id: TEMPLATE });
  for (let i = 0; i < o.messages; i++) {
    await b.app.router.receive(inbound(TEMPLATE, `@${FOUR[i % 4]} what about item ${i} on the list?`));
    await b.app.router.idle();
  }
  await b.app.stop();
  // The template group's files (log segments and checkpoint), copied under new ids.
  const files: Array<[string, string]> = [];
  for (const rel of await listFiles(join(src, 'groups', TEMPLATE))) files.push([rel, await readFile(join(src, 'groups', TEMPLATE, rel), 'utf8')]);
  const out = join(tmp.dir, 'data');
  for (let i = 0; i < o.groups; i++) {
    const id = `grp${String(i).padStart(5, '0')}`;
    for (const [rel, text] of files) {
      await mkdir(join(out, 'groups', id, rel, '..'), { recursive: true });
      await writeFile(join(out, 'groups', id, rel), text.replaceAll(TEMPLATE, id));
    }
  }
  return { dir: out, remove: tmp.remove, groupBytes: files.reduce((n, [, t]) => n + t.length, 0) };
}

/** Paths of every file under `dir`, relative to it. */
async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? join(prefix, e.name) : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out;
}

function gcRss(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().rss / (1024 * 1024);
}

/** In the child: RSS empty, then RSS with `dir` loaded. Returns MB. */
export async function rssMeasure(o: { dir: string }): Promise<{ emptyMb: number; loadedMb: number; groups: number }> {
  const llm = new FakeLlm();
  const empty = await benchApp({ llm, agents: 4 });
  const emptyMb = gcRss();
  const loaded = await benchApp({ llm, agents: 4, dir: o.dir });
  const groups = loaded.app.router.gateway.listGroups().length;
  const loadedMb = gcRss();
  await loaded.app.stop();
  await empty.close();
  return { emptyMb, loadedMb, groups };
}

export interface ThroughputResult {
  msgsPerS: number;
  messages: number;
  wallMs: number;
  /** Store flushes (one write + sync per group file written) and syncs during the run. */
  flushes: number;
  fsyncs: number;
}

const GROUP3 = ['analyst', 'writer', 'critic'];

/**
 * `messages` `@analyst` messages spread over the groups, at most one per group waiting for its
 * reply (a second message to a busy group would be answered together with the first), so
 * min(groups, inFlight) messages are in flight. Every message is one person's, who posts the next
 * one once the reply is delivered.
 */
async function conversations(b: BenchApp, ids: string[], messages: number, inFlight: number, offset: number): Promise<number> {
  const { router } = b.app;
  let next = 0;
  let sent = 0;
  const lanes = Math.min(inFlight, ids.length);
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      // Lane k serves groups k, k + lanes, …: one message per group in flight.
      const mine = ids.filter((_, g) => g % lanes === lane);
      for (let r = 0; ; r++) {
        const i = next++;
        if (i >= messages) return;
        const id = mine[r % mine.length]!;
        const posted = b.channel!.waitFor(id);
        const res = await router.receive(inbound(id, `@analyst check line ${offset + i}`, `p${lane}`));
        if (res.status !== 'recorded') throw new Error(`${id}: message ${offset + i} was ${res.status}`);
        sent++;
        await posted;
      }
    }),
  );
  return sent;
}

async function makeGroups(b: BenchApp, n: number, prefix: string): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  for (let i = 0; i < ids.length; i += 100) await Promise.all(ids.slice(i, i + 100).map((id) => b.app.router.gateway.createGroup({ title: id, participants: GROUP3, id })));
  await b.store.flush();
  return ids;
}

/**
 * Throughput with the model taking no time: wall time from the first post to the last reply
 * delivered, `messages` / that time. The messages are spread over `groups` groups.
 */
export async function throughputRun(o: { groups: number; messages: number; inFlight: number; fsync: Fsync }): Promise<ThroughputResult> {
  const llm = new UnrecordedLlm({ replies: { analyst: 'Noted; the numbers add up.' } });
  const b = await benchApp({ llm, agents: 3, fsync: o.fsync });
  try {
    const ids = await makeGroups(b, o.groups, 't');
    const s0 = { ...b.store.stats };
    const t0 = now();
    const sent = await conversations(b, ids, o.messages, o.inFlight, 0);
    const wallMs = now() - t0;
    await b.app.router.idle();
    return { msgsPerS: sent / (wallMs / 1000), messages: sent, wallMs, flushes: b.store.stats.flushes - s0.flushes, fsyncs: b.store.stats.fsyncs - s0.fsyncs };
  } finally {
    await b.close();
  }
}

export interface SoakPoint {
  messages: number;
  rssMb: number;
  heapMb: number;
  /** Rate of the stretch that ended at this point. */
  msgsPerS: number;
  /** Client ids remembered for dedupe, all groups (kept 24 hours: the soak's traffic all is). */
  dedupeIds: number;
}

/**
 * Soak: `messages` over `groups` groups as in the throughput run (model 0 ms); at each point in
 * `points` every conversation stops, the store is flushed and RSS and the heap are read after a
 * full GC. Memory must level off: nothing may grow with the length of the history.
 */
export async function soakRun(o: { groups: number; points: number[]; fsync: Fsync }): Promise<{ points: SoakPoint[]; entriesPerGroup: number }> {
  const llm = new UnrecordedLlm({ replies: { analyst: 'Noted; the numbers add up.' } });
  const b = await benchApp({ llm, agents: 3, fsync: o.fsync });
  try {
    const ids = await makeGroups(b, o.groups, 'k');
    const out: SoakPoint[] = [];
    let sent = 0;
    for (const point of o.points) {
      const t0 = now();
      const n = await conversations(b, ids, point - sent, o.groups, sent);
      const ms = now() - t0;
      sent += n;
      await b.app.router.idle();
      await b.app.router.groups.settle();
      await b.store.flush();
      const rssMb = gcRss();
      const dedupeIds = ids.reduce((k, id) => k + b.app.router.groups.get(id)!.seen.size, 0);
      out.push({ messages: sent, rssMb, heapMb: process.memoryUsage().heapUsed / 2 ** 20, msgsPerS: n / (ms / 1000), dedupeIds });
    }
    const entries = ids.reduce((n, id) => n + b.app.router.groups.get(id)!.nextSeq - 1, 0);
    return { points: out, entriesPerGroup: entries / ids.length };
  } finally {
    await b.close();
  }
}

/** Count files under a directory (for reports). */
export async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n++;
  return n;
}
