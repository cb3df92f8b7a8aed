/**
 * Scenarios that need a fresh process (run in a child forked with --expose-gc, see bench/child.ts):
 *
 * - rss: RSS with `groups` groups × 4 agents × `messages` human messages (each answered, so twice as
 *   many transcript entries) loaded from disk, minus RSS of the same app started on an empty data
 *   directory. The data is made by driving one real group through the router, then copying its
 *   files under new ids (`makeRssData`, run in the parent).
 * - throughput: `groups` groups, `messages` in total, LLM latency 0; every group is a person who
 *   sends the next message when the previous reply arrived (100 conversations at once). Also
 *   records memory after a warm-up (the first 10%) and at the end (soak).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { AGENT_IDS, benchApp, inbound, now, tempDir } from '../lib.js';

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
  warmRssMb: number;
  endRssMb: number;
  warmHeapMb: number;
  endHeapMb: number;
}

export async function throughputRun(o: { groups: number; messages: number }): Promise<ThroughputResult> {
  const llm = new FakeLlm({ replies: { analyst: 'Noted; the numbers add up.' } });
  const b = await benchApp({ llm, agents: 3 });
  try {
    const { router } = b.app;
    const ids = Array.from({ length: o.groups }, (_, i) => `t${i}`);
    await Promise.all(ids.map((id) => router.gateway.createGroup({ title: id, participants: ['analyst', 'writer', 'critic'], id })));
    const perGroup = Math.ceil(o.messages / o.groups);
    const warmAt = Math.max(1, Math.floor(perGroup / 10));
    let warmed = 0;
    let warm: { rss: number; heap: number } | null = null;
    let releaseWarm: () => void = () => undefined;
    const warmGate = new Promise<void>((r) => (releaseWarm = r));
    let sent = 0;
    const t0 = now();
    let pausedMs = 0;
    await Promise.all(
      ids.map(async (id) => {
        for (let i = 0; i < perGroup; i++) {
          if (i === warmAt) {
            // Every conversation pauses once at the end of the warm-up so memory is read at rest.
            if (++warmed === ids.length) {
              const p0 = now();
              await router.idle();
              await b.store.flush();
              warm = { rss: gcRss(), heap: process.memoryUsage().heapUsed / 2 ** 20 };
              pausedMs = now() - p0;
              releaseWarm();
            }
            await warmGate;
          }
          const posted = b.channel!.waitFor(id);
          const res = await router.receive(inbound(id, `@analyst check line ${i}`));
          if (res.status !== 'recorded') throw new Error(`throughput: ${res.status}`);
          sent++;
          await posted;
        }
      }),
    );
    await router.idle();
    const wall = now() - t0 - pausedMs;
    await b.store.flush();
    const end = { rss: gcRss(), heap: process.memoryUsage().heapUsed / 2 ** 20 };
    const w = warm ?? end;
    return { msgsPerS: sent / (wall / 1000), messages: sent, warmRssMb: w.rss, endRssMb: end.rss, warmHeapMb: w.heap, endHeapMb: end.heap };
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
