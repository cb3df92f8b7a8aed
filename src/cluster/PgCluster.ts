/**
 * Several Chorus instances on one PostgreSQL database: which instance runs which
 * group, and how the others reach it.
 *
 * - **Leases.** Each group has a row in `chorus_group_leases` (owner, epoch, expires_at). The
 *   owner renews its rows every `lease/6`; a row not renewed expires after `0.7 × lease`, and any
 *   instance then takes it with `UPDATE … epoch = epoch + 1` (rows picked with `FOR UPDATE SKIP
 *   LOCKED`, so two instances never take the same row). Worst case from a `kill -9` to the new
 *   owner holding the lease: 0.7 × lease + one tick (lease / 6) ≈ 0.87 × lease; the rest of
 *   `lease_seconds` is left for loading the group and moving its inbox in.
 * - **Fencing.** Every append runs, inside its transaction, a check that this instance still
 *   holds the group's row with the epoch it took (`FOR SHARE`, so a takeover waits for an append
 *   in flight and an append after a takeover is refused). A stale owner can never write.
 * - **Stopping in time.** An instance that cannot renew for `0.65 × lease` stops running every
 *   group at once (just before its rows can expire) and reports not ready.
 * - **Spreading.** Each instance takes at most ceil(groups / live instances); one above that
 *   hands an idle group back (gracefully: its current round ends first) until groups are spread.
 * - **Inbox.** A message posted to an instance that does not run the group is inserted into
 *   `chorus_inbox` (durable before the 202), and the owner is woken with NOTIFY. The owner moves
 *   the rows into the group's log in id order — before any message posted to it directly, so a
 *   person's order is kept — and deletes them; a crash in between is caught by the core's dedupe.
 *   A new owner drains the inbox before it resumes the group.
 * - **Live events.** Every event of an owned group is sent with NOTIFY on one connection (in
 *   order); the other instances re-emit it to their SSE clients. A transcript entry too large for
 *   NOTIFY's 8000-byte payload travels as its seq and is read from the database; a streamed delta
 *   is cut into pieces. They also refresh their read-only copy of the group.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterStatus, ConnectionGate, ForwardedChange, GatewayEvent, GroupDoc, Logger, Ownership, Store } from '../core/ports.js';
import type { EphemeralAnswer, InboundMessage, ReceiveResult, TranscriptEntry } from '../core/types.js';
import { StoreUnavailableError, describeError } from '../core/errors.js';

/** What the cluster needs from the router (GroupRouter has all of it). */
export interface ClusterRouter {
  adopt(id: string): Promise<boolean>;
  resumeOwned(id: string): void;
  relinquish(id: string, opts: { graceful: boolean }): Promise<void>;
  refreshCopy(id: string): Promise<void>;
  copyEntry(id: string, entry: TranscriptEntry): void;
  receiveForwarded(msg: InboundMessage): Promise<ReceiveResult>;
  applyForwarded(groupId: string, change: ForwardedChange): Promise<void>;
  events: { emit(ev: GatewayEvent): void; subscribe(listener: (ev: GatewayEvent) => void): () => void };
  groups: { get(id: string): GroupDoc | undefined };
}

export interface PgClusterOptions {
  pool: pg.Pool;
  /** For the LISTEN connection, held open outside the pool. */
  connectionString: string;
  instanceId: string;
  leaseSeconds: number;
  store: Pick<Store, 'readEntries'>;
  logger: Logger;
  /** Where the cluster's series go (`/metrics`). */
  registry?: Registry | undefined;
  /** Advertised in `chorus_instances` (operators' eyes only). */
  url?: string | undefined;
}

/** A lease this instance holds. `leaving`: being handed over; its last writes still pass the fence. */
interface Held {
  epoch: number;
  state: 'loading' | 'owned' | 'leaving';
}

const EVENTS_CHANNEL = 'chorus_events';
const INBOX_CHANNEL = 'chorus_inbox';
/** The owner's outcome of a command handed over from the web page, for the instance that took it. */
const ANSWERS_CHANNEL = 'chorus_answers';
/** How long a handed-over web command waits for the owner's answer before its 202 goes out. */
const ANSWER_WAIT_MS = 5000;
/** NOTIFY payloads must stay under 8000 bytes; leave room for the envelope. */
const PAYLOAD_MAX = 7000;
/** Inbox rows moved per query. */
const INBOX_BATCH = 200;
/** Refresh a read-only copy at most this often per group (events come in bursts). */
const REFRESH_DEBOUNCE_MS = 150;

