/**
 * Every model call goes through here: the model-call slots (`llm.max_concurrency` in all, with a
 * fair share per group and per agent, see FairSlots), the time limits of a call, the byte limit on
 * replies, cancellation (shutdown, or the caller's own signal: `/stop`), and the counters for
 * /metrics.
 *
 * Time limits that match streaming. A streamed reply is judged by whether it is still
 * coming, not by how long it has taken so far:
 *
 *   first token  the caller's limit (the group's `agent_reply_timeout_seconds`, or
 *                `voluntary_timeout_seconds` for voluntary turns and the selector), counted from
 *                the call — the wait for a slot included — to the first chunk of model output;
 *   idle         `llm.idle_timeout_seconds`: the longest silence between two chunks once output
 *                has begun;
 *   overall cap  `llm.reply_timeout_seconds`, counted from the call like the first-token limit.
 *
 * "Output" is anything the model generates, visible or not: a model that thinks before it answers
 * (thinking blocks, `reasoning_content`, `<think>`) is working, and providers report those chunks
 * through `onActivity` even though they never become reply text.
 *
 * Why the wait for a slot counts against the first-token limit: the person in the chat waits for
 * the first word either way; a call that cannot even start within it ends with "no free model slot"
 * instead of waiting behind other groups' slow models for as long as they take. Once a reply
 * streams, only the idle limit and the cap apply.
 *
 * Why the cap keeps the text: the reader has already seen it stream; replacing it with a timeout
 * notice would take back words that were shown. The text so far is stored and posted with a "…"
 * and `cut: 'timeout'`, like a reply cut at max_tokens. A cap reached before any visible text (a
 * model still thinking) is a timeout: there is nothing to keep.
 *
 * Why replies are bounded here as well as in the providers: the providers stop reading and close
 * the stream at the limit, which is what keeps memory flat; the gate enforces the same limit on
 * whatever a provider hands back (one that streams in one piece, or does not stream at all), so
 * nothing longer is ever published, stored or shown to a model again.
 */
import { LlmError } from '../errors.js';
import type { Clock, LlmProvider, LlmRequest, LlmResponse, Logger } from '../ports.js';
import type { Metrics } from '../metrics.js';
import type { ReplyCut } from '../types.js';
import { cutUtf8, utf8Length } from '../text/utf8.js';
import { FairSlots } from './FairSlots.js';

/**
 * The reason given when the gate ends its own timers. `abort()` without a reason builds a
 * DOMException, stack trace included, and the gate ends two timers on every call: one shared
 * reason keeps that off the per-message cost (it showed as 3% of a throughput profile).
 */
const TIMERS_DONE = Object.freeze(new Error('model call timers ended'));

/** Appended to a reply that was cut for its size; the byte limit includes it. */
export const CUT_MARKER = '\n… [cut: reply too long]';
/**
 * Appended to a reply that ended early for another reason (the model reached `max_tokens`, the
 * overall time cap): it usually stops mid-sentence, and "…" says so where the reader looks.
 */
export const TRAILING_CUT_MARKER = '…';

/** The marker that ends a reply cut for `cut`. */
export function cutMarker(cut: ReplyCut): string {
  return cut === 'bytes' ? CUT_MARKER : TRAILING_CUT_MARKER;
}
/**
 * A reply's byte budget is also bounded by its `max_tokens`: English runs at about 4 bytes per
 * token, CJK and emoji at 3–4, code a little more; 16 is four times that, so a reply inside its
 * token limit is never cut, while a server that ignores `max_tokens` is stopped near it.
 */
export const BYTES_PER_TOKEN_CEILING = 16;
/** Default `llm.max_reply_bytes` (see the schema for why this size). */
export const DEFAULT_MAX_REPLY_BYTES = 32 * 1024;
/** Default `llm.idle_timeout_seconds`, in ms. */
const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
/** Default `llm.reply_timeout_seconds`, in ms. */
const DEFAULT_REPLY_TIMEOUT_MS = 300_000;

/** The gate's settings; shares left out mean no cap beyond `maxConcurrency`. */
export interface GateSettings {
  maxConcurrency: number;
  maxConcurrencyPerGroup?: number | undefined;
  maxConcurrencyPerAgent?: number | undefined;
  maxReplyBytes?: number | undefined;
  /** Longest silence between two chunks of output once a reply has begun (`llm.idle_timeout_seconds`). */
  idleTimeoutMs?: number | undefined;
  /** Overall cap on one call, the wait for a slot included (`llm.reply_timeout_seconds`). */
  replyTimeoutMs?: number | undefined;
}

/** Why the gate stopped a provider that was still producing (never reported as a failure). */
class StoppedEarly extends Error {
  constructor(
    message: string,
    readonly cut: ReplyCut,
  ) {
    super(message);
  }
}

const NO_USAGE = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

/** Which limit ended a call. */
type Expiry = 'first_token' | 'idle' | 'total';

