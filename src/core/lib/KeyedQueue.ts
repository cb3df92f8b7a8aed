/**
 * Tasks run one at a time per key, in the order they were added; different keys run side by side.
 * The router runs each group's rounds through one (a group's records are written in order), the
 * channels each chat's posts (the chunks of one reply never interleave with another reply, and a
 * rate-limited post delays the later ones instead of being overtaken by them).
 *
 * A key has a lane only while it has work: the lane is dropped the moment it goes idle, so the map
 * holds the keys that are busy now, not every chat or group ever seen.
 */
import PQueue from 'p-queue';

export class KeyedQueue {
  private readonly lanes = new Map<string, PQueue>();

  /**
   * Runs `task` once every task added before it under `key` has settled (a failed task does not
   * hold up the ones after it). With nothing ahead of it, it starts at once, before `run` returns.
   */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (!lane) {
      const created = new PQueue({ concurrency: 1 });
      created.on('idle', () => {
        if (this.lanes.get(key) === created) this.lanes.delete(key);
      });
      this.lanes.set(key, (lane = created));
    }
    return lane.add(task);
  }

  /** Tasks under `key` still waiting for their turn (the one running is not counted). */
  waiting(key: string): number {
    return this.lanes.get(key)?.size ?? 0;
  }

  /** Resolves once `key` has no task waiting or running. */
  onIdle(key: string): Promise<void> {
    return this.lanes.get(key)?.onIdle() ?? Promise.resolve();
  }

  /** Resolves once every key busy now has gone idle (work added meanwhile may still be running). */
  async onIdleAll(): Promise<void> {
    await Promise.all([...this.lanes.values()].map((lane) => lane.onIdle()));
  }

  /** No key has a task waiting or running. */
  get idle(): boolean {
    return this.lanes.size === 0;
  }
}
