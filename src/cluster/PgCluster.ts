/**
 * Several Chorus instances on one PostgreSQL database: which instance runs which group, and how
 * the others reach it. This is the coordinator; the parts live beside it:
 *
 * - `leases.ts`: the lease table, typed group and connection leases, and the fence every append
 *   runs inside its transaction (a stale owner can never write).
 * - `inbox.ts`: messages taken for a group another instance runs, moved into its log by the owner.
 * - `relay.ts`: live events sent to the other instances, and their read-only copies kept fresh.
 *
 * Timing. The owner renews its leases every `lease/6`; a row not renewed expires after
 * `0.7 × lease`. Worst case from a `kill -9` to the new owner holding the lease: 0.7 × lease +
 * one tick ≈ 0.87 × lease; the rest of `lease_seconds` is left for loading the group and moving
 * its inbox in. An instance that cannot renew for `0.65 × lease` stops running every group at once
 * (just before its rows can expire) and reports not ready.
 *
 * Spreading. Each instance takes at most ceil(groups / live instances); one above that hands an
 * idle group back (gracefully: its current round ends first) until groups are spread. A new owner
 * drains the group's inbox before it resumes the group.
 */
import type pg from 'pg';
import type { Registry } from 'prom-client';
import type { ConnectionGate, PlatformChange, Logger, Peers, Store } from '../core/ports.js';
import type { GroupDoc } from '../core/records.js';
import type { ClusterStatus } from '../core/readModels.js';
import type { InboundMessage, ReceiveResult } from '../core/types.js';
import { StoreUnavailableError, describeError } from '../core/errors.js';
import { Leases, groupKey, type LeaseKey } from './leases.js';
import { Connections } from './connections.js';
import { ANSWERS_CHANNEL, INBOX_CHANNEL, Inbox, type InboxOwner } from './inbox.js';
import { EVENTS_CHANNEL, EventRelay, type RelayRouter } from './relay.js';
import { Serial } from './serial.js';
import { Listener } from './listener.js';
import { clusterMetrics, type ClusterCounters } from './metrics.js';

export { toWire } from './relay.js';

const NOT_RUN_HERE: ReceiveResult = { status: 'rejected', code: 'unavailable', reason: 'this instance no longer runs the group' };

/** What the cluster needs from the local router (GroupRouter has all of it). */
export interface ClusterRouter extends Pick<InboxOwner, 'receiveForwarded'> {
  /** The router runs the group now (it was handed the group, and has not let it go). */
  runs(groupId: string): boolean;
  /** Taking groups on and handing them back; the router runs only the groups it was handed. */
  hosting: Pick<InboxOwner, 'applyForwarded'> &
    Pick<RelayRouter, 'refreshCopy' | 'copyEntry'> & {
      adopt(id: string): Promise<boolean>;
      run(id: string): void;
      resumeOwned(id: string): void;
      release(id: string): void;
      relinquish(id: string, opts: { graceful: boolean }): Promise<void>;
    };
  events: RelayRouter['events'];
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

export class PgCluster implements Peers, ConnectionGate {
  private router: ClusterRouter | undefined;
  private readonly leases: Leases;
  private readonly inbox: Inbox;
  private readonly relay: EventRelay;
  private readonly serial: Serial;
  private readonly connections: Connections;
  private readonly listener: Listener;
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
  private readonly counters: ClusterCounters | undefined;

  constructor(private readonly o: PgClusterOptions) {
    this.leaseMs = Math.round(o.leaseSeconds * 1000);
    this.log = o.logger.child({ part: 'cluster', instance: o.instanceId });
    this.serial = new Serial(this.log);
    this.leases = new Leases({ pool: o.pool, instanceId: o.instanceId, leaseMs: this.leaseMs, log: this.log });
    this.connections = new Connections({ leases: this.leases, serial: this.serial, log: this.log });
    this.inbox = new Inbox({ pool: o.pool, log: this.log, listening: () => this.listener.up });
    this.listener = new Listener({
      connectionString: o.connectionString,
      channels: [EVENTS_CHANNEL, INBOX_CHANNEL, ANSWERS_CHANNEL],
      log: this.log,
      onNotification: (channel, payload) => this.onNotification(channel, payload),
      onReconnect: () => {
        // Whatever was sent meanwhile was missed: read every copy again, take waiting messages.
        for (const id of this.copies()) this.relay.scheduleRefresh(id);
        void this.tick();
      },
    });
    this.relay = new EventRelay({
      pool: o.pool,
      instanceId: o.instanceId,
      store: o.store,
      log: this.log,
      serial: this.serial,
      holds: (id) => this.leases.groups.has(id),
      runs: (id) => this.owns(id),
    });
    if (o.registry) this.counters = clusterMetrics(o.registry, { ownedCount: () => this.ownedCount(), liveInstances: () => this.liveInstances, healthy: () => this.healthy });
  }

  get instanceId(): string {
    return this.o.instanceId;
  }

  // -------------------------------------------------------------------------------------------
  // Peers port, and the owners' side of ClusteredHost

