/**
 * A manual clock: `now()` only moves when a test calls `advance()`, and sleepers wake in time
 * order as it passes them. Makes cooldowns and timeouts deterministic.
 */
import type { Clock } from '../../src/core/ports.js';

export class FakeClock implements Clock {
  private t: number;
  private sleepers: Array<{ at: number; resolve: () => void }> = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      // Like the real clock, a sleep that ends lets go of the signal (a long-lived one, such as
      // the router's shutdown signal, would otherwise collect a listener per sleep).
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== entry);
        reject(signal!.reason);
      };
      const entry = {
        at: this.t + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Number of pending sleeps (e.g. a turn waiting out a cooldown). */
  get waiting(): number {
    return this.sleepers.length;
  }

  /** Move time forward, waking sleepers due by then. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      const due = this.sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.sleepers = this.sleepers.filter((s) => s !== due);
      this.t = Math.max(this.t, due.at);
      due.resolve();
      await new Promise((r) => setImmediate(r));
    }
    this.t = target;
  }
}
