/** Tasks run one after another per key (a group's adoption, inbox moves and copy refreshes). */
import type { Logger } from '../core/ports.js';
import { describeError } from '../core/errors.js';

export class Serial {
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly log: Logger) {}

  /** Run `fn` after everything queued before it for the same key; a failure is logged, not thrown. */
  run(key: string, fn: () => Promise<unknown>): Promise<void> {
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev
      .then(fn)
      .then(() => undefined)
      .catch((err: unknown) => this.log.warn({ key, err: describeError(err) }, 'cluster task failed'));
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
    return next;
  }
}