  owns(groupId: string): boolean {
    return this.healthy && this.leases.groups.get(groupId)?.state === 'owned';
  }

  ownerOf(groupId: string): string | null {
    if (this.leases.groups.has(groupId)) return this.o.instanceId;
    return this.leases.owners.get(groupId) ?? null;
  }

  ownedCount(): number {
    return this.leases.ownedGroups().length;
  }

  /** Ids of the groups this instance runs (tests, status). */
  ownedGroups(): string[] {
    return this.leases.ownedGroups();
  }

  async claimNew(groupId: string): Promise<boolean> {
    const claimed = await this.leases.claimNew(groupId);
    if (claimed) this.counters?.acquired.inc();
    return claimed;
  }

  releaseNew(groupId: string): Promise<void> {
    return this.leases.releaseNew(groupId);
  }

  forward(groupId: string, msg: InboundMessage, opts: { awaitAnswer?: boolean } = {}): Promise<ReceiveResult> {
    return this.inbox.forward(groupId, msg, opts);
  }

  forwardChange(groupId: string, change: PlatformChange): Promise<void> {
    return this.inbox.forwardChange(groupId, change);
  }

  async beforeReceive(groupId: string): Promise<void> {
    let drained = false;
    await this.serial.run(groupId, async () => {
      drained = await this.drain(groupId);
    });
    // An earlier message still waits in the inbox: recording this one now would put it first.
    if (!drained) throw new StoreUnavailableError(`messages handed over for group ${groupId} are not recorded yet; try again shortly`);
  }

  status(): ClusterStatus {
    const connections = this.leases.ownedConnections();
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
    this.connections.hold(key, handlers);
  }

  /** Store hook: runs inside the append transaction; the groups this instance may no longer write. */
  readonly fence = (tx: pg.PoolClient, groupIds: readonly string[]): Promise<string[]> => this.leases.fence(tx, groupIds);

  // -------------------------------------------------------------------------------------------
  // Lifecycle

  attach(router: ClusterRouter): void {
    this.router = router;
  }

  /** Join the cluster: listen, heartbeat, take free groups. Call after the router has loaded. */
  async start(): Promise<void> {
    if (!this.router) throw new Error('PgCluster.start before attach');
    this.stopped = false;
    await this.listener.start();
    await this.leases.register(this.o.url ?? null);
    await this.leases.ensureRows();
    this.lastRenewOk = Date.now();
    this.healthy = true;
    // Events of the groups this instance runs go out to the others.
    const { hosting, events } = this.router;
    this.relay.start({ events, refreshCopy: (id) => hosting.refreshCopy(id), copyEntry: (id, e) => hosting.copyEntry(id, e) });
    // Renewals keep their pace while the first tick's claims and loads run.
    this.tickTimer = setInterval(() => void this.tick(), this.leases.tickMs);
    this.tickTimer.unref?.();
    // Independent of the tick (which may hang on a dead database): stop running groups in time.
    this.watchdog = setInterval(() => this.checkRenewal(), Math.max(25, Math.round(this.leases.tickMs / 2)));
    this.watchdog.unref?.();
    await this.tick();
  }

