/**
 * Every model call goes through here: one global concurrency limit across all groups
 * (`llm.max_concurrency`), a timeout that starts when the call starts (not while it waits for a
 * slot), cancellation on shutdown, and the counters for /metrics.
 */
import PQueue from 'p-queue';
import { LlmError } from '../errors.js';
import type { Clock, LlmProvider, LlmRequest, LlmResponse } from '../ports.js';
import type { Metrics } from '../metrics.js';

export class LlmGate {
  private readonly queue: PQueue;
  /** Calls in flight; one shutdown listener aborts them all (not one listener per call). */
  private readonly inFlight = new Set<AbortController>();

  constructor(
    private readonly provider: LlmProvider,
    concurrency: number,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly shutdown: AbortSignal,
  ) {
    this.queue = new PQueue({ concurrency });
    shutdown.addEventListener('abort', () => {
      for (const ac of this.inFlight) ac.abort(new LlmError('shutting down', 'aborted', true));
    }, { once: true });
  }

  /** Calls waiting for a slot plus calls in flight. */
  get depth(): number {
    return this.queue.size + this.queue.pending;
  }

  get providerName(): string {
    return this.provider.name;
  }

  /** Run one call with a timeout; throws LlmError ('timeout', 'aborted', or the provider's). */
  call(req: Omit<LlmRequest, 'signal'>, timeoutMs: number): Promise<LlmResponse & { latencyMs: number }> {
    return this.queue.add(async () => {
      if (this.shutdown.aborted) throw new LlmError('shutting down', 'aborted', true);
      const ac = new AbortController();
      const stopTimer = new AbortController();
      this.inFlight.add(ac);
      const started = this.clock.now();
      const timeout = this.clock.sleep(timeoutMs, stopTimer.signal).then(
        () => {
          const err = new LlmError(`no answer within ${Math.round(timeoutMs / 1000)}s`, 'timeout', true);
          ac.abort(err);
          throw err;
        },
        () => new Promise<never>(() => undefined),
      );
      const aborted = new Promise<never>((_, reject) => {
        ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true });
      });
      try {
        const res = await Promise.race([this.provider.complete({ ...req, signal: ac.signal }), timeout, aborted]);
        const latencyMs = this.clock.now() - started;
        this.metrics.inc('chorus_llm_calls_total', { purpose: req.purpose, outcome: 'ok' });
        this.metrics.inc('chorus_llm_latency_ms_sum', {}, latencyMs);
        this.metrics.inc('chorus_tokens_total', { kind: 'input' }, res.usage.inputTokens);
        this.metrics.inc('chorus_tokens_total', { kind: 'output' }, res.usage.outputTokens);
        this.metrics.inc('chorus_tokens_total', { kind: 'cache_read' }, res.usage.cacheReadTokens);
        this.metrics.inc('chorus_tokens_total', { kind: 'cache_write' }, res.usage.cacheWriteTokens);
        return { ...res, latencyMs };
      } catch (err) {
        const e = toLlmError(err);
        this.metrics.inc('chorus_llm_calls_total', { purpose: req.purpose, outcome: e.code });
        throw e;
      } finally {
        stopTimer.abort();
        this.inFlight.delete(ac);
        // Make sure an ignored abort never leaves the race's losers unhandled.
        aborted.catch(() => undefined);
      }
    });
  }

  async idle(): Promise<void> {
    await this.queue.onIdle();
  }
}

function toLlmError(err: unknown): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof Error && err.name === 'AbortError') return new LlmError('aborted', 'aborted', true, { cause: err });
  return new LlmError(err instanceof Error ? err.message : String(err), 'unknown', false, { cause: err });
}
