/**
 * The lease table (`chorus_group_leases`) and the leases this instance holds.
 *
 * Two kinds of lease share the table: a group's (only its holder writes the group's log and runs
 * its rounds) and a connection's (a Telegram long poll, the Discord gateway: one instance at a
 * time). In memory they are kept apart by kind ({@link LeaseKey}); in the table a connection's key
 * always contains a colon and a group id (a slug) never does — the one place that tells them
 * apart there is `groupRow`.
 *
 * Every row has an owner, an epoch and an expiry. The holder renews its rows every `lease/6`; a
 * row not renewed expires after `0.7 × lease`, and any instance then takes it with
 * `UPDATE … epoch = epoch + 1` (rows picked with `FOR UPDATE SKIP LOCKED`, so two instances never
 * take the same row). The epoch is the fencing token each append is checked against ({@link fence}).
 */
import type pg from 'pg';
import type { Logger } from '../core/ports.js';
import { describeError } from '../core/errors.js';

/** A lease, by kind. A connection's name always contains a colon (`telegram:<agent>`). */
export type LeaseKey = { kind: 'group'; id: string } | { kind: 'connection'; id: string };

export const groupKey = (id: string): LeaseKey => ({ kind: 'group', id });
export const connectionKey = (id: string): LeaseKey => ({ kind: 'connection', id });

/** A lease this instance holds. `leaving`: being handed over; its last writes still pass the fence. */
export interface Held {
  epoch: number;
  state: 'loading' | 'owned' | 'leaving';
}

/** SQL: the row (its key column `col`) is a group's lease, not a connection's. */
const groupRow = (col = 'key'): string => `position(':' in ${col}) = 0`;

export interface LeasesOptions {
  pool: pg.Pool;
  instanceId: string;
  leaseMs: number;
  log: Logger;
}

export class Leases {
  /** Group leases held here, by group id. */
  readonly groups = new Map<string, Held>();
  /** Connection leases held here, by connection name. */
  readonly connections = new Map<string, Held>();
  /** Group id → owner, from the last look at the table (for 409 messages). */
  owners = new Map<string, string>();

  constructor(private readonly o: LeasesOptions) {}

  /**
   * Expiry written at each renewal: 0.7 × lease. Another instance notices at its next tick (at
   * most lease / 6 later) and the rest of the lease is left for loading the group.
   */
  get ttlMs(): number {
    return Math.round(this.o.leaseMs * 0.7);
  }

  get tickMs(): number {
    return Math.max(50, Math.round(this.o.leaseMs / 6));
  }

  private held(key: LeaseKey): Map<string, Held> {
    return key.kind === 'group' ? this.groups : this.connections;
  }

  get(key: LeaseKey): Held | undefined {
    return this.held(key).get(key.id);
  }

  set(key: LeaseKey, h: Held): void {
    this.held(key).set(key.id, h);
  }

  /** Forget a lease here; false if it was not held. */
  drop(key: LeaseKey): boolean {
    return this.held(key).delete(key.id);
  }

  /** Every lease held here, groups first. */
  all(): LeaseKey[] {
    return [...[...this.groups.keys()].map(groupKey), ...[...this.connections.keys()].map(connectionKey)];
  }

  get size(): number {
    return this.groups.size + this.connections.size;
  }

  ownedGroups(): string[] {
    return [...this.groups].filter(([, h]) => h.state === 'owned').map(([k]) => k);
  }

  ownedConnections(): string[] {
    return [...this.connections].filter(([, h]) => h.state === 'owned').map(([k]) => k);
  }

  /** A group just created here: its lease, taken before its first record. False if the id is taken. */
  async claimNew(groupId: string): Promise<boolean> {
    const { rows } = await this.o.pool.query<{ epoch: string }>(
      `INSERT INTO chorus_group_leases (key, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
       ON CONFLICT (key) DO NOTHING RETURNING epoch`,
      [groupId, this.o.instanceId, this.ttlMs],
    );
    const row = rows[0];
    if (!row) return false;
    this.groups.set(groupId, { epoch: Number(row.epoch), state: 'owned' });
    return true;
  }

