/**
 * How a group's changes become durable: each change is applied by `evolve` at once and kept in
 * the group's pending record; `commit` writes the pending record as one line of its log, so
 * whatever changed together is durable together or not at all. Changes become visible to the
 * outside only once their record is durable (`onRecorded`). A failed write marks the group broken
 * (`onBroken`): it refuses everything until it is reloaded from the store, as after a crash.
 */
import type { Logger, Store } from '../ports.js';
import type { DeliveryOutcome, EntryEdit, GroupChange, GroupDoc, GroupRecord } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import { StoreUnavailableError, describeError } from '../errors.js';
import { applyChange, applyDelivery, applyEdit, applyEntry, checkpointOf } from './evolve.js';

/** Records between checkpoints: bounds replay at start; its cost is spread over this many writes. */
export const CHECKPOINT_EVERY = 256;
/**
 * A checkpoint carries the dedupe memory (every client id of the last 24 hours), the one part of
 * it that grows with traffic. Spacing checkpoints at least `seen / SEEN_PER_RECORD` records apart
 * keeps what they add per record flat (a few dozen bytes per remembered id, spread over 4 records
 * each); replay at start grows with it, to one record per 4 ids remembered.
 */
const SEEN_PER_RECORD = 4;

/** Records between two checkpoints of a group that remembers `seen` client ids. */
export function checkpointInterval(seen: number, every = CHECKPOINT_EVERY): number {
  return Math.max(every, Math.ceil(seen / SEEN_PER_RECORD));
}


/** What a group has changed since its last record (already applied in memory), in order. */
interface Pending {
  entries: TranscriptEntry[];
  delivery: DeliveryOutcome[];
  edits: EntryEdit[];
  changes: GroupChange[];
}

/** Bookkeeping of one loaded group (never persisted). */
interface Runtime {
  n: number;
  pending: Pending;
  lastWrite: Promise<void>;
  sinceCheckpoint: number;
  /** A write failed: refuse everything until the group is reloaded. */
  broken: boolean;
  /** Replaced by a reload: whoever still holds this object must stop. */
  stale: boolean;
  /** A commitSoon is scheduled. */
  soon: boolean;
}

function emptyPending(): Pending {
  return { entries: [], delivery: [], edits: [], changes: [] };
}


/** The pending records and write state of every loaded group. */
export class GroupWrites {
  private readonly runtime = new WeakMap<GroupDoc, Runtime>();
  /** Called once when a group's write fails (the router schedules its reload). */
  onBroken: (g: GroupDoc, err: unknown) => void = () => undefined;
  /** Called with each record once it is durable, before whoever waits for it goes on (live events). */
  onRecorded: (g: GroupDoc, rec: GroupRecord) => void = () => undefined;
  /** Asked before every change: throws when the code making it is not the group's writer. */
  private guard: (g: GroupDoc) => void = () => undefined;

