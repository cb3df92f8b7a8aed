/**
 * Leases and fencing between two instances in one process, on a real PostgreSQL database (short
 * leases): a stalled owner whose lease was taken over can never write again (its append is
 * refused inside the store's transaction and its message answered 503, nothing kept); the new
 * owner continues the same log; a message posted to the instance that does not run the group is
 * handed over through the inbox and recorded by the owner, once; a group created on one instance
 * is listed by the other; admin changes on a non-owner answer 409 naming the owner. Groups spread
 * over the instances that join, and a slow tick never holds back the renewal of the leases.
 *
 * Each test stops the instances it started (the spreading tests have databases of their own):
 * none counts on what an earlier test left running.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { InboundMessage } from '../../src/core/types.js';
import { silentLogger } from '../../src/core/silentLogger.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { toWire } from '../../src/cluster/PgCluster.js';

let db: TestDatabase | null = null;
/** Databases of single tests, dropped at the end. */
const ownDbs: TestDatabase[] = [];
const apps: App[] = [];

beforeAll(async () => {
  db = await testDatabase('fencing');
}, 120_000);

afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
});

afterAll(async () => {
  for (const d of [db, ...ownDbs]) await d?.drop().catch(() => undefined);
});

async function instance(id: string, url = db!.url): Promise<App> {
  const { config } = parseConfigText(
    `storage: { kind: postgres, url: "${url}" }
cluster: { instance_id: ${id}, lease_seconds: 3 }
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse." }
channels: { web: { enabled: false } }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 10000 }
`,
    `${id}.yaml`,
    {},
  );
  const app = await createApp({ config, llm: new FakeLlm({ fallback: (req) => `${req.agent?.id} answers` }), logger: silentLogger, channels: [] });
  apps.push(app);
  await app.start();
  return app;
}

function msg(id: string, text = `@analyst hello ${id}`): InboundMessage {
  return { channel: 'web', chatId: 'g1', messageId: id, author: { id: 'maya', name: 'Maya' }, text, ts: Date.now() };
}

async function until(what: string, pred: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('cluster leases and fencing (PostgreSQL)', () => {
  it('a stalled owner is fenced off after a takeover; the inbox hands messages to the owner once', async (ctx) => {
    if (!db) return ctx.skip();
    const a = await instance('a');
    await a.gateway.createGroup({ title: 'G', participants: ['analyst'], id: 'g1' });
    expect(a.cluster!.owns('g1')).toBe(true);
    expect((await a.host.handle({ kind: 'message', message: msg('m1') })).status).toBe('recorded');
    await a.router.idle();

    const b = await instance('b');
    // B learns about the group A created (it was not listening then) and keeps a read-only copy.
    await until('b to list g1', () => b.gateway.listGroups().some((g) => g.id === 'g1'));
    expect(b.cluster!.owns('g1')).toBe(false);
    // Changes go to the owner: 409 naming it.
    await expect(b.gateway.updateConfig('g1', { cooldown_seconds: 5 })).rejects.toMatchObject({ status: 409, code: 'not_owner', message: expect.stringContaining('"a"') });

    // A message posted to B is kept in the inbox (acknowledged) and recorded by A, once.
    const fwd = await b.host.handle({ kind: 'message', message: msg('m2') });
    expect(fwd.status).toBe('forwarded');
    expect(fwd.inboxId).toMatch(/^\d+$/);
    expect((await b.host.handle({ kind: 'message', message: msg('m2') })).status).toBe('duplicate');
    await until('a to record m2', async () => (await a.gateway.messages('g1', { limit: 50 })).some((e) => e.platformMessageId === 'm2'));

    // A stalls: it stops renewing but still believes it runs g1. B takes the lease over.
    a.cluster!.stopTaking();
    await until('b to take g1 over', () => b.cluster!.owns('g1'));
    expect(a.cluster!.owns('g1')).toBe(true); // A does not know yet

    // A's write is refused inside the append transaction: 503 for the sender, nothing kept.
    const stale = await a.host.handle({ kind: 'message', message: msg('stale') });
    expect(stale).toMatchObject({ status: 'rejected', code: 'unavailable' });
    // B continues the same log.
    expect((await b.host.handle({ kind: 'message', message: msg('m3') })).status).toBe('recorded');
    await b.router.idle();

    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const { rows } = await c.query<{ seq: string; entry: { platformMessageId?: string; kind: string } }>(`SELECT seq, entry FROM chorus_entries WHERE group_id = 'g1' ORDER BY seq`);
      const humans = rows.filter((r) => r.entry.kind === 'human').map((r) => r.entry.platformMessageId);
      expect(humans).toEqual(['m1', 'm2', 'm3']);
      // Seqs without a gap or a repeat: one writer at a time.
      expect(rows.map((r) => Number(r.seq))).toEqual(rows.map((_, i) => i + 1));
      const lease = await c.query<{ owner: string; epoch: string }>(`SELECT owner, epoch FROM chorus_group_leases WHERE key = 'g1'`);
      expect(lease.rows[0]).toMatchObject({ owner: 'b', epoch: '2' });
      expect((await c.query('SELECT count(*)::int AS n FROM chorus_inbox')).rows[0].n).toBe(0);
    } finally {
      await c.end();
    }
    const readyB = b.gateway.readiness();
    expect(readyB.cluster).toMatchObject({ ok: true, instanceId: 'b', ownedGroups: 1 });
    const metrics = await b.metrics.text();
    expect(metrics).toMatch(/^chorus_cluster_owned_groups 1$/m);
    expect(metrics).toMatch(/^chorus_cluster_lease_takeovers_total 1$/m);
  }, 60_000);
});