  /** Give back the lease `claimNew` took for a group whose first record was then refused. */
  async releaseNew(groupId: string): Promise<void> {
    const held = this.groups.get(groupId);
    if (!held) return;
    this.groups.delete(groupId);
    // Only the row this claim made: a group nobody created leaves no lease that is renewed forever.
    await this.o.pool.query(`DELETE FROM chorus_group_leases WHERE key = $1 AND owner = $2 AND epoch = $3`, [groupId, this.o.instanceId, held.epoch]);
  }

  /** Join: this instance's row, and the leases a previous run under the same id died holding freed. */
  async register(url: string | null): Promise<void> {
    await this.o.pool.query(
      `INSERT INTO chorus_instances (id, url, started_at, heartbeat_at) VALUES ($1, $2, now(), now())
       ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, started_at = now(), heartbeat_at = now()`,
      [this.o.instanceId, url],
    );
    // Freed rows are taken again with a new epoch like any other.
    const keep = this.all().map((k) => k.id);
    await this.o.pool.query(`UPDATE chorus_group_leases SET expires_at = '-infinity' WHERE owner = $1 AND epoch > 0 AND NOT (key = ANY($2::text[]))`, [this.o.instanceId, keep]);
  }

  /** Every group the store holds gets a lease row (groups written before the cluster existed). */
  async ensureRows(): Promise<void> {
    await this.o.pool.query(`INSERT INTO chorus_group_leases (key) SELECT id FROM chorus_groups ON CONFLICT (key) DO NOTHING`);
  }

  /** Heartbeat and renewal of everything held, in one statement. Returns the leases not renewed (taken). */
  async renew(): Promise<LeaseKey[]> {
    const keys = this.all();
    const epochs = keys.map((k) => this.get(k)!.epoch);
    const { rows: renewed } = await this.o.pool.query<{ key: string }>(
      `WITH beat AS (UPDATE chorus_instances SET heartbeat_at = now() WHERE id = $4)
       UPDATE chorus_group_leases l SET expires_at = now() + $1 * interval '1 millisecond'
       FROM unnest($2::text[], $3::bigint[]) AS m(key, epoch)
       WHERE l.key = m.key AND l.epoch = m.epoch AND l.owner = $4
       RETURNING l.key`,
      [this.ttlMs, keys.map((k) => k.id), epochs, this.o.instanceId],
    );
    const back = new Set(renewed.map((r) => r.key));
    return keys.filter((k, i) => !back.has(k.id) && this.get(k)?.epoch === epochs[i]);
  }

  /** All group leases, and how many each other live instance holds. */
  async spread(): Promise<{ total: number; others: number[] }> {
    const { rows } = await this.o.pool.query<{ total: string; others: string[] }>(
      `SELECT (SELECT count(*) FROM chorus_group_leases WHERE ${groupRow()}) AS total,
              ARRAY(SELECT (SELECT count(*) FROM chorus_group_leases l WHERE l.owner = i.id AND l.expires_at > now() AND ${groupRow('l.key')})
                    FROM chorus_instances i WHERE i.heartbeat_at > now() - $1 * interval '1 millisecond' AND i.id <> $2) AS others`,
      [this.ttlMs, this.o.instanceId],
    );
    return { total: Number(rows[0]?.total ?? 0), others: (rows[0]?.others ?? []).map(Number) };
  }

  /** Take up to `n` group leases expired for more than `expiredMs`; they are held as 'loading'. */
  async claimGroups(n: number, expiredMs: number): Promise<Array<{ id: string; epoch: number; prev: string | null }>> {
    const { rows } = await this.o.pool.query<{ key: string; epoch: string; prev: string | null }>(
      `WITH c AS (
         SELECT key, owner AS prev FROM chorus_group_leases
         WHERE ${groupRow()} AND expires_at < now() - $4 * interval '1 millisecond'
         ORDER BY random() LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE chorus_group_leases l SET owner = $2, epoch = l.epoch + 1, expires_at = now() + $3 * interval '1 millisecond'
       FROM c WHERE l.key = c.key
       RETURNING l.key, l.epoch, c.prev`,
      [n, this.o.instanceId, this.ttlMs, expiredMs],
    );
    const out = rows.map((r) => ({ id: r.key, epoch: Number(r.epoch), prev: r.prev }));
    for (const r of out) this.groups.set(r.id, { epoch: r.epoch, state: 'loading' });
    return out;
  }

