/**
 * Small helpers that keep Discord traffic in order and bounded.
 */

/**
 * Runs tasks one after another per key. Posts to one chat go through here so the chunks of one
 * reply never interleave with another reply, and a 429 (which discord.js REST waits out) delays
 * the later posts instead of letting them overtake. Different keys run independently.
 */
export class KeyedSerialQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(task, task);
    const tail = next.catch(() => {});
    this.tails.set(key, tail);
    // Drop the entry once idle so the map does not grow with every chat ever seen.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

/** A bounded map (oldest entries evicted first): platform message id → agent id. */
export class PostedIndex {
  private readonly map = new Map<string, string>();

  constructor(private readonly capacity: number) {}

  set(messageId: string, agentId: string): void {
    this.map.delete(messageId);
    this.map.set(messageId, agentId);
    while (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest);
    }
  }

  get(messageId: string): string | undefined {
    return this.map.get(messageId);
  }
}