  /** First step of a shutdown (before the router stops): take no more groups. */
  stopTaking(): void {
    this.stopped = true;
    this.listener.halt();
    this.relay.halt();
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
    const relayStopped = this.relay.stop();
    await Promise.all([this.renewing, this.ticking]);
    await relayStopped;
    this.healthy = false;
    await this.leases.leave();
    await this.listener.stop();
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

  /** Heartbeat and renewal of everything held; a lease not renewed was taken. */
  private async renew(): Promise<boolean> {
    const started = Date.now();
    for (const k of await this.leases.renew()) this.lose(k, 'the lease was taken by another instance');
    // Counted from when the renewal was sent: the rows expire ttl after the server ran it.
    this.lastRenewOk = started;
    if (!this.healthy) this.log.info('lease renewal works again');
    this.healthy = true;
    this.lastError = undefined;
    return !this.stopped;
  }

  /** Take or hand over groups and connections; look for inbox rows whose NOTIFY was missed. */
  private async balance(): Promise<void> {
    if (++this.tickCount % 10 === 0) await this.leases.ensureRows();
    // Groups held by each other live instance (stale after a lease's ttl: a dead one stops counting as its groups free up).
    const { total, others } = await this.leases.spread();
    this.liveInstances = 1 + others.length;
    const target = Math.ceil(total / this.liveInstances);
    const mine = this.leases.groups.size;
    if (mine < target) await this.claim(target - mine, 0);
    else {
      if (mine > target && this.liveInstances > 1) this.shedOne();
      // Groups nobody took for two ticks (their instance's heartbeat still looked fresh, or the
      // others are full): run them here rather than leave them unanswered. While a live instance is
      // below its share they are its to take, however late its tick (taking them back here would
      // only hand them over again); free for a whole lease, they are taken anyway.
      await this.claim(100, others.some((n) => n < target) ? this.leaseMs : this.leases.tickMs * 2);
    }
    // Groups created by another instance that this one has not heard of (it was not listening
    // yet, or lost a race to create the same declared group): read them in.
    for (const id of await this.leases.look()) if (!this.leases.groups.has(id) && !this.router!.groups.get(id)) void this.relay.refreshNow(id);
    await this.connections.claim(this.liveInstances, () => this.stopped);
    // Inbox rows whose NOTIFY was missed (a reconnect, a takeover in progress).
    for (const id of await this.inbox.waiting()) if (this.owns(id)) void this.serial.run(id, () => this.drain(id));
  }

  /** Take up to `n` group leases expired for more than `expiredMs`, and load them. */
  private async claim(n: number, expiredMs: number): Promise<void> {
    for (const r of await this.leases.claimGroups(n, expiredMs)) {
      this.counters?.acquired.inc();
      if (r.prev !== null && r.prev !== this.o.instanceId) this.counters?.takeovers.inc();
      void this.serial.run(r.id, () => this.adopt(r.id, r.prev, r.epoch));
    }
  }

  /** Load a group just taken, move its waiting inbox rows in, then finish its recorded rounds. */
  private async adopt(id: string, prev: string | null, epoch: number): Promise<void> {
    const router = this.router!;
    const startedAt = Date.now();
    try {
      const found = await router.hosting.adopt(id);
      if (this.leases.groups.get(id)?.epoch !== epoch) return; // lost again meanwhile
      if (!found) {
        // A lease row whose group never got its first record (its creator died right then).
        await this.leases.dropOrphan(id);
        return;
      }
      this.leases.groups.set(id, { epoch, state: 'owned' });
      router.hosting.run(id);
      await this.drain(id);
      router.hosting.resumeOwned(id);
      this.log.info({ group: id, epoch, from: prev, ms: Date.now() - startedAt }, prev && prev !== this.o.instanceId ? 'took over a group from another instance' : 'now running a group');
    } catch (err) {
      this.log.warn({ group: id, err: describeError(err) }, 'could not take a group over; its lease is given back');
      await this.leases.giveBack(groupKey(id), epoch);
    }
  }

  /** The lease is gone (taken, or not renewable): stop running the group or holding the connection now. */
  private lose(key: LeaseKey, why: string): void {
    if (!this.leases.drop(key)) return;
    if (key.kind === 'connection') return this.connections.lost(key.id, why);
    this.log.warn({ group: key.id, why }, 'stopped running a group');
    this.router!.hosting.release(key.id);
    void this.serial.run(key.id, () => this.router!.hosting.relinquish(key.id, { graceful: false }));
  }

  /** Hand one idle group back so a less loaded instance takes it. */
  private shedOne(): void {
    for (const [id, h] of this.leases.groups) {
      if (h.state !== 'owned') continue;
      const g = this.router!.groups.get(id);
      if (g && g.rounds.length > 0) continue;
      h.state = 'leaving';
      this.router!.hosting.release(id);
      this.log.info({ group: id }, 'handing a group over to spread the load');
      void this.serial.run(id, async () => {
        await this.router!.hosting.relinquish(id, { graceful: true });
        await this.leases.giveBack(groupKey(id), h.epoch);
      });
      return;
    }
  }

  /** Renewal has failed for too long: stop everything before the leases can expire. */
  private checkRenewal(): void {
    if (!this.healthy || this.stopped) return;
    // Just before the rows expire (ttl after the last renewal was sent): the fence already keeps
    // a stale owner from writing; this stops it from working for nothing and says so on /readyz.
    if (Date.now() - this.lastRenewOk < this.leases.ttlMs - this.leaseMs * 0.05) return;
    this.healthy = false;
    this.lastError ??= 'leases could not be renewed';
    this.log.error({ held: this.leases.size }, 'cannot renew leases: every group is stopped here until the database answers again');
    for (const k of this.leases.all()) this.lose(k, 'renewal failed');
  }

  // -------------------------------------------------------------------------------------------
  // Inbox and notifications

  /** Move the group's waiting inbox rows into its log (call inside the group's serial order). */
  private drain(groupId: string): Promise<boolean> {
    return this.inbox.drain(groupId, {
      runs: (id) => this.owns(id),
      // Let go of meanwhile: the row stays in the inbox for the next owner.
      receiveForwarded: (msg) => (this.router!.runs(groupId) ? this.router!.receiveForwarded(msg) : Promise.resolve(NOT_RUN_HERE)),
      applyForwarded: (id, change) => this.router!.hosting.applyForwarded(id, change),
    });
  }

  /** Groups of other instances this one keeps a read-only copy of. */
  private copies(): string[] {
    return this.router ? [...this.leases.owners.keys()].filter((k) => !this.owns(k)) : [];
  }

  private onNotification(channel: string, payload: string): void {
    if (channel === INBOX_CHANNEL) {
      if (this.owns(payload)) void this.serial.run(payload, () => this.drain(payload));
    } else if (channel === ANSWERS_CHANNEL) this.inbox.onAnswer(payload);
    else this.relay.onEvent(payload);
  }
}