export class LlmGate {
  private readonly slots: FairSlots;
  private readonly maxReplyBytes: number;
  private readonly idleTimeoutMs: number;
  private readonly replyTimeoutMs: number;
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
    this.idleTimeoutMs = settings.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.replyTimeoutMs = settings.replyTimeoutMs ?? DEFAULT_REPLY_TIMEOUT_MS;
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

  /** Bytes of reply text a call may produce before it is cut (the cut marker fits after it). */
  replyBudget(req: Pick<LlmRequest, 'maxTokens'>): number {
    const byTokens = req.maxTokens ? req.maxTokens * BYTES_PER_TOKEN_CEILING : Infinity;
    return Math.max(0, Math.min(this.maxReplyBytes, byTokens) - utf8Length(CUT_MARKER));
  }

  /**
   * Run one call. `firstTokenMs` bounds the time from now (the wait for a slot included) to the
   * first chunk of output; after that the idle limit and the overall cap apply (see the top of
   * this file). `signal` cancels this call alone (`/stop`, a parallel round that has its replies):
   * the call rejects with an 'aborted' LlmError and its slot is given back.
   *
   * Every call streams from the provider, also when the caller has no `onDelta`: the chunks are
   * what tells a working model from a stalled one. Throws LlmError ('timeout', 'aborted', or the
   * provider's). A reply cut short (size, `max_tokens`, the cap) comes back marked, with `cut` set.
   *
   * The caller holds `req.groupId` (a turn, a round's plan) and lets go of it for the call, unless
   * it says `holder: false` (a summary, made outside the group's tasks).
   */
  call(req: Omit<LlmRequest, 'signal'>, firstTokenMs: number, signal?: AbortSignal, opts: { holder?: boolean } = {}): Promise<LlmResponse & { latencyMs: number }> {
    return opts.holder === false ? this.callNow(req, firstTokenMs, signal) : this.aside(req.groupId, () => this.callNow(req, firstTokenMs, signal));
  }

  /** How a call waits: the router makes it let go of the group meanwhile (see GroupMailbox). */
  aside: <T>(groupId: string | undefined, wait: () => Promise<T>) => Promise<T> = (_id, wait) => wait();

