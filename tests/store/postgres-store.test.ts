/**
 * The PostgreSQL store against a real PostgreSQL server (tests/helpers/postgres.ts): the shared
 * Store contract, plus what only a database can get wrong — a connection killed in the middle of
 * an append (refused, nothing half-kept, the group refused until reloaded), one bad group in a
 * group-commit batch not refusing the others, fencing, migrations run from several pools at once,
 * a database of a newer Chorus refused, checkpoints never ahead of the log nor replaced by older ones.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import type { GroupRecord } from '../../src/core/records.js';
import { StoreFormatError, StoreUnavailableError } from '../../src/core/errors.js';
import { FencedError, PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/PostgresStore.js';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.js';
import { PgDeadLetters } from '../../src/store/postgres/deadLetters.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { testDatabase, withDatabase, type TestDatabase } from '../helpers/postgres.js';
import { HEAD, all, cp, entry, rec, storeContract } from './store-contract.js';
import { roomsContract } from './rooms-contract.js';

const db = await testDatabase('store');
const extra: TestDatabase[] = [];
const pools: pg.Pool[] = [];

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  for (const d of [...extra, ...(db ? [db] : [])]) await d.drop().catch(() => undefined);
});

/** A fresh database on the same server (one per test that needs an empty one). */
async function freshUrl(): Promise<string> {
  const admin = new pg.Client({ connectionString: db!.url });
  await admin.connect();
  const name = `chorus_store_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(db!.url, name);
  extra.push({
    url,
    async drop() {
      const c = new pg.Client({ connectionString: db!.url });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => c.end());
    },
  });
  return url;
}

function pool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 4 });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

/**
 * A TCP proxy in front of the server that can lose one answer: after `cutAnswerTo(marker)`, the
 * next client message containing `marker` is passed on, and when the server answers, both
 * connections are cut instead (the server did the work; the client never hears it).
 */
async function cuttingProxy(target: string): Promise<{ url: string; cuts: number; cutAnswerTo(marker: string): void; close(): Promise<void> }> {
  const t = new URL(target);
  let marker: string | null = null;
  const sockets = new Set<Socket>();
  const state = { cuts: 0 };
  const server = createServer((client) => {
    const upstream = connect(Number(t.port), t.hostname);
    sockets.add(client).add(upstream);
    let cutOnAnswer = false;
    client.on('data', (d: Buffer) => {
      if (marker && d.includes(marker)) {
        marker = null;
        cutOnAnswer = true;
      }
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (cutOnAnswer) {
        state.cuts++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(d);
    });
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on('close', () => b.destroy());
      a.on('error', () => b.destroy());
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const u = new URL(target);
  u.port = String((server.address() as AddressInfo).port);
  return {
    url: u.toString(),
    get cuts() {
      return state.cuts;
    },
    cutAnswerTo(m: string) {
      marker = m;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

function store(url: string, o: Partial<PostgresStoreOptions> = {}): PostgresStore {
  return new PostgresStore({ url, logger: silentLogger, ...o });
}

describe.skipIf(!db)('postgres store', () => {
  storeContract('postgres store', {
    async fresh() {
      const url = await freshUrl();
      return () => store(url);
    },
  });
  roomsContract('postgres store', {
    async fresh() {
      const url = await freshUrl();
      return () => store(url);
    },
  });

  describe('group commit and checkpoints', () => {
    it('appends of one tick across groups share one transaction', async () => {
      const s = store(await freshUrl());
      await s.open();
      const ids = Array.from({ length: 10 }, (_, i) => `g${i}`);
      await Promise.all(ids.map((id) => s.append(id, rec(1, { head: { ...HEAD, id } }))));
      const before = { ...s.stats };
      await Promise.all(ids.flatMap((id) => Array.from({ length: 5 }, (_, k) => s.append(id, rec(k + 2, { entries: [entry(k + 1)] })))));
      expect(s.stats.appends - before.appends).toBe(50);
      expect(s.stats.commits - before.commits).toBe(1);
      await s.close();
    });

    it('writes a checkpoint only once the records it covers are committed, never replaced by an older one', async () => {
      const url = await freshUrl();
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let hold = false;
      const s = store(url, { beforeCommit: async () => (hold ? gate : undefined) });
      await s.open();
      await s.append('g', rec(1, { head: HEAD }));
      hold = true;
      const slow = s.append('g', rec(2, { entries: [entry(1)] }));
      const written = s.checkpoint('g', cp(2));
      await new Promise((r) => setTimeout(r, 50));
      const peek = pool(url);
      expect((await peek.query('SELECT n FROM chorus_checkpoints')).rows).toEqual([]);
      release();
      await slow;
      await written;
      expect((await peek.query('SELECT n FROM chorus_checkpoints')).rows).toEqual([{ n: '2' }]);
      hold = false;
      await s.append('g', rec(3, { entries: [entry(2)] }));
      await s.checkpoint('g', cp(3));
      // A late, older checkpoint (another instance, a slow write) never goes back in time.
      const other = store(url);
      await other.open();
      await other.append('g', rec(4, { entries: [entry(3)] }));
      await other.checkpoint('g', cp(1));
      await other.close();
      expect((await peek.query('SELECT n FROM chorus_checkpoints')).rows).toEqual([{ n: '3' }]);
      await s.close();
    });

    it('a damaged checkpoint is ignored with one line naming the group, and the whole log replays', async () => {
      const url = await freshUrl();
      const s = store(url);
      await s.open();
      await s.append('g', rec(1, { head: HEAD }));
      await s.append('g', rec(2, { entries: [entry(1)] }));
      await s.checkpoint('g', cp(2));
      await s.close();
      await pool(url).query(`UPDATE chorus_checkpoints SET body = '{"version":2,"n":2,"head":null}'`);
      const log = new CapturingLogger();
      const again = store(url, { logger: log });
      const { groups } = await again.open();
      expect(groups[0]!.checkpoint).toBeNull();
      expect((await all(groups[0]!)).map((r) => r.n)).toEqual([1, 2]);
      expect(log.lines.filter((l) => l.level === 'error')).toHaveLength(1);
      expect(log.text()).toMatch(/checkpoint is damaged.*"group":"g"/);
      await again.close();
    });
  });

  describe('failed writes', () => {
    it('a connection killed mid-append refuses it (the 503 path), keeps nothing of it, and refuses the group until reopened', async () => {
      const url = await freshUrl();
      const killer = pool(url);
      let kill = false;
      const s = store(url, {
        beforeCommit: async (tx) => {
          if (!kill) return;
          // The records are inserted, COMMIT not yet sent: the server ends this connection now.
          const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await killer.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        },
      });
      await s.open();
      await s.append('g', rec(1, { head: HEAD }));
      await s.append('h', rec(1, { head: { ...HEAD, id: 'h' } }));
      kill = true;
      const err = await s.append('g', rec(2, { entries: [entry(1)] })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(s.health().writable).toBe(false);
      expect(s.health().error).toMatch(/group g/);
      kill = false;
      // The group stays refused (the core reloads it first); other groups go on.
      await expect(s.append('g', rec(2, { entries: [entry(1)] }))).rejects.toThrow(StoreUnavailableError);
      await s.append('h', rec(2, { entries: [entry(1)] }));
      expect(s.health().writable).toBe(true);
      // Nothing of the refused record was kept.
      expect((await killer.query(`SELECT n FROM chorus_records WHERE group_id = 'g'`)).rows).toEqual([{ n: '1' }]);
      expect((await killer.query(`SELECT seq FROM chorus_entries WHERE group_id = 'g'`)).rows).toEqual([]);
      const reopened = await s.reopen('g');
      expect((await all(reopened)).map((r) => r.n)).toEqual([1]);
      await s.append('g', rec(2, { entries: [entry(1)] }));
      expect((await s.readEntries('g', { limit: 5 })).map((e) => e.seq)).toEqual([1]);
      await s.close();
    });

    for (const path of ['one statement (no hooks)', 'BEGIN … COMMIT (with a hook)'] as const) {
      it(`the answer to a commit lost on the way back (${path}): the store finds out it landed and the append stands, once`, async () => {
        const url = await freshUrl();
        const px = await cuttingProxy(url);
        const hooks = path.startsWith('BEGIN') ? { beforeCommit: async () => undefined } : {};
        const log = new CapturingLogger();
        const s = store(px.url, { ...hooks, logger: log });
        await s.open();
        await s.append('g', rec(1, { head: HEAD }));
        // The server gets the commit and answers; the answer never reaches the store.
        px.cutAnswerTo(path.startsWith('BEGIN') ? 'COMMIT' : 'INSERT INTO chorus_records');
        await s.append('g', rec(2, { entries: [entry(1, 'landed')] }));
        expect(px.cuts).toBe(1);
        expect(log.text()).toMatch(/the commit had landed/);
        expect(s.health()).toEqual({ writable: true, error: null });
        // Not refused, so not failed: the group goes on without a reload.
        await s.append('g', rec(3, { entries: [entry(2)] }));
        expect((await s.readEntries('g', { limit: 10 })).map((e) => e.text)).toEqual(['landed', 'message 2']);
        await s.close();
        await px.close();
      });
    }

    it('a database that does not answer: appends and checkWritable are refused with StoreUnavailableError', async () => {
      const url = await freshUrl();
      const s = store(url);
      await s.open();
      await s.append('g', rec(1, { head: HEAD }));
      await s.close();
      // Nothing listens on port 1.
      const down = new URL(url);
      down.port = '1';
      const d = store(down.toString());
      await expect(d.checkWritable()).rejects.toThrow(StoreUnavailableError);
      await expect(d.append('g', rec(2))).rejects.toThrow(/cannot reach the database/);
      expect(d.health().writable).toBe(false);
      await d.close();
    });

    it('one group refused in a group-commit batch (a second writer took its n) does not refuse the others', async () => {
      const url = await freshUrl();
      const a = store(url);
      await a.open();
      await Promise.all([a.append('g', rec(1, { head: HEAD })), a.append('h', rec(1, { head: { ...HEAD, id: 'h' } }))]);
      // Another writer appends g's record 2 first.
      const b = store(url);
      await b.open();
      await b.append('g', rec(2, { entries: [entry(1, 'from b')] }));
      await b.close();
      const results = await Promise.allSettled([a.append('g', rec(2, { entries: [entry(1, 'from a')] })), a.append('h', rec(2, { entries: [entry(1)] }))]);
      expect(results[0]!.status).toBe('rejected');
      expect(results[1]!.status).toBe('fulfilled');
      expect((await a.readEntries('g', { limit: 5 })).map((e) => e.text)).toEqual(['from b']);
      expect((await a.readEntries('h', { limit: 5 })).map((e) => e.seq)).toEqual([1]);
      await a.close();
    });

    it('fencing: appends of a group the fence refuses fail with FencedError and write nothing; the rest commit', async () => {
      const url = await freshUrl();
      let lost = new Set<string>();
      const seen: string[][] = [];
      const s = store(url, {
        fence: async (_tx, ids) => {
          seen.push([...ids]);
          return lost;
        },
      });
      await s.open();
      await Promise.all([s.append('g', rec(1, { head: HEAD })), s.append('h', rec(1, { head: { ...HEAD, id: 'h' } }))]);
      expect(seen[0]!.sort()).toEqual(['g', 'h']);
      lost = new Set(['g']);
      const [g, h] = await Promise.allSettled([s.append('g', rec(2, { entries: [entry(1)] })), s.append('h', rec(2, { entries: [entry(1)] }))]);
      expect(g.status === 'rejected' && g.reason).toBeInstanceOf(FencedError);
      expect(h.status).toBe('fulfilled');
      // Losing a group is not a store failure.
      expect(s.health()).toEqual({ writable: true, error: null });
      expect(await s.readEntries('g', { limit: 5 })).toEqual([]);
      await expect(s.append('g', rec(2))).rejects.toThrow(FencedError);
      // Taking the group back (the core reads it again: reopen) clears the refusal.
      lost = new Set();
      const back = await s.reopen('g');
      expect((await all(back)).map((r) => r.n)).toEqual([1]);
      await s.append('g', rec(2, { entries: [entry(1)] }));
      // A group never written reads back as nothing at all (the core then has no such group).
      const none = await s.reopen('never-written');
      expect(none.checkpoint).toBeNull();
      expect(await all(none)).toEqual([]);
      await s.close();
    });
  });

  describe('for the cluster', () => {
    it('works on a shared pool it never ends', async () => {
      const url = await freshUrl();
      const a = store(url);
      await a.open();
      await a.append('g', rec(1, { head: HEAD }));
      await a.append('h', rec(1, { head: { ...HEAD, id: 'h' } }));
      await a.checkpoint('h', cp(1));
      await a.close();
      const shared = pool(url);
      const b = new PostgresStore({ pool: shared, logger: silentLogger });
      const { groups } = await b.open();
      expect(groups.map((g) => g.id)).toEqual(['g', 'h']);
      const h = groups[1]!;
      expect(h.checkpoint?.n).toBe(1);
      expect(await all(h)).toEqual([]);
      await b.append('h', rec(2, { entries: [entry(1)] }));
      await b.close();
      // The pool belongs to whoever made it.
      expect((await shared.query('SELECT count(*)::int AS c FROM chorus_records')).rows[0]).toEqual({ c: 3 });
    });
  });

  describe('dead letters', () => {
    it('keeps an update that can never be handed over in chorus_dead_letters, once per id, as it arrived', async () => {
      const url = await freshUrl();
      const p = pool(url);
      await migrate(p, silentLogger);
      const letters = new PgDeadLetters(p);
      const raw = { update_id: 17, message: { message_id: 1, date: 2, text: 'no chat \u0000 "quoted" 🎉' } };
      expect(await letters.keep({ channel: 'telegram', part: 'writer', id: '17', reason: 'message.chat is missing', raw })).toBe('table chorus_dead_letters');
      // Offered again (its confirmation was lost): still one row.
      await letters.keep({ channel: 'telegram', part: 'writer', id: '17', reason: 'message.chat is missing', raw });
      await letters.keep({ channel: 'telegram', part: 'analyst', id: '17', reason: 'message.chat is missing', raw });
      const { rows } = await p.query('SELECT channel, part, item_id, reason, raw FROM chorus_dead_letters ORDER BY part');
      expect(rows).toEqual([
        { channel: 'telegram', part: 'analyst', item_id: '17', reason: 'message.chat is missing', raw },
        { channel: 'telegram', part: 'writer', item_id: '17', reason: 'message.chat is missing', raw },
      ]);
    });
  });

  describe('schema', () => {
    it('migrations run from several pools at once are applied exactly once', async () => {
      const url = await freshUrl();
      const results = await Promise.all([pool(url), pool(url), pool(url), pool(url)].map((p) => migrate(p, silentLogger)));
      const applied = results.map((r) => r.applied);
      expect(applied.filter((a) => a.length > 0)).toEqual([MIGRATIONS.map((m) => m.version)]);
      const { rows } = await pool(url).query('SELECT version, name FROM chorus_schema_migrations ORDER BY version');
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
      // Two stores opening at once on a fresh database both work.
      const url2 = await freshUrl();
      const [x, y] = [store(url2), store(url2)];
      await Promise.all([x.open(), y.open()]);
      await Promise.all([x.close(), y.close()]);
    });

    it('a database of the version before copies: its entries read back as before, and copies of them take outcomes once it is migrated', async () => {
      const url = await freshUrl();
      // Entries written with the migrations up to 6 only (no copies column yet).
      await migrate(pool(url), silentLogger, MIGRATIONS.filter((m) => m.version < 7));
      const old = store(url);
      const reply = { ...entry(2, 'reply'), kind: 'agent' as const, agentId: 'analyst', delivery: 'pending' as const, copies: { 'telegram:-100': { delivery: 'pending' as const } } };
      // The store migrates at open: written before that, by hand, as version 6 wrote them.
      const p = pool(url);
      await p.query(`INSERT INTO chorus_groups (id) VALUES ('g')`);
      await p.query(`INSERT INTO chorus_records (group_id, n, v, ts, body) VALUES ('g', 1, 2, 1, $1::json), ('g', 2, 2, 2, $2::json)`, [JSON.stringify(rec(1, { head: HEAD, entries: [entry(1)] })), JSON.stringify(rec(2, { entries: [reply] }))]);
      await p.query(`INSERT INTO chorus_entries (group_id, seq, n, entry, delivery, posted_ids) VALUES ('g', 1, 1, $1::json, NULL, NULL), ('g', 2, 2, $2::json, 'posted', '["h2"]'::json)`, [JSON.stringify(entry(1)), JSON.stringify(reply)]);
      const { groups } = await old.open();
      expect(groups.map((g) => g.id)).toEqual(['g']);
      expect((await old.readEntries('g', { limit: 10 })).map((e) => [e.seq, e.delivery, e.postedIds, e.copies])).toEqual([
        [1, undefined, undefined, undefined],
        [2, 'posted', ['h2'], { 'telegram:-100': { delivery: 'pending' } }],
      ]);
      await old.append('g', rec(3, { delivery: [{ seq: 2, chat: 'telegram:-100', delivery: 'posted', postedIds: ['t2'] }] }));
      expect((await old.readEntries('g', { afterSeq: 1, limit: 1 }))[0]).toMatchObject({ delivery: 'posted', postedIds: ['h2'], copies: { 'telegram:-100': { delivery: 'posted', ids: ['t2'] } } });
      await old.close();
      // The migration's statement can run again over its own work without harm.
      await p.query(MIGRATIONS.find((m) => m.version === 7)!.sql);
      const { rows } = await p.query<{ version: number }>('SELECT version FROM chorus_schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    });

    it('refuses a database written by a newer Chorus, and a record of a newer version', async () => {
      const url = await freshUrl();
      const s = store(url);
      await s.open();
      await s.append('g', rec(1, { head: HEAD }));
      await s.close();
      const p = pool(url);
      await p.query(`INSERT INTO chorus_schema_migrations (version, name) VALUES (99, 'from the future')`);
      await expect(store(url).open()).rejects.toThrow(StoreFormatError);
      await expect(store(url).open()).rejects.toThrow(/newer Chorus \(schema version 99/);
      await p.query('DELETE FROM chorus_schema_migrations WHERE version = 99');

      await p.query(`INSERT INTO chorus_records (group_id, n, v, ts, body) VALUES ('g', 2, 3, 0, '{"v":3,"n":2,"ts":0}')`);
      const t = store(url);
      const { groups } = await t.open();
      await expect(all(groups[0]!)).rejects.toThrow(/record version 3/);
      await t.close();
    });

    it('skips and names a damaged record without changing it', async () => {
      const url = await freshUrl();
      const s = store(url);
      await s.open();
      await s.append('g', rec(1, { head: HEAD }));
      await s.close();
      const p = pool(url);
      await p.query(`INSERT INTO chorus_records (group_id, n, v, ts, body) VALUES ('g', 2, 1, 0, '{"v":1,"n":"two"}')`);
      await p.query(`INSERT INTO chorus_records (group_id, n, v, ts, body) VALUES ('g', 3, 2, 0, $1)`, [JSON.stringify(rec(3, { entries: [entry(1)] }) satisfies GroupRecord)]);
      const log = new CapturingLogger();
      const t = store(url, { logger: log });
      const { groups } = await t.open();
      expect((await all(groups[0]!)).map((r) => r.n)).toEqual([1, 3]);
      expect(log.lines.filter((l) => l.level === 'error').map((l) => (l.obj as { n: number }).n)).toEqual([2]);
      expect((await p.query(`SELECT body::text FROM chorus_records WHERE n = 2`)).rows[0].body).toBe('{"v":1,"n":"two"}');
      await t.close();
    });
  });
});