export class PgCluster implements Ownership, ConnectionGate {
  private router: ClusterRouter | undefined;
  private readonly held = new Map<string, Held>();
  /** Connections registered by channels (key → what to do when this instance holds it or not). */
  private readonly conns = new Map<string, { start(): void | Promise<void>; stop(): Promise<void> }>();
  /** Group id → owner, from the last look at the lease table (for 409 messages). */
  private owners = new Map<string, string>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly refreshTimers = new Map<string, NodeJS.Timeout>();
  /** Events that came from another instance: shown here, never sent back out. */
  private readonly remote = new WeakSet<GatewayEvent>();
  /** Handed-over commands waiting for the owner's answer (group + message id → resolve). */
  private readonly answers = new Map<string, (a: { ephemeral?: EphemeralAnswer; entryId?: string }) => void>();
  private outgoing: string[] = [];
  private sending: Promise<void> | null = null;
  private listener: pg.Client | null = null;
  private unsubscribe: (() => void) | null = null;
  private tickTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private renewing: Promise<boolean> | null = null;
  private lastRenewOk = 0;
  private healthy = false;
  private lastError: string | undefined;
  private liveInstances = 1;
  private stopped = false;
  private tickCount = 0;
  private readonly leaseMs: number;
  private readonly log: Logger;
  private readonly takeovers: Counter | undefined;
  private readonly acquired: Counter | undefined;

  constructor(private readonly o: PgClusterOptions) {
    this.leaseMs = Math.round(o.leaseSeconds * 1000);
    this.log = o.logger.child({ part: 'cluster', instance: o.instanceId });
    if (o.registry) {
      const registers = [o.registry];
      const self = this;
      new Gauge({
        name: 'chorus_cluster_owned_groups',
        help: 'Groups this instance runs now (holds the lease of).',
        registers,
        collect() {
          this.set(self.ownedCount());
        },
      });
      new Gauge({
        name: 'chorus_cluster_live_instances',
        help: 'Instances with a fresh heartbeat on the shared database, this one included.',
        registers,
        collect() {
          this.set(self.liveInstances);
        },
      });
      new Gauge({
        name: 'chorus_cluster_lease_healthy',
        help: '1 while this instance renews its leases, 0 when it cannot (it then runs no group).',
        registers,
        collect() {
          this.set(self.healthy ? 1 : 0);
        },
      });
      this.takeovers = new Counter({ name: 'chorus_cluster_lease_takeovers_total', help: 'Group leases taken from another instance whose lease had expired (it died or stalled).', registers });
      this.acquired = new Counter({ name: 'chorus_cluster_leases_acquired_total', help: 'Group leases this instance took (new groups, free groups, takeovers).', registers });
      this.takeovers.inc(0);
      this.acquired.inc(0);
    }
  }

  get instanceId(): string {
    return this.o.instanceId;
  }

  /**
   * Expiry written at each renewal: 0.7 × lease. Another instance notices at its next tick (at
   * most lease / 6 later) and the rest of the lease is left for loading the group.
   */
  private get ttlMs(): number {
    return Math.round(this.leaseMs * 0.7);
  }

  private get tickMs(): number {
    return Math.max(50, Math.round(this.leaseMs / 6));
  }

  // -------------------------------------------------------------------------------------------
  // Ownership port

  owns(groupId: string): boolean {
    return this.healthy && this.held.get(groupId)?.state === 'owned';
  }

  ownerOf(groupId: string): string | null {
    if (this.held.has(groupId)) return this.o.instanceId;
    return this.owners.get(groupId) ?? null;
  }

  ownedCount(): number {
    let n = 0;
    for (const [key, h] of this.held) if (!key.includes(':') && h.state === 'owned') n++;
    return n;
  }

  /** Ids of the groups this instance runs (tests, status). */
  ownedGroups(): string[] {
    return [...this.held].filter(([k, h]) => !k.includes(':') && h.state === 'owned').map(([k]) => k);
  }

  async claimNew(groupId: string): Promise<boolean> {
    const { rows } = await this.o.pool.query<{ epoch: string }>(
      `INSERT INTO chorus_group_leases (key, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
       ON CONFLICT (key) DO NOTHING RETURNING epoch`,
      [groupId, this.o.instanceId, this.ttlMs],
    );
    const row = rows[0];
    if (!row) return false;
    this.held.set(groupId, { epoch: Number(row.epoch), state: 'owned' });
    this.acquired?.inc();
    return true;
  }

  async releaseNew(groupId: string): Promise<void> {
    const held = this.held.get(groupId);
    if (!held) return;
    this.held.delete(groupId);
    // Only the row this claim made: a group nobody created leaves no lease that is renewed forever.
    await this.o.pool.query(`DELETE FROM chorus_group_leases WHERE key = $1 AND owner = $2 AND epoch = $3`, [groupId, this.o.instanceId, held.epoch]);
  }