  private async callNow(req: Omit<LlmRequest, 'signal'>, firstTokenMs: number, signal?: AbortSignal): Promise<LlmResponse & { latencyMs: number }> {
    if (this.shutdown.aborted) throw new LlmError('shutting down', 'aborted', true);
    if (signal?.aborted) throw stoppedBy(signal);
    const ac = new AbortController();
    const stopTimer = new AbortController();
    this.inFlight.add(ac);
    const onStop = () => ac.abort(stoppedBy(signal!));
    signal?.addEventListener('abort', onStop, { once: true });
    const callStarted = this.clock.now();
    let started: number | null = null;
    let nudge = (): void => undefined;
    const bounded = this.bound(req, ac, () => nudge());
    const expired = this.watch(callStarted, firstTokenMs, bounded.lastOutput, stopTimer.signal, (fn) => (nudge = fn)).then(
      (kind) => {
        const err = this.expiryError(kind, { firstTokenMs, slotted: started !== null, visible: bounded.streamed().trim().length > 0, output: bounded.lastOutput() !== null });
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
        release = await Promise.race([slot, expired, aborted]);
      } finally {
        // Granted in the same tick as a limit ran out: give the slot straight back.
        if (!release) slot.then((r) => r(), () => undefined);
      }
      if (this.shutdown.aborted) throw new LlmError('shutting down', 'aborted', true);
      started = this.clock.now();
      bounded.began(started);
      let res: LlmResponse;
      try {
        res = await Promise.race([
          this.provider.complete({ ...req, onDelta: bounded.onDelta, onActivity: bounded.onActivity, maxReplyBytes: bounded.budget, signal: ac.signal }),
          expired,
          aborted,
        ]);
      } catch (err) {
        const reason: unknown = ac.signal.reason;
        if (!(reason instanceof StoppedEarly)) throw err;
        // The provider was stopped while producing (over the byte limit, or at the overall cap):
        // keep what was shown. Its usage never arrived: zeros, and no cost rather than a guess.
        res = { text: bounded.streamed(), model: req.model, usage: NO_USAGE, costUsd: null, cut: reason.cut };
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
      stopTimer.abort(TIMERS_DONE);
      signal?.removeEventListener('abort', onStop);
      this.inFlight.delete(ac);
      release?.();
      // Make sure an ignored abort never leaves the race's losers unhandled.
      aborted.catch(() => undefined);
    }
  }

  /**
   * Resolves with the limit that ran out first. One sleep at a time, until the nearest deadline;
   * on waking it looks again (output that arrived meanwhile moved the idle deadline later), so a
   * streaming reply costs no timer per chunk. Output can also bring the deadline *earlier* — the
   * first chunk replaces the first-token deadline with the (shorter) idle one — and then `nudge`
   * cuts the sleep short; after that each chunk only moves it later.
   */
  private async watch(callStarted: number, firstTokenMs: number, lastOutput: () => number | null, stop: AbortSignal, setNudge: (fn: () => void) => void): Promise<Expiry> {
    const capAt = callStarted + this.replyTimeoutMs;
    for (;;) {
      const last = lastOutput();
      const phaseAt = last === null ? callStarted + firstTokenMs : last + this.idleTimeoutMs;
      const now = this.clock.now();
      if (now >= capAt) return 'total';
      if (now >= phaseAt) return last === null ? 'first_token' : 'idle';
      const wakeAt = Math.min(capAt, phaseAt);
      const wake = new AbortController();
      const onStop = () => wake.abort(TIMERS_DONE);
      stop.addEventListener('abort', onStop, { once: true });
      setNudge(() => {
        const t = lastOutput();
        if (t !== null && t + this.idleTimeoutMs < wakeAt) wake.abort(TIMERS_DONE);
      });
      try {
        await this.clock.sleep(wakeAt - now, wake.signal);
      } catch (err) {
        if (stop.aborted) throw err;
      } finally {
        stop.removeEventListener('abort', onStop);
      }
    }
  }

  /** The error (or, at the cap with text shown, the stop) for a limit that ran out. */
  private expiryError(kind: Expiry, c: { firstTokenMs: number; slotted: boolean; visible: boolean; output: boolean }): Error {
    const s = (ms: number) => `${Math.round(ms / 100) / 10}s`;
    if (kind === 'total') {
      if (c.visible) return new StoppedEarly('reply over the time cap', 'timeout');
      const what = !c.slotted ? 'no free model slot' : c.output ? 'the model was still thinking, nothing to show' : 'no answer';
      return new LlmError(`${what} within the ${s(this.replyTimeoutMs)} cap (llm.reply_timeout_seconds)`, 'timeout', true);
    }
    if (kind === 'idle') return new LlmError(`the reply stalled: no output for ${s(this.idleTimeoutMs)} (llm.idle_timeout_seconds)`, 'timeout', true);
    return new LlmError(c.slotted ? `no answer within ${s(c.firstTokenMs)}` : `no free model slot within ${s(c.firstTokenMs)}`, 'timeout', true);
  }

  /**
   * The byte limit and the output clock of one call: streamed text is passed on only up to the
   * budget (a provider that streams past it is aborted), the final text is cut to it and marked,
   * and every chunk of output — text or thinking — moves the idle deadline.
   */
  private bound(req: Omit<LlmRequest, 'signal'>, ac: AbortController, onOutput: () => void) {
    const budget = this.replyBudget(req);
    const outer = req.onDelta;
    let used = 0;
    let over = false;
    const shown: string[] = [];
    let begun: number | null = null;
    let firstToken: number | undefined;
    let lastOutput: number | null = null;
    const emit = (text: string) => {
      if (!outer || !text) return;
      try {
        outer(text);
      } catch (err) {
        this.logger?.warn({ err: String(err) }, 'onDelta listener threw; ignoring');
      }
    };
    const output = () => {
      const now = this.clock.now();
      lastOutput = now;
      // Time to first token, for /metrics: the first output the provider reports after the slot.
      if (begun !== null) firstToken ??= (now - begun) / 1000;
      onOutput();
    };
    const onActivity = () => {
      output();
      try {
        req.onActivity?.();
      } catch (err) {
        this.logger?.warn({ err: String(err) }, 'onActivity listener threw; ignoring');
      }
    };
    const onDelta = (chunk: string) => {
      output();
      if (over || ac.signal.aborted || !chunk) return;
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
      ac.abort(new StoppedEarly('reply over the byte limit', 'bytes'));
    };
    return {
      budget,
      onDelta,
      onActivity,
      began: (at: number) => {
        begun = at;
      },
      lastOutput: () => lastOutput,
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
        const why = cut === 'bytes' ? `over ${budget} bytes` : cut === 'max_tokens' ? 'max_tokens reached' : `still streaming at the ${Math.round(this.replyTimeoutMs / 1000)}s cap (llm.reply_timeout_seconds)`;
        this.logger?.warn({ group: req.groupId, agent: req.agent?.id, purpose: req.purpose, model: req.model, cut, bytes: utf8Length(text) }, `${req.agent?.name ?? req.purpose}'s reply was cut (${why})`);
        const marker = cutMarker(cut);
        // Streamed text ends the way the stored reply does.
        if (used > 0) emit(marker);
        return { ...res, text: text + marker, cut };
      },
    };
  }
}

/** The error a call cancelled by its caller's signal rejects with. */
function stoppedBy(signal: AbortSignal): LlmError {
  const r: unknown = signal.reason;
  if (r instanceof LlmError) return r;
  const why = r instanceof Error && r.name !== 'AbortError' ? r.message : typeof r === 'string' && r ? r : 'stopped';
  return new LlmError(why, 'aborted', true);
}

function toLlmError(err: unknown): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof Error && err.name === 'AbortError') return new LlmError('aborted', 'aborted', true, { cause: err });
  return new LlmError(err instanceof Error ? err.message : String(err), 'unknown', false, { cause: err });
}
