/**
 * Several instances on one PostgreSQL database: two real daemons (`src/main.ts
 * start`) share a database; 300 messages over 10 web groups are posted to both of them (each
 * group's messages alternate between the instances, one after the other); instance A is killed
 * with SIGKILL twice mid-run and restarted. Afterwards, read from the database: every
 * acknowledged message is in its group's log once and in the order it was posted, every round
 * finished, no round turn answered twice, every @mention answered, the mailbox rule held. Live
 * events reached the SSE stream of the instance that never died, for groups it did not run too.
 * The takeover time (SIGKILL → the survivor runs every group) is measured and printed; the test
 * holds it only to a generous bound (speed is `npm run bench`'s business).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { openSse, type SseConnection } from '../channels/web/sse-client.js';
import { checkInvariants, prng, snapshotOf } from '../reliability/invariants.js';
import { killAll, startDaemon, type Daemon } from '../reliability/daemon.js';
import { crashMessageText, replyFor } from '../reliability/workload.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { CapturingLogger } from '../helpers/logger.js';

const SEED = Number(process.env.CHORUS_CLUSTER_SEED ?? 1616);
const TOTAL = 300;
const GROUPS = Array.from({ length: 10 }, (_, i) => `c${i}`);
const LEASE_SECONDS = 3;
const API_KEY = 'sk-cluster-3e8d1a6c5b-SECRET';
const WEB_TOKEN = 'web-cluster-7d2f4b9a1c-SECRET';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };

let llm: FakeOpenAiServer;
let db: TestDatabase | null = null;
const dirs: string[] = [];

beforeAll(async () => {
  db = await testDatabase('cluster');
  const rand = prng(SEED + 1);
  llm = await startFakeOpenAi({
    apiKey: API_KEY,
    reply: (req) => {
      const msgs = req.body['messages'] as Array<{ role: string; content: string }>;
      const system = msgs[0]?.content ?? '';
      const id = /You are \w+ \(@([a-z0-9_-]+)\)/.exec(system)?.[1] ?? '?';
      const turn = msgs.at(-1)?.content ?? '';
      const mustReply = !turn.includes('Reply only if you can add something');
      return { text: replyFor(id, turn, mustReply), delayMs: 5 + Math.floor(rand() * 25) };
    },
  });
}, 120_000);

afterAll(async () => {
  killAll();
  await llm?.close();
  await db?.drop().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string, instanceId: string, url: string): string {
  const path = join(dir, `chorus-${instanceId}.yaml`);
  writeFileSync(
    path,
    `data_dir: ${join(dir, `data-${instanceId}`)}
storage: { kind: postgres, url: "${url}" }
cluster: { instance_id: ${instanceId}, lease_seconds: ${LEASE_SECONDS} }
log_level: ${process.env.CHORUS_CLUSTER_DEBUG ? 'debug' : 'info'}
llm:
  provider: openai
  api_key: ${API_KEY}
  base_url: ${llm.url}
  model: fake-model
  summary_model: fake-small
  max_concurrency: 8
  timeout_seconds: 10
  max_retries: 0
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write prose." }
  - { id: critic, name: Critic, persona: "You critique ideas." }
group_defaults: { cooldown_seconds: 0, history_turns: 1000 }
limits: { user_messages_per_minute: 10000, max_message_chars: 8000 }
channels:
  web: { host: 127.0.0.1, port: 0, auth_token: ${WEB_TOKEN} }
groups:
${GROUPS.map((g) => `  - { channel: web, chat_id: ${g}, title: Room ${g}, participants: [analyst, writer, critic] }`).join('\n')}
`,
  );
  return path;
}

interface ClusterInfo {
  ok: boolean;
  instanceId: string;
  ownedGroups: number;
  liveInstances: number;
}

async function clusterInfo(url: string): Promise<ClusterInfo | null> {
  try {
    const body = (await (await fetch(`${url}/readyz`, { headers: AUTH })).json()) as { cluster?: ClusterInfo };
    return body.cluster ?? null;
  } catch {
    return null;
  }
}

async function until(what: string, pred: () => Promise<boolean>, ms = 30_000, every = 50): Promise<number> {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
  return Date.now() - start;
}

describe('several instances on one PostgreSQL database', () => {
  it('two daemons, 300 messages to both, SIGKILL ×2: nothing acknowledged lost, nothing answered twice, order kept', async (ctx) => {
    if (!db) return ctx.skip();
    const dir = mkdtempSync(join(tmpdir(), 'chorus-cluster-'));
    dirs.push(dir);
    const cfgA = writeConfig(dir, 'a', db.url);
    const cfgB = writeConfig(dir, 'b', db.url);
    // Both start at once and race to create the declared groups: each is created exactly once.
    // Generous start-up limit: a loaded CI machine starts two daemons slowly.
    const [a0, b] = await Promise.all([startDaemon(cfgA, {}, 90_000), startDaemon(cfgB, {}, 90_000)]);
    let a: Daemon | null = a0;
    const sseB: SseConnection = await openSse(`${b.url}/api/events?token=${WEB_TOKEN}`);
    await until('both instances to see each other and run all groups together', async () => {
      const [ia, ib] = await Promise.all([clusterInfo(a0.url), clusterInfo(b.url)]);
      return !!ia && !!ib && ia.liveInstances === 2 && ia.ownedGroups + ib.ownedGroups === GROUPS.length;
    });

    const acked = new Map<string, Set<string>>(GROUPS.map((g) => [g, new Set<string>()]));
    /** Per group, client ids in the order they were acknowledged (each waited for the previous). */
    const order = new Map<string, string[]>(GROUPS.map((g) => [g, []]));
    const ackCount = () => [...acked.values()].reduce((n, s) => n + s.size, 0);
    const statuses = new Map<string, number>();
    const takeovers: number[] = [];
    const refused: string[] = [];
    const trail: string[] = [];
    const t0 = Date.now();

    const post = async (groupId: string, i: number): Promise<void> => {
      const body = JSON.stringify({ text: crashMessageText(i), client_id: `m${i}`, author_name: 'Maya' });
      for (let attempt = 0; attempt < 200; attempt++) {
        // Alternate between the instances; a dead one is skipped (the message goes to the other).
        const preferA = (Math.floor(i / GROUPS.length) + attempt) % 2 === 0;
        const target = preferA && a ? a : b;
        let res: Response;
        try {
          res = await fetch(`${target.url}/api/groups/${groupId}/messages`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
        } catch {
          await new Promise((r) => setTimeout(r, 20));
          continue; // killed under us: not acknowledged, send it again (same client_id)
        }
        const text = await res.text();
        if (res.status === 202) {
          const status = (JSON.parse(text) as { status: string }).status;
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          const key = `${target === b ? 'b' : 'a'}:${status}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          trail.push(`${groupId} m${i} → ${target === b ? 'b' : 'a'} ${status} +${Date.now() - t0}ms attempt ${attempt}`);
          acked.get(groupId)!.add(`m${i}`);
          order.get(groupId)!.push(`m${i}`);
          return;
        }
        if (res.status !== 503) refused.push(`${groupId} m${i}: ${res.status} ${text}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      refused.push(`${groupId} m${i}: gave up`);
    };

    let logsA = '';
    const killA = async () => {
      const victim = a!;
      logsA += victim.output();
      a = null;
      const t0 = Date.now();
      victim.kill('SIGKILL');
      await victim.exited;
      await until('the survivor to run every group', async () => (await clusterInfo(b.url))?.ownedGroups === GROUPS.length, 30_000, 25);
      takeovers.push(Date.now() - t0);
      a = await startDaemon(cfgA, {}, 90_000);
    };

    const rand = prng(SEED);
    const killAt = [80 + Math.floor(rand() * 40), 180 + Math.floor(rand() * 40)];
    let kills = 0;
    const killer = (async () => {
      for (const at of killAt) {
        await until(`${at} acknowledgements`, async () => ackCount() >= at, 60_000, 10);
        // Kill A while it runs groups (after a restart it first has to be given some).
        await until('A to run some groups', async () => ((a && (await clusterInfo(a.url))?.ownedGroups) ?? 0) >= 2, 30_000).catch(() => undefined);
        await killA();
        kills++;
      }
    })();
    await Promise.all(
      GROUPS.map(async (groupId, gi) => {
        for (let i = gi; i < TOTAL; i += GROUPS.length) {
          await post(groupId, i);
          // A person types: a little pause now and then so the kills land mid-run.
          if (i % 7 === 0) await new Promise((r) => setTimeout(r, 10));
        }
      }),
    );
    await killer;
    expect(refused).toEqual([]);
    expect(ackCount()).toBe(TOTAL);
    expect(kills).toBe(2);
    // Both paths were taken: recorded by the owner, and handed over through the inbox.
    expect(statuses.get('recorded') ?? 0).toBeGreaterThan(0);
    expect(statuses.get('forwarded') ?? 0).toBeGreaterThan(0);

    // Quiet: the inbox is empty and no round is left in any group.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    let quiet = 0;
    try {
      await until(
        'every forwarded message recorded and every round finished',
        async () => {
          const inbox = await client.query('SELECT count(*)::int AS n FROM chorus_inbox');
          if (inbox.rows[0].n !== 0) return false;
          const [qa, qb, ia, ib] = await Promise.all([metricsQuiet(a!.url), metricsQuiet(b.url), clusterInfo(a!.url), clusterInfo(b.url)]);
          // Every group has a running owner (rounds of a group between owners are counted nowhere).
          quiet = qa && qb && (ia?.ownedGroups ?? 0) + (ib?.ownedGroups ?? 0) === GROUPS.length ? quiet + 1 : 0;
          return quiet >= 3;
        },
        60_000,
        200,
      );
      // Graceful stops free the leases; the last one running writes every checkpoint.
      a!.kill('SIGTERM');
      expect((await a!.exited).code).toBe(0);
      logsA += a!.output();
      b.kill('SIGTERM');
      expect((await b.exited).code).toBe(0);
      const leftover = await client.query('SELECT count(*)::int AS n FROM chorus_inbox');
      expect(leftover.rows[0].n).toBe(0);
    } finally {
      await client.end();
    }

    const store = new PostgresStore({ url: db.url, logger: new CapturingLogger() });
    const snap = await snapshotOf(store);
    await store.close();
    expect(snap.groups.map((g) => g.id).sort()).toEqual(GROUPS);
    expect(checkInvariants(snap, { acked, finished: true }), `seed ${SEED}`).toEqual([]);

    const problems: string[] = [];
    for (const g of snap.groups) {
      // Per-group order: the log holds the messages in the order they were acknowledged.
      const logged = g.transcript.filter((e) => e.kind === 'human' && e.platformMessageId).map((e) => e.platformMessageId!);
      if (logged.join(',') !== order.get(g.id)!.join(',')) problems.push(`${g.id}: log order ${logged.join(',')} ≠ acknowledged order ${order.get(g.id)!.join(',')}`);
      // Every @mention answered: a reply of that agent follows the message.
      for (const e of g.transcript) {
        if (e.kind !== 'human') continue;
        for (const agent of ['analyst', 'writer', 'critic']) {
          const named = e.text.includes(`@${agent}`) || e.text.includes('@all');
          if (named && !g.transcript.some((r) => r.kind === 'agent' && r.agentId === agent && r.seq > e.seq)) problems.push(`${g.id}: @${agent} in ${e.id} never answered`);
        }
      }
    }
    if (problems.length && process.env.CHORUS_CLUSTER_DEBUG) {
      const bad = problems.map((p) => p.split(':')[0]!);
      console.log(trail.filter((t) => bad.includes(t.split(' ')[0]!)).join('\n'));
      console.log(logsA.concat(b.output()).split('\n').filter((l) => bad.some((g) => l.includes(`"${g}"`))).map((l) => l.slice(0, 400)).join('\n'));
    }
    expect(problems).toEqual([]);

    // Live events on an instance for groups another instance ran: B's stream (B never died) saw
    // agent replies of every group, each one as it is in the log.
    const onDisk = new Map(snap.groups.flatMap((g) => g.transcript.map((e) => [`${g.id}|${e.id}`, e.text] as const)));
    const seen = sseB.events.filter((ev) => ev.event === 'message' && ev.data?.entry?.kind === 'agent').map((ev) => ({ groupId: ev.data.groupId as string, id: ev.data.entry.id as string, text: ev.data.entry.text as string }));
    sseB.close();
    expect(seen.filter((s) => onDisk.get(`${s.groupId}|${s.id}`) !== s.text)).toEqual([]);
    expect(new Set(seen.map((s) => s.groupId)).size).toBe(GROUPS.length);
    const replies = snap.groups.reduce((n, g) => n + g.transcript.filter((e) => e.kind === 'agent').length, 0);
    // A reply committed in the instant before a SIGKILL may never be announced; nearly all are.
    expect(seen.length).toBeGreaterThan(replies * 0.9);

    const logs = `${b.output()}`;
    expect(logs).not.toContain(API_KEY);
    expect(logs).not.toContain(WEB_TOKEN);
    if (process.env.CHORUS_CLUSTER_DEBUG) {
      const all = `${logsA}\n${b.output()}`;
      for (const m of ['cannot renew', 'stopped running a group', 'handing a group over', 'took over a group', 'now running a group', 'write refused', 'could not be recorded yet', 'lease tick failed'])
        console.log(`[cluster-debug] ${m}: ${all.split('\n').filter((l) => l.includes(m)).length}`);
    }
    // Measured, not asserted against the lease (a loaded CI machine may add a tick); see bench.
    console.log(`[cluster] takeover after SIGKILL (lease ${LEASE_SECONDS}s): ${takeovers.map((t) => `${t} ms`).join(', ')}; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    for (const t of takeovers) expect(t).toBeLessThan(LEASE_SECONDS * 1000 * 5);
  }, 180_000);
});

async function metricsQuiet(url: string): Promise<boolean> {
  try {
    const text = await (await fetch(`${url}/metrics`, { headers: AUTH })).text();
    const depth = Number(/^chorus_queue_depth (\d+)/m.exec(text)?.[1] ?? NaN);
    const inFlight = Number(/^chorus_llm_in_flight (\d+)/m.exec(text)?.[1] ?? NaN);
    return depth === 0 && inFlight === 0;
  } catch {
    return false;
  }
}