describe('spreading groups (PostgreSQL)', () => {
  it('groups created on one instance spread over three; each is run by exactly one', async (ctx) => {
    if (!db) return ctx.skip();
    // A database of its own: only these three instances and these six groups.
    const own = (await testDatabase('spreading'))!;
    ownDbs.push(own);
    const url = own.url;
    const ids = ['s1', 's2', 's3', 's4', 's5', 's6'];
    const x = await instance('x', url);
    for (const id of ids) await x.gateway.createGroup({ title: id, participants: ['analyst'], id });
    // Alone, x holds every group whatever its ticks did meanwhile (its share is all of them).
    expect(x.cluster!.ownedGroups().sort()).toEqual(ids);
    const [y, z] = await Promise.all([instance('y', url), instance('z', url)]);
    const mine = (a: App) => a.cluster!.ownedGroups().sort();
    // Three live instances: each takes at most 2, so x hands 4 of its 6 over, one per tick (half a
    // second). The deadline is only there to end a run that never converges.
    await until('the groups to spread', () => [x, y, z].every((a) => mine(a).length === 2), 30_000);
    const all = [x, y, z].flatMap(mine).sort();
    expect(all).toEqual(ids); // each exactly once
    // Handed-over groups keep working on their new owner, and a message to any instance lands once.
    for (const [i, id] of ids.entries()) {
      const via = [x, y, z][i % 3]!;
      const res = await via.host.handle({ kind: 'message', message: { channel: 'web', chatId: id, messageId: `spread-${id}`, author: { id: 'maya', name: 'Maya' }, text: `@analyst hi ${id}`, ts: Date.now() } });
      expect(['recorded', 'forwarded']).toContain(res.status);
    }
    for (const id of ids) {
      await until(`${id} answered`, async () => (await y.gateway.messages(id, { limit: 20 })).some((e) => e.kind === 'agent'));
      // Another instance reads the shared log, which may lag the owner's memory by the write in
      // flight (the owner's round starts while the message is being written): wait for both there.
      const humans = async () => (await z.gateway.messages(id, { limit: 20 })).filter((e) => e.kind === 'human');
      await until(`${id} answered, read on z`, async () => (await z.gateway.messages(id, { limit: 20 })).some((e) => e.kind === 'agent'));
      expect((await humans()).map((e) => e.platformMessageId)).toEqual([`spread-${id}`]);
    }
  }, 90_000);
});

describe('spreading to a slow instance (PostgreSQL)', () => {
  it('a group handed over waits for the instance below its share instead of coming back', async (ctx) => {
    if (!db) return ctx.skip();
    const own = (await testDatabase('slow_taker'))!;
    ownDbs.push(own);
    const x = await instance('x', own.url);
    for (const id of ['h1', 'h2']) await x.gateway.createGroup({ title: id, participants: ['analyst'], id });
    const c = new pg.Client({ connectionString: own.url });
    await c.connect();
    // A second instance that is alive (its heartbeat is fresh) but whose ticks come late: it has
    // not taken anything yet. x's share drops to one group, so x hands one over.
    const beat = () => c.query(`INSERT INTO chorus_instances (id) VALUES ('slow') ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`);
    await beat();
    const timer = setInterval(() => void beat().catch(() => undefined), 200);
    try {
      const lease = async (key: string) => (await c.query<{ owner: string | null; free_ms: string }>(`SELECT owner, extract(epoch FROM now() - expires_at) * 1000 AS free_ms FROM chorus_group_leases WHERE key = $1`, [key])).rows[0]!;
      let freed = '';
      await until('x to hand a group over', async () => {
        for (const id of ['h1', 'h2']) if ((await lease(id)).owner === null) freed = id;
        return freed !== '';
      });
      // Free for two seconds (four of x's ticks; before, x took a group back after two): it is
      // the slow instance's to take, not x's.
      await until('the group to be free for 2 s (or taken)', async () => {
        const l = await lease(freed);
        return l.owner !== null || Number(l.free_ms) > 2000;
      });
      expect((await lease(freed)).owner).toBeNull();
      expect(x.cluster!.owns(freed)).toBe(false);
    } finally {
      clearInterval(timer);
      await c.end();
    }
  }, 60_000);
});

