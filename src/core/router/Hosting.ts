/**
 * Moving a group between "run here" and "a read-only copy here" — what the cluster asks of a
 * process when several share one database. The process runs only the groups it has been handed
 * (`RunningGroups`); the store's fence refuses any write of a group whose lease is gone.
 */
import type { PlatformChange, Logger } from '../ports.js';
import type { GroupDoc } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import { StoreUnavailableError } from '../errors.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { GroupAdmin } from '../groups/GroupAdmin.js';
import type { KeyedQueue } from '../lib/KeyedQueue.js';
import type { RunningGroups } from '../peers.js';
import { trimTail } from '../groups/evolve.js';
import type { Outbox } from './Outbox.js';

export interface HostingDeps {
  groups: GroupManager;
  running: RunningGroups;
  outbox: Outbox;
  queues: KeyedQueue;
  logger: Logger;
  /** Cancel the group's running round (its model calls) now. */
  stopRounds(groupId: string, why: string): void;
  /** Finish the group's recorded rounds and deliveries, once the process has resumed. */
  resume(g: GroupDoc): void;
  /** What a platform reports besides messages, applied here when another instance heard it. */
  platform: { handle(c: PlatformChange): Promise<void> };
}

export class Hosting {
  constructor(private readonly d: HostingDeps) {}

  /**
   * The lease was just taken: read the group back from the store as it is now (every record the
   * previous owner made durable), replacing the read-only copy. False if the store has no such group.
   */
  async adopt(id: string): Promise<boolean> {
    const g = await this.d.groups.reload(id);
    if (!g) return false;
    for (const e of g.transcript) this.d.outbox.indexPosted(g, e);
    return true;
  }

  /** This process runs the group from now on (after `adopt`; messages handed over may be recorded). */
  run(id: string): void {
    this.d.running.run(id);
  }

  /** Finish an adopted group's recorded rounds and deliveries (after `run`, once its inbox is in). */
  resumeOwned(id: string): void {
    const g = this.d.groups.get(id);
    if (g) this.d.resume(g);
  }

  /**
   * The group is no longer this process's to run. Graceful (handing it over to spread groups):
   * the running round ends first and its records are written. Otherwise (the lease was lost) it
   * stops at once: the group object is replaced, so a round still running on the old one finds
   * it unusable at its next step and none of its writes is made (the store's fence refuses any
   * already on their way). Either way a read-only copy is left for the web API.
   */
  async relinquish(id: string, opts: { graceful: boolean }): Promise<void> {
    this.d.running.release(id);
    if (opts.graceful) {
      await this.d.queues.onIdle(id);
      const g = this.d.groups.get(id);
      if (g && this.d.groups.usable(g)) await this.d.groups.commit(g).durable.catch(() => undefined);
      await this.d.groups.reload(id);
      return;
    }
    // The old object goes stale at once (synchronously, inside reload), so the model calls
    // cancelled next cannot write even a failure notice.
    const reloaded = this.d.groups.reload(id);
    this.d.stopRounds(id, 'this instance no longer runs the group');
    await reloaded;
  }

  /** Stop running the group now, before `relinquish` gets to it: new messages go to its next owner. */
  release(id: string): void {
    this.d.running.release(id);
  }

  /** A change another instance handed over through the inbox (this process runs the group). */
  async applyForwarded(groupId: string, c: PlatformChange): Promise<void> {
    if (!this.d.running.runs(groupId)) throw new StoreUnavailableError(`group ${groupId} is no longer run by this instance`);
    return this.d.platform.handle(c);
  }

  /** Another instance recorded an entry of a group this one does not run: add it to the copy. */
  copyEntry(id: string, entry: TranscriptEntry): void {
    const g = this.d.groups.get(id);
    // Not a change of a group this instance runs: the read-only copy shows the entry in its summary
    // (last message, count) without reading the whole group again.
    if (g && !this.d.running.runs(id) && entry.seq >= g.nextSeq) {
      g.transcript.push(entry);
      g.nextSeq = entry.seq + 1;
      trimTail(g);
    }
  }

  /** Another instance changed a group this one does not run: read the copy again. */
  async refreshCopy(id: string): Promise<void> {
    if (this.d.running.runs(id)) return;
    await this.d.groups.reload(id);
  }
}