  async forward(groupId: string, msg: InboundMessage, opts: { awaitAnswer?: boolean } = {}): Promise<ReceiveResult> {
    // Listening before the insert: the owner may answer before the insert's reply reaches us.
    const key = JSON.stringify([groupId, msg.messageId]);
    let answered: Promise<{ ephemeral?: EphemeralAnswer; entryId?: string } | null> | null = null;
    let timer: NodeJS.Timeout | undefined;
    let mine: ((a: { ephemeral?: EphemeralAnswer; entryId?: string }) => void) | undefined;
    // (A second copy of the same message turns out a duplicate below and does not wait.)
    if (opts.awaitAnswer && this.listener && !this.answers.has(key)) {
      answered = new Promise((resolve) => {
        mine = resolve;
        this.answers.set(key, resolve);
        timer = setTimeout(() => resolve(null), ANSWER_WAIT_MS);
        timer.unref?.();
      });
    }
    try {
      const res = await this.insertInbox(groupId, msg);
      if (res.status !== 'forwarded' || !answered) return res;
      const answer = await answered;
      return answer ? { ...res, ...answer } : res;
    } finally {
      clearTimeout(timer);
      if (mine && this.answers.get(key) === mine) this.answers.delete(key);
    }
  }

  private async insertInbox(groupId: string, msg: InboundMessage): Promise<ReceiveResult> {
    try {
      const { rows } = await this.o.pool.query<{ id: string }>(
        `WITH ins AS (
           INSERT INTO chorus_inbox (group_id, dedupe_key, message) VALUES ($1, $2, $3::json)
           ON CONFLICT (group_id, dedupe_key) DO NOTHING RETURNING id)
         SELECT id, pg_notify('${INBOX_CHANNEL}', $1) FROM ins`,
        [groupId, msg.messageId, JSON.stringify(msg)],
      );
      const row = rows[0];
      if (!row) return { status: 'duplicate', groupId };
      return { status: 'forwarded', groupId, inboxId: String(row.id) };
    } catch (err) {
      this.log.warn({ group: groupId, err: describeError(err) }, 'could not hand a message over to the inbox');
      return { status: 'rejected', groupId, code: 'unavailable', reason: 'storage is unavailable; nothing was recorded, try again shortly' };
    }
  }

  async forwardChange(groupId: string, change: ForwardedChange): Promise<void> {
    try {
      await this.o.pool.query(
        `WITH ins AS (INSERT INTO chorus_inbox (group_id, dedupe_key, message) VALUES ($1, $2, $3::json) RETURNING id)
         SELECT id, pg_notify('${INBOX_CHANNEL}', $1) FROM ins`,
        [groupId, `change:${randomUUID()}`, JSON.stringify({ forwardedChange: change })],
      );
    } catch (err) {
      throw new StoreUnavailableError(`could not hand a change of group ${groupId} over: ${describeError(err)}`, { cause: err });
    }
  }

  async beforeReceive(groupId: string): Promise<void> {
    let drained = false;
    await this.serial(groupId, async () => {
      drained = await this.drainNow(groupId);
    });
    // An earlier message still waits in the inbox: recording this one now would put it first.
    if (!drained) throw new StoreUnavailableError(`messages handed over for group ${groupId} are not recorded yet; try again shortly`);
  }

  status(): ClusterStatus {
    const connections = [...this.held].filter(([k, h]) => k.includes(':') && h.state === 'owned').map(([k]) => k);
    return {
      ok: this.healthy,
      instanceId: this.o.instanceId,
      ownedGroups: this.ownedCount(),
      liveInstances: this.liveInstances,
      ...(connections.length ? { connections } : {}),
      ...(this.healthy || !this.lastError ? {} : { error: this.lastError }),
    };
  }

  /** A connection only one instance may hold (see ConnectionGate); taken at the next tick. */
  hold(key: string, handlers: { start(): void | Promise<void>; stop(): Promise<void> }): void {
    if (!key.includes(':')) throw new Error(`connection keys contain ":" (got "${key}")`);
    this.conns.set(key, handlers);
  }

  // -------------------------------------------------------------------------------------------
  // Store hook

