/**
 * The group-commit layer: a Store over any LogBackend (the file store and the PostgreSQL store
 * are this class over their backends). Written once so the two keep the same promises:
 *
 * - Group commit. Appends made while a batch is being written wait, and go together into the
 *   next one, from every group (the first waits one tick so every append of that tick joins).
 *   One batch is in flight at a time, so a group's records become durable in `n` order, and an
 *   append resolves only once the backend says its record is durable.
 * - A failed write refuses the group: every later append to it fails too, until the core has
 *   read it back (`reopen`), so nothing is ever written on top of a state the core no longer
 *   knows. A group that could not be loaded is refused the same way: it is never written.
 * - A checkpoint is written only once every record it covers is durable, and never after one of
 *   them failed; only the newest waiting one per group is kept. A checkpoint is a shortcut: one
 *   that cannot be written costs a longer replay, never data.
 * - Health: not writable from a failed write until a write succeeds again (a group taken over by
 *   another writer is not a failure); groups left out at open are named with their problem.
 * - Files no message carries any more are collected (fileCollector.ts): the references are read
 *   from every record appended and, at start, from the whole log.
 */
import type { Logger, SearchFound, SearchRequest, Store, StoredGroup } from '../core/ports.js';
import type { GroupCheckpoint, GroupRecord } from '../core/records.js';
import type { UnreadableGroup } from '../core/readModels.js';
import type { TranscriptEntry } from '../core/types.js';
import type { Attachment, StoredFile } from '../core/fileTypes.js';
import { StoreFormatError, StoreUnavailableError, describeError } from '../core/errors.js';
import { FencedError, type LogBackend } from './LogBackend.js';
import { FileCollector } from './fileCollector.js';
import { deletionsOf, type Deletions } from './fileRefs.js';

interface PendingAppend<P> {
  groupId: string;
  n: number;
  payload: P;
  /** The messages it deletes: their files may be collected once it is durable. */
  gone: Deletions | null;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface GroupState {
  /** Set after a failed write or load: every append is refused until a reopen succeeds. */
  failed: Error | null;
  /** Highest record n made durable by this process since the group was (re)loaded. */
  durableN: number;
}

interface WaitingCheckpoint {
  n: number;
  /** Serialised when `checkpoint` was called: the core hands over live objects. */
  text: string;
  resolve: () => void;
}

export class GroupCommit<P> implements Store {
  private readonly groups = new Map<string, GroupState>();
  private queue: Array<PendingAppend<P>> = [];
  private readonly waitingCheckpoints = new Map<string, WaitingCheckpoint>();
  private readonly checkpointWrites = new Map<string, Promise<void>>();
  /** Groups left out at open because they could not be read, with what is wrong (for `/readyz`). */
  private readonly unreadableGroups = new Map<string, string>();
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private writeError: string | null = null;
  private closed = false;
  /** Keeping files, and collecting those no message carries any more. */
  readonly files: FileCollector;

  constructor(
    private readonly backend: LogBackend<P>,
    private readonly logger: Logger,
  ) {
    this.files = new FileCollector(backend, logger);
  }

  async open(): Promise<{ groups: StoredGroup[]; unreadable: string[] }> {
    const listed = await this.backend.open();
    const unreadable = [...listed.unreadable];
    const groups: StoredGroup[] = [];
    for (const id of listed.groups) {
      try {
        groups.push(await this.load(id));
      } catch (err) {
        // Data of a newer version is never skipped: nothing of it may be misread or written over.
        const problem = err instanceof StoreFormatError ? null : (this.backend.unreadable?.(id, err) ?? null);
        if (problem === null) throw err;
        unreadable.push(id);
        this.unreadableGroups.set(id, problem);
      }
    }
    this.files.start(listed.groups, unreadable);
    return { groups, unreadable };
  }

  private async load(groupId: string): Promise<StoredGroup> {
    let stored: StoredGroup;
    try {
      stored = await this.backend.load(groupId);
    } catch (err) {
      this.groups.set(groupId, { failed: err instanceof Error ? err : new Error(String(err)), durableN: 0 });
      throw err;
    }
    this.groups.set(groupId, { failed: null, durableN: 0 });
    return stored;
  }

  async reopen(groupId: string): Promise<StoredGroup> {
    // A checkpoint still waiting was made from the state the core is dropping.
    this.waitingCheckpoints.get(groupId)?.resolve();
    this.waitingCheckpoints.delete(groupId);
    return this.load(groupId);
  }