  /**
   * From now on a change is refused unless `holds` says the code making it is its group's writer
   * (see GroupMailbox). A group whose first record is not written yet is still its creator's alone.
   */
  onlyWriter(holds: (groupId: string) => boolean): void {
    this.guard = (g) => {
      if (!holds(g.id) && this.runtime.get(g)?.n !== 0) throw new Error(`group ${g.id} was changed outside its mailbox`);
    };
  }

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly logger: Logger,
    private readonly checkpointEvery = CHECKPOINT_EVERY,
  ) {}

  /** Start tracking a group whose log holds `n` records. */
  track(g: GroupDoc, n: number): void {
    this.runtime.set(g, { n, pending: emptyPending(), lastWrite: Promise.resolve(), sinceCheckpoint: 0, broken: false, stale: false, soon: false });
  }

  /** The object was replaced by a reload (or dropped): whoever still holds it must stop. */
  markStale(g: GroupDoc): void {
    const rt = this.runtime.get(g);
    if (rt) rt.stale = true;
  }

  /** Apply a change to the group now; it is written with the group's next record. */
  change(g: GroupDoc, c: GroupChange): void {
    const rt = this.rt(g);
    this.guard(g);
    applyChange(g, c);
    // Steps of one round in a row (a turn taken off the queue, then the counts) are one change in
    // the record: setting the fields one after the other or together gives the same round. A new
    // round's change holds the round itself, which already has every later step.
    const last = rt.pending.changes.at(-1);
    if (c.t === 'round' && last?.t === 'round' && last.id === c.id) {
      if (!g.rounds.some((r) => r === last.set)) Object.assign(last.set, c.set);
      return;
    }
    rt.pending.changes.push(c);
  }

  /** A new transcript entry (seq assigned), written with the group's next record. */
  entry(g: GroupDoc, e: TranscriptEntry): void {
    const rt = this.rt(g);
    this.guard(g);
    applyEntry(g, e);
    rt.pending.entries.push(e);
  }

  /** The author edited or deleted an entry: applied now, written with the group's next record. */
  edit(g: GroupDoc, ed: EntryEdit): void {
    const rt = this.rt(g);
    this.guard(g);
    applyEdit(g, ed);
    rt.pending.edits.push(ed);
  }

  /** A delivery outcome, written with the group's next record. */
  delivery(g: GroupDoc, d: DeliveryOutcome): void {
    const rt = this.rt(g);
    this.guard(g);
    applyDelivery(g, d);
    rt.pending.delivery.push(d);
  }

  private rt(g: GroupDoc): Runtime {
    const rt = this.runtime.get(g);
    if (!rt) throw new Error(`group ${g.id} is not managed`);
    return rt;
  }

  /** False once the group's object was replaced by a reload or a write failed. */
  usable(g: GroupDoc): boolean {
    const rt = this.runtime.get(g);
    return !!rt && !rt.stale && !rt.broken;
  }


  /**
   * Write everything the group changed since its last record as one record. Resolves once it
   * (and every record before it) is durable; with nothing pending, waits for earlier records.
   * Returns the entries the record carried.
   */
  commit(g: GroupDoc): { entries: TranscriptEntry[]; durable: Promise<void> } {
    const rt = this.rt(g);
    if (rt.stale || rt.broken) return { entries: [], durable: Promise.reject(new StoreUnavailableError(`group ${g.id} is being reloaded after a failed write`)) };
    const p = rt.pending;
    if (p.entries.length === 0 && p.delivery.length === 0 && p.edits.length === 0 && p.changes.length === 0) return { entries: [], durable: rt.lastWrite };
    // No copy needed: the store serialises the record before `append` returns.
    const rec: GroupRecord = {
      v: 2 as const,
      n: ++rt.n,
      ts: this.now(),
      ...(p.entries.length ? { entries: p.entries } : {}),
      ...(p.delivery.length ? { delivery: p.delivery } : {}),
      ...(p.edits.length ? { edits: p.edits } : {}),
      ...(p.changes.length ? { changes: p.changes } : {}),
    };
    const entries = p.entries;
    rt.pending = emptyPending();
    const durable = this.store.append(g.id, rec).then(
      () => this.onRecorded(g, rec),
      (err: unknown) => {
        if (!rt.broken && !rt.stale) {
          rt.broken = true;
          this.logger.error({ group: g.id, err: describeError(err) }, 'could not write to the store; the group is refused until it is reloaded');
          this.onBroken(g, err);
        }
        throw err instanceof StoreUnavailableError ? err : new StoreUnavailableError(`could not record: ${describeError(err)}`, { cause: err });
      },
    );
    rt.lastWrite = durable;
    durable.catch(() => undefined); // callers see the error; this copy only orders later waits
    if (++rt.sinceCheckpoint >= checkpointInterval(g.seen.size, this.checkpointEvery)) {
      rt.sinceCheckpoint = 0;
      // Taken now, as of this record; the store serialises it at once and writes it only once
      // every record up to it is durable (never, if one of them fails).
      void this.store.checkpoint(g.id, checkpointOf(g, rt.n)).catch(() => undefined);
    }
    return { entries, durable };
  }

  /**
   * Commit on the next tick whatever is pending then, without anyone waiting for it: for changes
   * a crash may lose harmlessly (a delivery outcome, a finished round), so that several of them
   * share one record and one sync.
   */
  commitSoon(g: GroupDoc): void {
    const rt = this.rt(g);
    if (rt.soon) return;
    rt.soon = true;
    setImmediate(() => {
      rt.soon = false;
      if (rt.broken || rt.stale) return;
      this.commit(g).durable.catch((err: unknown) => this.logger.warn({ group: g.id, err: describeError(err) }, 'could not record a delivery or a finished round'));
    });
  }

  /** Wait until no deferred commit is scheduled and every record written so far is settled. */
  async settle(all: () => GroupDoc[]): Promise<void> {
    for (;;) {
      const rts = all().map((g) => this.rt(g));
      if (rts.some((rt) => rt.soon)) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      await Promise.allSettled(rts.map((rt) => rt.lastWrite));
      if (!all().some((g) => this.rt(g).soon)) return;
    }
  }

  /** Wait until everything recorded for this group so far is durable. */
  durable(g: GroupDoc): Promise<void> {
    return this.rt(g).lastWrite;
  }

  /** Commit what is pending everywhere and checkpoint every group changed since its last one. */
  async checkpointAll(groups: GroupDoc[]): Promise<void> {
    await Promise.all(
      groups.map(async (g) => {
        const rt = this.rt(g);
        if (rt.broken || rt.stale) return;
        this.commit(g).durable.catch(() => undefined);
        if (rt.sinceCheckpoint === 0) return;
        rt.sinceCheckpoint = 0;
        await this.store.checkpoint(g.id, checkpointOf(g, rt.n));
      }),
    );
  }
}
