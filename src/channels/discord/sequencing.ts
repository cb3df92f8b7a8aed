/**
 * Small helpers that keep Discord traffic in order and bounded.
 */

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