  /**
   * Runs inside the store's append transaction: the groups of `groupIds` this instance may no
   * longer write. `FOR SHARE` keeps the rows as they are until the transaction ends, so a
   * takeover's UPDATE waits for the commit and the new owner reads it.
   */
  readonly fence = async (tx: pg.PoolClient, groupIds: readonly string[]): Promise<string[]> => {
    const keys: string[] = [];
    const epochs: number[] = [];
    const refused: string[] = [];
    for (const id of groupIds) {
      const h = this.held.get(id);
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
    if (refused.length > 0) this.log.warn({ groups: refused }, 'write refused: this instance no longer holds the lease of these groups');
    return refused;
  };

  // -------------------------------------------------------------------------------------------
  // Lifecycle

  attach(router: ClusterRouter): void {
    this.router = router;
  }

  /** Join the cluster: listen, heartbeat, take free groups. Call after the router has loaded. */
  async start(): Promise<void> {
    if (!this.router) throw new Error('PgCluster.start before attach');
    this.stopped = false;
    await this.listen();
    const pool = this.o.pool;
    await pool.query(
      `INSERT INTO chorus_instances (id, url, started_at, heartbeat_at) VALUES ($1, $2, now(), now())
       ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, started_at = now(), heartbeat_at = now()`,
      [this.o.instanceId, this.o.url ?? null],
    );
    // A previous run under the same instance id (a fixed cluster.instance_id) died holding these:
    // free them, so they are taken again with a new epoch like any other.
    await pool.query(`UPDATE chorus_group_leases SET expires_at = '-infinity' WHERE owner = $1 AND epoch > 0 AND NOT (key = ANY($2::text[]))`, [this.o.instanceId, [...this.held.keys()]]);
    await this.ensureRows();
    this.lastRenewOk = Date.now();
    this.healthy = true;
    // Events of the groups this instance runs go out to the others.
    this.unsubscribe = this.router.events.subscribe((ev) => this.publish(ev));
    // Renewals keep their pace while the first tick's claims and loads run.
    this.tickTimer = setInterval(() => void this.tick(), this.tickMs);
    this.tickTimer.unref?.();
    // Independent of the tick (which may hang on a dead database): stop running groups in time.
    this.watchdog = setInterval(() => this.checkRenewal(), Math.max(25, Math.round(this.tickMs / 2)));
    this.watchdog.unref?.();
    await this.tick();
  }

  /** First step of a shutdown (before the router stops): take no more groups. */
  stopTaking(): void {
    this.stopped = true;
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.watchdog) clearInterval(this.watchdog);
    this.tickTimer = this.watchdog = null;
  }