  append(groupId: string, record: GroupRecord): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    const problem = this.backend.idProblem?.(groupId);
    if (problem) return Promise.reject(new Error(problem));
    const failed = this.groups.get(groupId)?.failed;
    if (failed) return Promise.reject(this.refusal(groupId, failed));
    // Serialised now: the caller's objects may change before the batch is written.
    const payload = this.backend.prepare(groupId, record);
    // Its files count as referenced from now: a write that fails leaves one reference too many.
    this.files.appending(groupId, record);
    const gone = deletionsOf(record);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ groupId, n: record.n, payload, gone, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // Let every append of this tick join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flushLoop().finally(() => {
        this.flushing = null;
        if (this.queue.length > 0) this.schedule();
      });
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) await this.commit(this.queue.splice(0, this.backend.maxBatch));
  }

  /** Write one batch and settle its appends. */
  private async commit(batch: Array<PendingAppend<P>>): Promise<void> {
    const byGroup = new Map<string, Array<PendingAppend<P>>>();
    for (const it of batch) {
      const st = this.state(it.groupId);
      // A group that failed in an earlier batch is refused as a whole.
      if (st.failed) {
        it.reject(this.refusal(it.groupId, st.failed));
        continue;
      }
      let mine = byGroup.get(it.groupId);
      if (!mine) byGroup.set(it.groupId, (mine = []));
      mine.push(it);
    }
    if (byGroup.size === 0) return;
    let refused: ReadonlyMap<string, unknown>;
    try {
      refused = await this.backend.write([...byGroup].map(([groupId, items]) => ({ groupId, records: items.map((i) => i.payload) })));
    } catch (err) {
      refused = new Map([...byGroup.keys()].map((id) => [id, err]));
    }
    // Failures first: a group written in the same batch shows the store takes writes again.
    for (const [id, err] of refused) {
      const items = byGroup.get(id);
      if (!items) continue;
      this.fail(id, err);
      for (const it of items) it.reject(this.refusal(id, err));
    }
    for (const [id, items] of byGroup) {
      if (refused.has(id)) continue;
      this.writeError = null;
      const st = this.state(id);
      st.durableN = Math.max(st.durableN, items.at(-1)!.n);
      for (const it of items) {
        if (it.gone) this.files.durable(id, it.gone);
        it.resolve();
      }
      this.releaseCheckpoint(id);
    }
  }

  private state(id: string): GroupState {
    let st = this.groups.get(id);
    if (!st) this.groups.set(id, (st = { failed: null, durableN: 0 }));
    return st;
  }

  private fail(id: string, err: unknown): void {
    this.state(id).failed = err instanceof Error ? err : new Error(String(err));
    if (err instanceof FencedError) {
      // Losing a group to another instance is not a store failure: /readyz stays ready.
      this.logger.warn({ group: id }, 'append refused: the group is owned by another instance now');
      return;
    }
    this.writeError = `group ${id}: ${describeError(err)}`;
    this.logger.error({ group: id, err: describeError(err) }, this.backend.writeFailedMessage);
  }

  private refusal(id: string, err: unknown): StoreUnavailableError {
    if (err instanceof FencedError) return err;
    return new StoreUnavailableError(`cannot write group ${id}: ${describeError(err)}`, { cause: err });
  }

  checkpoint(groupId: string, cp: GroupCheckpoint): Promise<void> {
    if (this.closed || this.backend.idProblem?.(groupId)) return Promise.resolve();
    this.waitingCheckpoints.get(groupId)?.resolve();
    return new Promise<void>((resolve) => {
      this.waitingCheckpoints.set(groupId, { n: cp.n, text: JSON.stringify(cp), resolve });
      this.releaseCheckpoint(groupId);
    });
  }

  /** Write the group's waiting checkpoint once every record it covers is durable. */
  private releaseCheckpoint(groupId: string): void {
    const w = this.waitingCheckpoints.get(groupId);
    const st = this.groups.get(groupId);
    if (!w || !st || st.failed || st.durableN < w.n) return;
    this.waitingCheckpoints.delete(groupId);
    // One after another per group, so an older checkpoint never lands after a newer one.
    const prev = this.checkpointWrites.get(groupId) ?? Promise.resolve();
    const next = prev.then(() => this.writeCheckpoint(groupId, w)).finally(w.resolve);
    this.checkpointWrites.set(groupId, next);
    void next.finally(() => {
      if (this.checkpointWrites.get(groupId) === next) this.checkpointWrites.delete(groupId);
    });
  }

  private async writeCheckpoint(groupId: string, w: WaitingCheckpoint): Promise<void> {
    try {
      await this.backend.writeCheckpoint(groupId, w.n, w.text);
    } catch (err) {
      // Only a shortcut for the next start: the log still has everything.
      this.logger.warn({ group: groupId, err: describeError(err) }, 'could not write a checkpoint; the next start replays more of the log');
    }
  }

  readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    return this.backend.readEntries(groupId, range);
  }

  searchEntries(req: SearchRequest): Promise<SearchFound[]> {
    if (req.terms.length === 0 || req.groupIds.length === 0 || req.limit <= 0) return Promise.resolve([]);
    return this.backend.searchEntries(req);
  }

  /** Files are not part of any group's batch: a message names its files only once they are kept. */
  putFile(meta: Attachment, bytes: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    return this.files.put(meta, bytes);
  }

  fileReferenced(id: string): boolean | undefined {
    return this.files.refs.referenced(id);
  }

  readFile(id: string): Promise<StoredFile | null> {
    return this.backend.readFile(id);
  }

  checkWritable(): Promise<void> {
    return this.backend.checkWritable();
  }

  health(): { writable: boolean; error: string | null; unreadableGroups?: UnreadableGroup[] } {
    const out = { writable: this.writeError === null, error: this.writeError };
    if (this.unreadableGroups.size === 0) return out;
    return { ...out, unreadableGroups: [...this.unreadableGroups].map(([group, problem]) => ({ group, problem })) };
  }

  async flush(): Promise<void> {
    for (;;) {
      if (this.flushing) await this.flushing;
      else if (this.scheduled || this.queue.length > 0) await new Promise((r) => setImmediate(r));
      else break;
    }
    await Promise.all([...this.checkpointWrites.values()]);
    await this.files.settle();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.files.stop();
    await this.flush();
    this.closed = true;
    for (const w of this.waitingCheckpoints.values()) w.resolve();
    this.waitingCheckpoints.clear();
    await this.backend.close();
  }
}
