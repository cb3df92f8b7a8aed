/**
 * Every model call goes through here: the model-call slots (`llm.max_concurrency` in all, with a
 * fair share per group and per agent, see FairSlots), a time limit per call that includes the
 * wait for a slot, the byte limit on replies, cancellation on shutdown, and the counters for
 * /metrics.
 *
 * Why the wait counts against the time limit: a turn has one budget (the group's
 * `agent_reply_timeout_seconds`); a call that cannot even start within it ends with a timeout
 * notice instead of waiting behind other groups' slow models for as long as they take.
 *
 * Why replies are bounded here as well as in the providers: the providers stop reading and close
 * the stream at the limit, which is what keeps memory flat; the gate enforces the same limit on
 * whatever a provider hands back (one that streams in one piece, or does not stream at all), so
 * nothing longer is ever published, stored or shown to a model again.
 */
import { LlmError } from '../errors.js';
import type { Clock, LlmProvider, LlmRequest, LlmResponse, Logger } from '../ports.js';
import type { Metrics } from '../metrics.js';
import { cutUtf8, utf8Length } from '../text/utf8.js';
import { FairSlots } from './FairSlots.js';

/** Appended to a reply that was cut short; the byte limit includes it. */
export const CUT_MARKER = '\n… [cut: reply too long]';
/**
 * A reply's byte budget is also bounded by its `max_tokens`: English runs at about 4 bytes per
 * token, CJK and emoji at 3–4, code a little more; 16 is four times that, so a reply inside its
 * token limit is never cut, while a server that ignores `max_tokens` is stopped near it.
 */
export const BYTES_PER_TOKEN_CEILING = 16;
/** Default `llm.max_reply_bytes` (see the schema for why this size). */
export const DEFAULT_MAX_REPLY_BYTES = 32 * 1024;

/** The gate's settings; shares left out mean no cap beyond `maxConcurrency`. */
export interface GateSettings {
  maxConcurrency: number;
  maxConcurrencyPerGroup?: number | undefined;
  maxConcurrencyPerAgent?: number | undefined;
  maxReplyBytes?: number | undefined;
}

/** Why the gate stopped a provider that streamed past the limit (never reported as a failure). */
class StoppedAtLimit extends Error {}

export class LlmGate {
  private readonly slots: FairSlots;
  private readonly maxReplyBytes: number;
  /** Calls waiting or in flight; one shutdown listener aborts them all (not one listener per call). */
  private readonly inFlight = new Set<AbortController>();

  constructor(
    private readonly provider: LlmProvider,
    settings: GateSettings,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly shutdown: AbortSignal,
    private readonly logger?: Logger,
  ) {
    const total = settings.maxConcurrency;
    this.slots = new FairSlots({
      total,
      perGroup: Math.min(total, settings.maxConcurrencyPerGroup ?? total),
      perAgent: Math.min(total, settings.maxConcurrencyPerAgent ?? total),
    });
    this.maxReplyBytes = settings.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    shutdown.addEventListener('abort', () => {
      for (const ac of this.inFlight) ac.abort(new LlmError('shutting down', 'aborted', true));
    }, { once: true });
  }

  /** New per-group and per-agent shares (a reload changed the agents); kept within the total. */
  setShares(shares: { perGroup: number; perAgent: number }): void {
    this.slots.setShares(shares);
  }

  /** Calls waiting for a slot plus calls in flight. */
  get depth(): number {
    return this.slots.queued + this.slots.running;
  }

  get providerName(): string {
    return this.provider.name;
  }

  /** Bytes of reply text a call may produce before it is cut (the cut marker fits after it). */
  replyBudget(req: Pick<LlmRequest, 'maxTokens'>): number {
    const byTokens = req.maxTokens ? req.maxTokens * BYTES_PER_TOKEN_CEILING : Infinity;
    return Math.max(0, Math.min(this.maxReplyBytes, byTokens) - utf8Length(CUT_MARKER));
  }