  /**
   * Leave: the router has stopped (rounds interrupted, records written). The leases are freed at
   * once so other instances take the groups over without waiting for them to expire.
   */
  async stop(): Promise<void> {
    this.stopTaking();
    for (const t of this.refreshTimers.values()) clearTimeout(t);
    this.refreshTimers.clear();
    this.unsubscribe?.();
    this.unsubscribe = null;
    await Promise.all([this.renewing, this.ticking]);
    await this.sending?.catch(() => undefined);
    const keys = [...this.held.keys()];
    this.held.clear();
    this.healthy = false;
    try {
      if (keys.length) await this.o.pool.query(`UPDATE chorus_group_leases SET owner = NULL, expires_at = '-infinity' WHERE owner = $1 AND key = ANY($2::text[])`, [this.o.instanceId, keys]);
      await this.o.pool.query('DELETE FROM chorus_instances WHERE id = $1', [this.o.instanceId]);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'could not free the leases at stop; they expire on their own');
    }
    const l = this.listener;
    this.listener = null;
    await l?.end().catch(() => undefined);
  }

  // -------------------------------------------------------------------------------------------
  // Leases

  /**
   * The renewal never waits for the rest of a tick, which is slow on a busy machine: behind it,
   * renewals came too late for the watchdog, which stopped every group (to be claimed, and stopped again).
   */
  private tick(): Promise<void> {
    if (this.stopped) return this.ticking ?? Promise.resolve();
    const failed = (err: unknown) => this.log.warn({ err: describeError(err) }, 'lease tick failed');
    this.renewing ??= this.renew()
      .catch((err: unknown) => {
        this.lastError = `lease renewal failed: ${describeError(err)}`;
        failed(err);
        return false;
      })
      .finally(() => (this.renewing = null));
    this.ticking ??= this.renewing.then((ok) => (ok ? this.balance() : undefined)).catch(failed).finally(() => (this.ticking = null));
    return this.ticking;
  }

  /** Heartbeat and renewal of everything held, in one statement; a row not renewed was taken. */
  private async renew(): Promise<boolean> {
    const keys = [...this.held.keys()];
    const epochs = keys.map((k) => this.held.get(k)!.epoch);
    const started = Date.now();
    const { rows: renewed } = await this.o.pool.query<{ key: string }>(
      `WITH beat AS (UPDATE chorus_instances SET heartbeat_at = now() WHERE id = $4)
       UPDATE chorus_group_leases l SET expires_at = now() + $1 * interval '1 millisecond'
       FROM unnest($2::text[], $3::bigint[]) AS m(key, epoch)
       WHERE l.key = m.key AND l.epoch = m.epoch AND l.owner = $4
       RETURNING l.key`,
      [this.ttlMs, keys, epochs, this.o.instanceId],
    );
    const back = new Set(renewed.map((r) => r.key));
    keys.forEach((k, i) => {
      if (!back.has(k) && this.held.get(k)?.epoch === epochs[i]) this.lose(k, 'the lease was taken by another instance');
    });
    // Counted from when the renewal was sent: the rows expire ttl after the server ran it.
    this.lastRenewOk = started;
    if (!this.healthy) this.log.info('lease renewal works again');
    this.healthy = true;
    this.lastError = undefined;
    return !this.stopped;
  }

  /** Take or hand over groups and connections; look for inbox rows whose NOTIFY was missed. */
  private async balance(): Promise<void> {
    const pool = this.o.pool;
    if (++this.tickCount % 10 === 0) await this.ensureRows();
    // Groups held by each other live instance (stale after a lease's ttl: a dead one stops counting as its groups free up).
    const { rows: counts } = await pool.query<{ total: string; others: string[] }>(
      `SELECT (SELECT count(*) FROM chorus_group_leases WHERE position(':' in key) = 0) AS total,
              ARRAY(SELECT (SELECT count(*) FROM chorus_group_leases l WHERE l.owner = i.id AND l.expires_at > now() AND position(':' in l.key) = 0)
                    FROM chorus_instances i WHERE i.heartbeat_at > now() - $1 * interval '1 millisecond' AND i.id <> $2) AS others`,
      [this.ttlMs, this.o.instanceId],
    );
    const others = (counts[0]?.others ?? []).map(Number);
    this.liveInstances = 1 + others.length;
    const total = Number(counts[0]?.total ?? 0);
    const target = Math.ceil(total / this.liveInstances);
    const mine = [...this.held.keys()].filter((k) => !k.includes(':')).length;
    if (mine < target) await this.claim(target - mine, 0);
    else {
      if (mine > target && this.liveInstances > 1) this.shedOne();
      // Groups nobody took for two ticks (their instance's heartbeat still looked fresh, or the
      // others are full): run them here rather than leave them unanswered. While a live instance is
      // below its share they are its to take, however late its tick (taking them back here would
      // only hand them over again); free for a whole lease, they are taken anyway.
      await this.claim(100, others.some((n) => n < target) ? this.leaseMs : this.tickMs * 2);
    }

    const { rows: leases } = await pool.query<{ key: string; owner: string | null; live: boolean }>(`SELECT key, owner, expires_at > now() AS live FROM chorus_group_leases`);
    this.owners = new Map(leases.filter((r) => r.live && r.owner !== null).map((r) => [r.key, r.owner!]));
    // Groups created by another instance that this one has not heard of (it was not listening
    // yet, or lost a race to create the same declared group): read them in.
    for (const r of leases) if (!r.key.includes(':') && !this.held.has(r.key) && !this.router!.groups.get(r.key)) void this.refreshNow(r.key);
    await this.claimConnections();
    // Inbox rows whose NOTIFY was missed (a reconnect, a takeover in progress).
    const { rows: waiting } = await pool.query<{ group_id: string }>('SELECT DISTINCT group_id FROM chorus_inbox');
    for (const r of waiting) if (this.owns(r.group_id)) void this.serial(r.group_id, () => this.drainNow(r.group_id).then(() => undefined));
  }

  /** Every group the store holds gets a lease row (groups written before the cluster existed). */
  private async ensureRows(): Promise<void> {
    await this.o.pool.query(`INSERT INTO chorus_group_leases (key) SELECT id FROM chorus_groups ON CONFLICT (key) DO NOTHING`);
  }

  /** Take up to `n` group leases expired for more than `expiredMs`. */
  private async claim(n: number, expiredMs: number): Promise<void> {
    const { rows } = await this.o.pool.query<{ key: string; epoch: string; prev: string | null }>(
      `WITH c AS (
         SELECT key, owner AS prev FROM chorus_group_leases
         WHERE position(':' in key) = 0 AND expires_at < now() - $4 * interval '1 millisecond'
         ORDER BY random() LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE chorus_group_leases l SET owner = $2, epoch = l.epoch + 1, expires_at = now() + $3 * interval '1 millisecond'
       FROM c WHERE l.key = c.key
       RETURNING l.key, l.epoch, c.prev`,
      [n, this.o.instanceId, this.ttlMs, expiredMs],
    );
    for (const r of rows) {
      this.held.set(r.key, { epoch: Number(r.epoch), state: 'loading' });
      this.acquired?.inc();
      const takeover = r.prev !== null && r.prev !== this.o.instanceId;
      if (takeover) this.takeovers?.inc();
      void this.serial(r.key, () => this.adopt(r.key, r.prev, Number(r.epoch)));
    }
  }

  /**
   * Take the registered connections nobody holds. Each instance takes up to its share; one that
   * stayed free for two ticks (its holder died and the others are full) is taken by anyone.
   */
  private async claimConnections(): Promise<void> {
    let mine = [...this.held.keys()].filter((k) => this.conns.has(k)).length;
    const share = Math.ceil(this.conns.size / this.liveInstances);
    for (const [key, handlers] of this.conns) {
      if (this.held.has(key) || this.stopped) continue;
      const { rows } = await this.o.pool.query<{ epoch: string }>(
        `INSERT INTO chorus_group_leases AS l (key, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
         ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
         WHERE l.expires_at < now() - $4 * interval '1 millisecond'
         RETURNING epoch`,
        [key, this.o.instanceId, this.ttlMs, mine < share ? 0 : this.tickMs * 2],
      );
      const row = rows[0];
      if (!row) continue;
      this.held.set(key, { epoch: Number(row.epoch), state: 'owned' });
      mine++;
      this.log.info({ connection: key }, 'now holding a connection');
      try {
        await handlers.start();
      } catch (err) {
        this.log.warn({ connection: key, err: describeError(err) }, 'could not start a connection; its lease is given back');
        await this.giveBack(key, Number(row.epoch));
      }
    }
  }

  /** Load a group just taken, move its waiting inbox rows in, then finish its recorded rounds. */
  private async adopt(id: string, prev: string | null, epoch: number): Promise<void> {
    const router = this.router!;
    const startedAt = Date.now();
    try {
      const found = await router.adopt(id);
      if (this.held.get(id)?.epoch !== epoch) return; // lost again meanwhile
      if (!found) {
        // A lease row whose group never got its first record (its creator died right then).
        this.held.delete(id);
        await this.o.pool.query(`DELETE FROM chorus_group_leases WHERE key = $1 AND owner = $2 AND NOT EXISTS (SELECT 1 FROM chorus_groups WHERE id = $1)`, [id, this.o.instanceId]);
        return;
      }
      this.held.set(id, { epoch, state: 'owned' });
      await this.drainNow(id);
      router.resumeOwned(id);
      this.log.info({ group: id, epoch, from: prev, ms: Date.now() - startedAt }, prev && prev !== this.o.instanceId ? 'took over a group from another instance' : 'now running a group');
    } catch (err) {
      this.log.warn({ group: id, err: describeError(err) }, 'could not take a group over; its lease is given back');
      await this.giveBack(id, epoch);
    }
  }

  /** The lease is gone (taken, or not renewable): stop running the group now. */
  private lose(id: string, why: string): void {
    if (!this.held.delete(id)) return;
    const conn = this.conns.get(id);
    if (conn) {
      this.log.warn({ connection: id, why }, 'stopped holding a connection');
      void this.serial(id, () => conn.stop());
      return;
    }
    this.log.warn({ group: id, why }, 'stopped running a group');
    if (!id.includes(':')) void this.serial(id, () => this.router!.relinquish(id, { graceful: false }));
  }

  /** Hand one idle group back so a less loaded instance takes it. */
  private shedOne(): void {
    for (const [id, h] of this.held) {
      if (id.includes(':') || h.state !== 'owned') continue;
      const g = this.router!.groups.get(id);
      if (g && g.rounds.length > 0) continue;
      h.state = 'leaving';
      this.log.info({ group: id }, 'handing a group over to spread the load');
      void this.serial(id, async () => {
        await this.router!.relinquish(id, { graceful: true });
        await this.giveBack(id, h.epoch);
      });
      return;
    }
  }

  private async giveBack(id: string, epoch: number): Promise<void> {
    if (this.held.get(id)?.epoch === epoch) this.held.delete(id);
    await this.o.pool
      // Expired as of now (not -infinity): an instance already at its share leaves it to the others.
      .query(`UPDATE chorus_group_leases SET owner = NULL, expires_at = now() WHERE key = $1 AND owner = $2 AND epoch = $3`, [id, this.o.instanceId, epoch])
      .catch((err: unknown) => this.log.warn({ group: id, err: describeError(err) }, 'could not free a lease; it expires on its own'));
  }

  /** Renewal has failed for too long: stop everything before the leases can expire. */
  private checkRenewal(): void {
    if (!this.healthy || this.stopped) return;
    // Just before the rows expire (ttl after the last renewal was sent): the fence already keeps
    // a stale owner from writing; this stops it from working for nothing and says so on /readyz.
    if (Date.now() - this.lastRenewOk < this.ttlMs - this.leaseMs * 0.05) return;
    this.healthy = false;
    this.lastError ??= 'leases could not be renewed';
    this.log.error({ held: this.held.size }, 'cannot renew leases: every group is stopped here until the database answers again');
    for (const id of [...this.held.keys()]) this.lose(id, 'renewal failed');
  }

  // -------------------------------------------------------------------------------------------
  // Inbox

  /**
   * Move the group's waiting inbox rows into its log, oldest first. Call inside `serial`. True
   * once none is left; false when one could not be recorded (it stays for the next try).
   */
  private async drainNow(groupId: string): Promise<boolean> {
    const router = this.router!;
    for (;;) {
      if (!this.owns(groupId)) return false;
      const { rows } = await this.o.pool.query<{ id: string; message: InboundMessage | { forwardedChange: ForwardedChange } }>('SELECT id, message FROM chorus_inbox WHERE group_id = $1 ORDER BY id LIMIT $2', [groupId, INBOX_BATCH]);
      let kept = 0;
      for (const row of rows) {
        if ('forwardedChange' in row.message) {
          try {
            await router.applyForwarded(groupId, row.message.forwardedChange);
          } catch (err) {
            this.log.warn({ group: groupId, inboxId: row.id, err: describeError(err) }, 'a handed-over change could not be applied yet; it stays in the inbox');
            return false;
          }
          await this.o.pool.query('DELETE FROM chorus_inbox WHERE id = $1', [row.id]);
          continue;
        }
        const res = await router.receiveForwarded(row.message);
        // Not recorded (the store refused, or this instance is leaving): the row stays for later.
        if (res.status === 'rejected' && (res.code === 'unavailable' || res.code === 'shutting_down')) {
          this.log.warn({ group: groupId, inboxId: row.id, reason: res.reason }, 'a handed-over message could not be recorded yet; it stays in the inbox');
          return false;
        }
        if (res.status === 'no_group') {
          // Acknowledged, yet this instance finds no group for its chat (the chat moved to a new id
          // after it was handed over): deleting it would lose it. It stays, the rest goes on.
          this.log.error({ group: groupId, inboxId: row.id, chat: row.message.chatId }, 'a handed-over message has no group for its chat here; it is kept in the inbox (chorus_inbox) for an operator');
          kept++;
          continue;
        }
        // A command from the web page: the instance that took it may still be waiting to answer.
        const answer = row.message.ephemeral && res.status === 'command' ? JSON.stringify({ k: [groupId, row.message.messageId], e: res.ephemeral, id: res.entryId }) : null;
        if (answer && Buffer.byteLength(answer) > PAYLOAD_MAX) {
          // Too long for NOTIFY: the asker is told where it went (the page can ask again).
          await this.o.pool.query(`SELECT pg_notify('${ANSWERS_CHANNEL}', $1)`, [JSON.stringify({ k: [groupId, row.message.messageId], id: res.entryId ?? null, big: true })]).catch(() => undefined);
        } else if (answer) await this.o.pool.query(`SELECT pg_notify('${ANSWERS_CHANNEL}', $1)`, [answer]).catch(() => undefined);
        await this.o.pool.query('DELETE FROM chorus_inbox WHERE id = $1', [row.id]);
      }
      // A full batch of kept rows would be read again and again: stop there.
      if (rows.length < INBOX_BATCH || kept === rows.length) return true;
    }
  }

  // -------------------------------------------------------------------------------------------
  // LISTEN / NOTIFY

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.o.connectionString, application_name: 'chorus-listen' });
    client.on('error', (err) => {
      this.log.warn({ err: describeError(err) }, 'the LISTEN connection failed; reconnecting');
      if (this.listener === client) {
        this.listener = null;
        this.relisten(500);
      }
    });
    client.on('notification', (n) => this.onNotification(n.channel, n.payload ?? ''));
    await client.connect();
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    await client.query(`LISTEN ${INBOX_CHANNEL}`);
    await client.query(`LISTEN ${ANSWERS_CHANNEL}`);
    this.listener = client;
  }

  private relisten(wait: number): void {
    if (this.stopped) return;
    const t = setTimeout(async () => {
      try {
        await this.listen();
        // Whatever was sent meanwhile was missed: read every copy again, take waiting messages.
        for (const id of this.copies()) this.scheduleRefresh(id);
        void this.tick();
      } catch {
        this.relisten(Math.min(wait * 2, 10_000));
      }
    }, wait);
    t.unref?.();
  }

  private copies(): string[] {
    return this.router ? [...this.owners.keys()].filter((k) => !k.includes(':') && !this.owns(k)) : [];
  }

  private onNotification(channel: string, payload: string): void {
    if (channel === INBOX_CHANNEL) {
      if (this.owns(payload)) void this.serial(payload, () => this.drainNow(payload).then(() => undefined));
      return;
    }
    if (channel === ANSWERS_CHANNEL) {
      try {
        const a = JSON.parse(payload) as { k: [string, string]; e?: EphemeralAnswer; id?: string | null; big?: boolean };
        const resolve = this.answers.get(JSON.stringify(a.k));
        resolve?.({ ...(a.e && !a.big ? { ephemeral: a.e } : {}), ...(a.id ? { entryId: a.id } : {}) });
      } catch {
        // Not ours to read: ignore.
      }
      return;
    }
    let msg: { i: string; e: WireEvent };
    try {
      msg = JSON.parse(payload) as { i: string; e: WireEvent };
    } catch {
      return;
    }
    if (msg.i === this.o.instanceId) return;
    const ev = msg.e;
    const groupId = ev.groupId;
    if (this.owns(groupId)) return; // a stale owner's echo: this instance runs the group now
    // In order per group: an entry that must be read from the database holds back what follows.
    void this.serial(`events:${groupId}`, async () => {
      let out: GatewayEvent;
      if ((ev.type === 'message' || ev.type === 'decision') && 'seq' in ev) {
        const [entry] = await this.o.store.readEntries(groupId, { afterSeq: ev.seq - 1, limit: 1 });
        if (!entry || entry.seq !== ev.seq) return;
        out = { type: ev.type, groupId, entry };
      } else if (ev.type === 'edited' && typeof ev.text !== 'string') {
        // An edit too long for one notification comes without its text: read as the store has it.
        const [entry] = await this.o.store.readEntries(groupId, { afterSeq: ev.seq - 1, limit: 1 });
        if (!entry || entry.seq !== ev.seq) return;
        out = { ...ev, text: entry.text };
      } else {
        out = ev as GatewayEvent;
        // The page asks for the group right after these: the copy here must show the change.
        if (out.type === 'group' || out.type === 'member' || out.type === 'config') await this.refreshNow(groupId);
      }
      // Cheap: the entry joins the copy's tail; the rest of the copy is read again on changes.
      if ((out.type === 'message' || out.type === 'decision') && !this.held.has(groupId)) this.router?.copyEntry(groupId, out.entry);
      this.remote.add(out);
      this.router?.events.emit(out);
    });
  }

  private refreshNow(groupId: string): Promise<void> {
    return this.serial(groupId, async () => {
      if (this.held.has(groupId)) return;
      await this.router!.refreshCopy(groupId).catch((err: unknown) => this.log.debug({ group: groupId, err: describeError(err) }, 'could not refresh a read-only copy'));
    });
  }

  private scheduleRefresh(groupId: string): void {
    if (this.refreshTimers.has(groupId) || this.stopped) return;
    const t = setTimeout(() => {
      this.refreshTimers.delete(groupId);
      void this.refreshNow(groupId);
    }, REFRESH_DEBOUNCE_MS);
    t.unref?.();
    this.refreshTimers.set(groupId, t);
  }

  /** A local event of a group this instance runs: send it to the others, in order. */
  private publish(ev: GatewayEvent): void {
    if (this.remote.has(ev) || this.stopped) return;
    if (!this.held.has(ev.groupId)) return;
    for (const wire of toWire(ev)) this.outgoing.push(JSON.stringify({ i: this.o.instanceId, e: wire }));
    if (!this.sending) this.sending = this.sendLoop();
  }

  private async sendLoop(): Promise<void> {
    try {
      while (this.outgoing.length > 0) {
        const batch = this.outgoing;
        this.outgoing = [];
        try {
          // One statement, one connection at a time: NOTIFYs arrive in the order they were sent.
          await this.o.pool.query(`SELECT pg_notify('${EVENTS_CHANNEL}', p) FROM unnest($1::text[]) WITH ORDINALITY AS t(p, i) ORDER BY i`, [batch]);
        } catch (err) {
          this.log.debug({ err: describeError(err), events: batch.length }, 'could not send live events to other instances');
        }
      }
    } finally {
      this.sending = null;
    }
  }

  /** Run `fn` after everything queued before it for the same key. */
  private serial(key: string, fn: () => Promise<void>): Promise<void> {
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev.then(fn).catch((err: unknown) => this.log.warn({ key, err: describeError(err) }, 'cluster task failed'));
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
    return next;
  }
}

