/**
 * Which groups this process runs, and the peers that run the others. A single instance runs
 * every group and has no peers; with several instances on one database the cluster hands groups
 * to this process (`run`) and takes them back (`release`), and the core asks nobody else.
 */
import type { Peers } from './ports.js';

/** One instance that runs every group (the file store, or Postgres without peers). */
export const noPeers: Peers = {
  ownerOf: () => null,
  claimNew: async () => true,
  status: () => undefined,
};

/** The groups this process runs (writes the log of and runs the rounds of). */
export class RunningGroups {
  private readonly ids = new Set<string>();

  /** `all`: a single instance, which runs every group. */
  constructor(private readonly all: boolean) {}

  runs(groupId: string): boolean {
    return this.all || this.ids.has(groupId);
  }

  /** This process runs the group from now on. */
  run(groupId: string): void {
    this.ids.add(groupId);
  }

  /** This process no longer runs the group (its messages go to the owner from now on). */
  release(groupId: string): void {
    this.ids.delete(groupId);
  }
}
