/**
 * How long to wait before the next attempt to reach a server: doubling from `initialMs` up to
 * `maxMs`, so a server that is briefly gone is back at once and a broken one costs little. A
 * connection that stayed up for `healthyMs` starts over from `initialMs` (the supervisor resets).
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  healthyMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, healthyMs: 60_000 };

export class Backoff {
  private attempts = 0;

  constructor(private readonly opts: BackoffOptions) {}

  /** The wait before the next attempt; each call doubles the following one. */
  next(): number {
    const ms = Math.min(this.opts.maxMs, this.opts.initialMs * 2 ** Math.min(this.attempts, 30));
    this.attempts++;
    return ms;
  }

  reset(): void {
    this.attempts = 0;
  }
}