/** An event as sent over NOTIFY: entries too large travel as their seq. */
type WireEvent = GatewayEvent | { type: 'message' | 'decision'; groupId: string; seq: number } | (Omit<Extract<GatewayEvent, { type: 'edited' }>, 'text'> & { text?: undefined });

/** Split an event into NOTIFY-sized pieces (an entry by reference, a long delta in parts). */
export function toWire(ev: GatewayEvent): WireEvent[] {
  if (ev.type === 'message' || ev.type === 'decision') {
    const full = JSON.stringify(ev);
    if (Buffer.byteLength(full) <= PAYLOAD_MAX) return [ev];
    return [{ type: ev.type, groupId: ev.groupId, seq: (ev.entry as TranscriptEntry).seq }];
  }
  if (ev.type === 'edited' && Buffer.byteLength(JSON.stringify(ev)) > PAYLOAD_MAX) {
    const { text: _text, ...rest } = ev;
    return [rest as WireEvent];
  }
  if (ev.type === 'delta' && Buffer.byteLength(JSON.stringify(ev)) > PAYLOAD_MAX) {
    return splitText(ev.text, Math.floor(PAYLOAD_MAX / 8)).map((text) => ({ ...ev, text }));
  }
  return [ev];
}

/** Cut text into pieces of at most `max` UTF-16 units, never inside a surrogate pair. */
function splitText(text: string, max: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(text.length, i + max);
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}