  /**
   * Run one call within `timeoutMs`, counted from now (the wait for a slot included). Throws
   * LlmError ('timeout', 'aborted', or the provider's). A reply over the byte limit comes back
   * cut, with the marker and `cut` set.
   */
  async call(req: Omit<LlmRequest, 'signal'>, timeoutMs: number): Promise<LlmResponse & { latencyMs: number }> {
    if (this.shutdown.aborted) throw new LlmError('shutting down', 'aborted', true);
    const ac = new AbortController();
    const stopTimer = new AbortController();
    this.inFlight.add(ac);
    let started: number | null = null;
    const callStarted = this.clock.now();
    const timeout = this.clock.sleep(timeoutMs, stopTimer.signal).then(
      () => {
        const s = Math.round(timeoutMs / 1000);
        const err = new LlmError(started === null ? `no free model slot within ${s}s` : `no answer within ${s}s`, 'timeout', true);
        ac.abort(err);
        throw err;
      },
      () => new Promise<never>(() => undefined),
    );
    const aborted = new Promise<never>((_, reject) => {
      ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true });
    });
    const slot = this.slots.acquire({ group: req.groupId ?? '', agent: req.agent?.id }, ac.signal);
    let release: (() => void) | undefined;
    try {
      try {
        release = await Promise.race([slot, timeout, aborted]);
      } finally {
        // Granted in the same tick as the time limit ran out: give the slot straight back.
        if (!release) slot.then((r) => r(), () => undefined);
      }
      if (this.shutdown.aborted) throw new LlmError('shutting down', 'aborted', true);
      started = this.clock.now();
      const bounded = this.bound(req, ac);
      let res: LlmResponse;
      try {
        res = await Promise.race([this.provider.complete({ ...req, onDelta: bounded.onDelta, maxReplyBytes: bounded.budget, signal: ac.signal }), timeout, aborted]);
      } catch (err) {
        if (!(ac.signal.reason instanceof StoppedAtLimit)) throw err;
        // The provider kept streaming past the limit and was stopped: keep what was shown.
        res = { text: bounded.streamed(), model: req.model, usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }, costUsd: null, cut: 'bytes' };
      }
      res = bounded.finish(res);
      const latencyMs = this.clock.now() - started;
      this.metrics.llmCall({ purpose: req.purpose, model: req.model, outcome: 'ok', seconds: latencyMs / 1000, firstTokenSeconds: bounded.firstTokenSeconds(), usage: res.usage, costUsd: res.costUsd });
      return { ...res, latencyMs };
    } catch (err) {
      const e = toLlmError(err);
      // A call that never got a slot took no model time: its seconds are the wait it gave up on.
      this.metrics.llmCall({ purpose: req.purpose, model: req.model, outcome: e.code, seconds: (this.clock.now() - (started ?? callStarted)) / 1000 });
      throw e;
    } finally {
      stopTimer.abort();
      this.inFlight.delete(ac);
      release?.();
      // Make sure an ignored abort never leaves the race's losers unhandled.
      aborted.catch(() => undefined);
    }
  }

  async idle(): Promise<void> {
    await this.slots.idle();
  }

  /**
   * The byte limit for one call: streamed text is passed on only up to the budget (a provider that
   * streams past it is aborted), and the final text is cut to it and marked.
   */
  private bound(req: Omit<LlmRequest, 'signal'>, ac: AbortController) {
    const budget = this.replyBudget(req);
    const outer = req.onDelta;
    let used = 0;
    let over = false;
    const shown: string[] = [];
    const emit = (text: string) => {
      if (!outer || !text) return;
      try {
        outer(text);
      } catch (err) {
        this.logger?.warn({ err: String(err) }, 'onDelta listener threw; ignoring');
      }
    };
    // Time to first token, for /metrics: the first streamed text the provider hands over.
    const begun = this.clock.now();
    let firstToken: number | undefined;
    const onDelta = outer
      ? (chunk: string) => {
          firstToken ??= (this.clock.now() - begun) / 1000;
          if (over || ac.signal.aborted) return;
          const n = utf8Length(chunk);
          if (used + n <= budget) {
            used += n;
            shown.push(chunk);
            return emit(chunk);
          }
          over = true;
          const part = cutUtf8(chunk, budget - used);
          used += utf8Length(part);
          shown.push(part);
          emit(part);
          ac.abort(new StoppedAtLimit('reply over the byte limit'));
        }
      : undefined;
    return {
      budget,
      onDelta,
      streamed: () => shown.join(''),
      firstTokenSeconds: () => firstToken,
      finish: (res: LlmResponse): LlmResponse => {
        let text = res.text;
        let cut = res.cut;
        if (utf8Length(text) > budget) {
          text = cutUtf8(text, budget);
          cut = 'bytes';
        }
        if (!cut) return res;
        this.logger?.warn({ group: req.groupId, agent: req.agent?.id, purpose: req.purpose, cut, bytes: utf8Length(text) }, `reply cut (${cut === 'bytes' ? `over ${budget} bytes` : 'max_tokens reached'})`);
        // Streamed text ends the way the stored reply does.
        if (used > 0) emit(CUT_MARKER);
        return { ...res, text: text + CUT_MARKER, cut };
      },
    };
  }
}

function toLlmError(err: unknown): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof Error && err.name === 'AbortError') return new LlmError('aborted', 'aborted', true, { cause: err });
  return new LlmError(err instanceof Error ? err.message : String(err), 'unknown', false, { cause: err });
}
