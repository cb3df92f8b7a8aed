/**
 * A group whose write failed refuses new work (503) until it is read back from the store, as
 * after a crash. Reading it back waits for its queue to be idle and for the store to take writes
 * again, retrying with a doubling wait; then the group's unfinished work resumes.
 */
import type { Logger, Store } from '../ports.js';
import type { GroupDoc } from '../records.js';
import { describeError } from '../errors.js';
import type { GroupManager } from '../groups/GroupManager.js';

/** First wait before reloading a group after a failed write; doubles up to RECOVER_MAX_MS. */
const RECOVER_FIRST_MS = 500;
const RECOVER_MAX_MS = 30_000;

export interface RecoveryDeps {
  groups: GroupManager;
  store: Store;
  logger: Logger;
  shutdown: AbortSignal;
  /** Resolves once nothing of the group's queue is running. */
  idle: (groupId: string) => Promise<void>;
  /** The group was read back: pick up its unfinished work. */
  resume: (g: GroupDoc) => void;
}

export class Recovery {
  private readonly recovering = new Set<string>();

  constructor(private readonly d: RecoveryDeps) {}

  /** Read group `id` back from the store once it takes writes again (once per failure). */
  recover(id: string): void {
    if (this.recovering.has(id)) return;
    this.recovering.add(id);
    const attempt = (wait: number) => {
      const timer = setTimeout(async () => {
        if (this.d.shutdown.aborted) return;
        try {
          await this.d.idle(id);
          await this.d.store.checkWritable();
          const g = await this.d.groups.reload(id);
          this.recovering.delete(id);
          this.d.logger.info({ group: id }, 'store writable again; group reloaded from disk');
          if (g) this.d.resume(g);
        } catch (err) {
          this.d.logger.warn({ group: id, err: describeError(err), retryInMs: Math.min(wait * 2, RECOVER_MAX_MS) }, 'store still refuses writes');
          attempt(Math.min(wait * 2, RECOVER_MAX_MS));
        }
      }, wait);
      timer.unref?.();
    };
    attempt(RECOVER_FIRST_MS);
  }
}