describe('lease renewal (PostgreSQL)', () => {
  it('goes on while the rest of a tick is held up (a connection slow to start)', async (ctx) => {
    if (!db) return ctx.skip();
    const r = await instance('r');
    await r.gateway.createGroup({ title: 'R', participants: ['analyst'], id: 'gr' });
    let release!: () => void;
    let startedAt: Date | null = null;
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      // The tick takes this connection and waits for it to start: a login that takes its time.
      r.cluster!.hold('probe:slow', {
        start: () => {
          void c.query<{ t: Date }>('SELECT clock_timestamp() AS t').then((q) => (startedAt = q.rows[0]!.t));
          return new Promise<void>((resolve) => (release = resolve));
        },
        stop: async () => undefined,
      });
      await until('the connection to start', () => startedAt !== null);
      // Renewed at least once after a whole ttl (0.7 × lease) of the hold-up: before then, waiting
      // renewals would have made the watchdog stop every group here.
      const renewedPast = new Date(startedAt!.getTime() + 2 * 0.7 * 3000);
      await until('a renewal during the hold-up', async () => {
        const { rows } = await c.query<{ expires_at: Date }>(`SELECT expires_at FROM chorus_group_leases WHERE key = 'gr'`);
        return rows[0]!.expires_at > renewedPast;
      });
      expect(r.cluster!.owns('gr')).toBe(true);
      expect(r.cluster!.status()).toMatchObject({ ok: true });
    } finally {
      release?.();
      await c.end();
    }
  }, 60_000);
});

describe('live events over NOTIFY', () => {
  it('keeps payloads under the 8000-byte limit: a large entry travels as its seq, a long delta in pieces', () => {
    const big = 'é'.repeat(6000);
    const entry = { id: 'g.7', seq: 7, ts: 1, kind: 'agent' as const, authorId: 'a', authorName: 'A', text: big };
    expect(toWire({ type: 'message', groupId: 'g', entry })).toEqual([{ type: 'message', groupId: 'g', seq: 7 }]);
    const small = { ...entry, text: 'hi' };
    expect(toWire({ type: 'message', groupId: 'g', entry: small })).toEqual([{ type: 'message', groupId: 'g', entry: small }]);
    const text = '😀'.repeat(3000) + '\u0001'.repeat(3000);
    const parts = toWire({ type: 'delta', groupId: 'g', agentId: 'a', turnId: 't', text });
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.map((p) => (p as { text: string }).text).join('')).toBe(text);
    for (const p of parts) expect(Buffer.byteLength(JSON.stringify({ i: 'instance-id', e: p }))).toBeLessThan(8000);
  });
});

describe('the inbox keeps what it cannot place (PostgreSQL)', () => {
  it('a handed-over message whose chat has no group here stays in the inbox; the messages after it are recorded', async (ctx) => {
    if (!db) return ctx.skip();
    const k = await instance('k');
    await k.gateway.createGroup({ title: 'K', participants: ['analyst'], id: 'gk' });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      // Acknowledged by another instance, then the chat moved: no group answers for 'moved-chat'.
      const lost: InboundMessage = { ...msg('orphan'), chatId: 'moved-chat' };
      const next: InboundMessage = { ...msg('after'), chatId: 'gk' };
      for (const m of [lost, next]) await c.query(`INSERT INTO chorus_inbox (group_id, dedupe_key, message) VALUES ('gk', $1, $2)`, [m.messageId, JSON.stringify(m)]);
      // A message posted to the owner drains the inbox first.
      expect((await k.host.handle({ kind: 'message', message: { ...msg('direct'), chatId: 'gk' } })).status).toBe('recorded');
      await k.router.idle();
      const humans = (await k.gateway.messages('gk', { limit: 50 })).filter((e) => e.kind === 'human').map((e) => e.platformMessageId);
      expect(humans).toEqual(['after', 'direct']);
      const left = await c.query<{ dedupe_key: string }>(`SELECT dedupe_key FROM chorus_inbox WHERE group_id = 'gk'`);
      expect(left.rows.map((r) => r.dedupe_key)).toEqual(['orphan']);
    } finally {
      await c.end();
    }
  }, 60_000);
});