  /** Take a connection's lease if nobody has held it for `expiredMs`; its epoch, or null. */
  async claimConnection(name: string, expiredMs: number): Promise<number | null> {
    const { rows } = await this.o.pool.query<{ epoch: string }>(
      `INSERT INTO chorus_group_leases AS l (key, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
       WHERE l.expires_at < now() - $4 * interval '1 millisecond'
       RETURNING epoch`,
      [name, this.o.instanceId, this.ttlMs, expiredMs],
    );
    const row = rows[0];
    if (!row) return null;
    this.connections.set(name, { epoch: Number(row.epoch), state: 'owned' });
    return Number(row.epoch);
  }

  /** Read who holds what (`owners`); returns the ids of every group that has a lease row. */
  async look(): Promise<string[]> {
    const { rows } = await this.o.pool.query<{ key: string; owner: string | null; live: boolean; is_group: boolean }>(
      `SELECT key, owner, expires_at > now() AS live, ${groupRow()} AS is_group FROM chorus_group_leases`,
    );
    const groups = rows.filter((r) => r.is_group);
    this.owners = new Map(groups.filter((r) => r.live && r.owner !== null).map((r) => [r.key, r.owner!]));
    return groups.map((r) => r.key);
  }

  /** A group whose lease row was taken but that has no record (its creator died right then): free it. */
  async dropOrphan(groupId: string): Promise<void> {
    this.groups.delete(groupId);
    await this.o.pool.query(`DELETE FROM chorus_group_leases WHERE key = $1 AND owner = $2 AND NOT EXISTS (SELECT 1 FROM chorus_groups WHERE id = $1)`, [groupId, this.o.instanceId]);
  }

  /** Hand a lease back (expired as of now: an instance already at its share leaves it to the others). */
  async giveBack(key: LeaseKey, epoch: number): Promise<void> {
    if (this.get(key)?.epoch === epoch) this.drop(key);
    await this.o.pool
      .query(`UPDATE chorus_group_leases SET owner = NULL, expires_at = now() WHERE key = $1 AND owner = $2 AND epoch = $3`, [key.id, this.o.instanceId, epoch])
      .catch((err: unknown) => this.o.log.warn({ lease: key.id, err: describeError(err) }, 'could not free a lease; it expires on its own'));
  }

  /** Leave: every lease freed at once, so others take them without waiting; the instance row goes. */
  async leave(): Promise<void> {
    const keys = this.all().map((k) => k.id);
    this.groups.clear();
    this.connections.clear();
    try {
      if (keys.length) await this.o.pool.query(`UPDATE chorus_group_leases SET owner = NULL, expires_at = '-infinity' WHERE owner = $1 AND key = ANY($2::text[])`, [this.o.instanceId, keys]);
      await this.o.pool.query('DELETE FROM chorus_instances WHERE id = $1', [this.o.instanceId]);
    } catch (err) {
      this.o.log.warn({ err: describeError(err) }, 'could not free the leases at stop; they expire on their own');
    }
  }

  /**
   * Runs inside the store's append transaction: the groups of `groupIds` this instance may no
   * longer write. `FOR SHARE` keeps the rows as they are until the transaction ends, so a
   * takeover's UPDATE waits for the commit and the new owner reads it.
   */
  async fence(tx: pg.PoolClient, groupIds: readonly string[]): Promise<string[]> {
    const keys: string[] = [];
    const epochs: number[] = [];
    const refused: string[] = [];
    for (const id of groupIds) {
      const h = this.groups.get(id);
      if (h && h.state !== 'loading') {
        keys.push(id);
        epochs.push(h.epoch);
      } else refused.push(id);
    }
    if (keys.length > 0) {
      const { rows } = await tx.query<{ key: string }>(
        `SELECT key FROM chorus_group_leases
         WHERE owner = $1 AND (key, epoch) IN (SELECT * FROM unnest($2::text[], $3::bigint[]))
         FOR SHARE`,
        [this.o.instanceId, keys, epochs],
      );
      const ok = new Set(rows.map((r) => r.key));
      for (const k of keys) if (!ok.has(k)) refused.push(k);
    }
    if (refused.length > 0) this.o.log.warn({ groups: refused }, 'write refused: this instance no longer holds the lease of these groups');
    return refused;
  }
}
