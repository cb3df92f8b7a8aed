/**
 * Kept files for the group-commit layer: keeping them, and collecting the ones no message carries
 * any more (the references are fileRefs.ts). A file is collected when the deletion that took its
 * last reference is durable, and at start, once the whole log has been read, so is every file a
 * deleted message carried that nothing else carries (what a crash left between a deletion and its
 * collection). A file no message ever carried (kept for a message that was then refused) is left
 * alone: nothing says it is not still on its way. Keeping and collecting one id take turns, so a
 * keep in progress is never undone by a collection that decided before it. Removing a file is one
 * unlink (or one DELETE): a kill at any moment leaves it there or gone, and only ever a file the
 * index says nothing needs.
 */
import type { Logger } from '../core/ports.js';
import type { GroupRecord } from '../core/records.js';
import type { Attachment } from '../core/fileTypes.js';
import { describeError } from '../core/errors.js';
import type { LogBackend } from './LogBackend.js';
import { FileRefs, type Deletions } from './fileRefs.js';

export class FileCollector {
  readonly refs = new FileRefs();
  /** Per file id, the keep or collection running (the next waits for it). */
  private readonly turns = new Map<string, Promise<unknown>>();
  private readonly running = new Set<Promise<void>>();
  /** Files collected by this process (read by tests and the log). */
  collected = 0;
  /** The store is closing: the reading of the log and the sweep stop where they are. */
  private stopped = false;

  constructor(
    private readonly backend: LogBackend<unknown>,
    private readonly logger: Logger,
  ) {
    const b = backend;
    if (!b.allRecords || !b.deleteFile) this.refs.disable('this store cannot remove files');
    else if (b.sharedWriters) this.refs.disable('several instances write this database; none sees every reference');
  }

  /** After the store opened: read the whole log in the background, then sweep. */
  start(groups: readonly string[], unreadable: readonly string[]): void {
    if (unreadable.length > 0) {
      this.refs.disable(`groups that could not be read may name files: ${unreadable.slice(0, 5).join(', ')}`);
    }
    this.track(this.index(groups));
  }

  private async index(groups: readonly string[]): Promise<void> {
    const b = this.backend;
    if (this.refs.disabled || !b.allRecords) return this.quiet();
    try {
      const damagedBefore = b.damagedRecords?.() ?? 0;
      for (const g of groups) {
        for await (const rec of b.allRecords(g)) {
          if (this.stopped) return;
          this.refs.added(g, rec, false);
        }
      }
      if ((b.damagedRecords?.() ?? 0) > damagedBefore) {
        this.refs.disable('damaged log records were skipped; the files they name are unknown');
      }
    } catch (err) {
      this.refs.disable(`the log could not be read whole (${describeError(err)})`);
    }
    if (this.refs.disabled) return this.quiet();
    await this.collect(this.refs.completed());
  }

  private quiet(): void {
    this.logger.info({ reason: this.refs.disabled }, 'files no message carries are kept in this run');
  }

  /** Keep a file; it is held (never collected) from now until a record carries it. */
  async put(meta: Attachment, bytes: Uint8Array): Promise<void> {
    this.refs.hold(meta.id);
    try {
      await this.turn(meta.id, () => this.backend.putFile(meta, bytes));
    } catch (err) {
      this.refs.release(meta.id);
      throw err;
    }
  }

  /** A record is being appended. */
  appending(groupId: string, record: GroupRecord): void {
    this.refs.added(groupId, record, true);
  }

  /** A record's deletions are durable: collect what they left unreferenced. */
  durable(groupId: string, gone: Deletions): void {
    const ids = this.refs.deleted(groupId, gone);
    if (ids.length > 0) this.track(this.collect(ids));
  }

  private async collect(ids: readonly string[]): Promise<void> {
    const remove = this.backend.deleteFile?.bind(this.backend);
    if (!remove) return;
    for (const id of ids) {
      if (this.stopped) return;
      try {
        const done = await this.turn(id, async () => {
          // Decided in its turn: a keep of the same bytes that came first holds it now.
          if (!this.refs.collectable(id)) return false;
          await remove(id);
          return true;
        });
        if (done) {
          this.collected++;
          this.logger.info({ file: id }, 'removed a file no message carries any more');
        }
      } catch (err) {
        // Kept: the next start looks at it again.
        this.logger.warn({ file: id, err: describeError(err) }, 'could not remove a file no message carries; it stays');
      }
    }
  }

  private turn<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.turns.get(id) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    this.turns.set(id, next);
    void next.catch(() => undefined).finally(() => {
      if (this.turns.get(id) === next) this.turns.delete(id);
    });
    return next;
  }

  private track(p: Promise<void>): void {
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  stop(): void {
    this.stopped = true;
  }

  /** Wait for the indexing and the collections under way. */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}
