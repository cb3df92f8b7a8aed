/**
 * Plumbing shared by the real providers: the SDK logger bridge, the "first failure" report, the
 * caller's abort signal, the reply byte budget and small request helpers.
 */
import type { LlmError } from '../core/errors.js';
import type { LlmRequest, Logger } from '../core/ports.js';
import { cutUtf8, utf8Length } from '../core/text/utf8.js';
import { replyTimeoutSeconds } from '../config/schema.js';
import { failureHint } from '../core/router/failures.js';
import { redact, toLlmError } from './errors.js';
import { contextTooLong } from './contextErrors.js';

/** The logger shape both official SDKs accept (`ClientOptions.logger`). */
export interface SdkLogger {
  error(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  info(message: string, ...rest: unknown[]): void;
  debug(message: string, ...rest: unknown[]): void;
}

function flatten(message: string, rest: unknown[], secrets: ReadonlyArray<string | null | undefined>): string {
  const parts = [message];
  for (const r of rest) {
    if (r instanceof Error) parts.push(r.message);
    else if (typeof r === 'string') parts.push(r);
    else {
      try {
        parts.push(JSON.stringify(r));
      } catch {
        parts.push(String(r));
      }
    }
  }
  return redact(parts.join(' '), secrets);
}

/**
 * Route the SDK's own log lines into our logger (redacted), instead of the console. The SDKs only
 * log request details at debug level, which we never enable for them.
 */
function sdkLogger(logger: Logger, secrets: ReadonlyArray<string | null | undefined>): SdkLogger {
  return {
    error: (m, ...r) => logger.error({ sdk: true }, flatten(m, r, secrets)),
    warn: (m, ...r) => logger.warn({ sdk: true }, flatten(m, r, secrets)),
    info: (m, ...r) => logger.debug({ sdk: true }, flatten(m, r, secrets)),
    debug: () => {},
  };
}

/**
 * Logs the first failure of a provider loudly, with what was tried (endpoint, model) and why it
 * failed; later failures go to debug (the router reports them per turn). A success after failures
 * is logged once so an operator sees the endpoint recovered.
 */
export class FailureReporter {
  private failures = 0;
  private failingSinceLastSuccess = false;

  constructor(
    private readonly logger: Logger,
    private readonly provider: string,
    private readonly baseUrl: string,
  ) {}

  failed(err: LlmError, model: string, extra: Record<string, unknown> = {}): void {
    this.failures++;
    this.failingSinceLastSuccess = true;
    const fields = { provider: this.provider, baseUrl: this.baseUrl, model, code: err.code, retryable: err.retryable, ...extra };
    if (this.failures === 1) {
      this.logger.error(
        fields,
        `${this.provider} call failed: tried ${this.baseUrl} with model "${model}" → ${err.code}: ${err.message}${hint(err.code)}`,
      );
    } else {
      this.logger.debug({ ...fields, failures: this.failures }, `${this.provider} call failed: ${err.code}: ${err.message}`);
    }
  }

  succeeded(model: string): void {
    if (!this.failingSinceLastSuccess) return;
    this.failingSinceLastSuccess = false;
    this.logger.info({ provider: this.provider, baseUrl: this.baseUrl, model }, `${this.provider} calls succeed again`);
  }
}

function hint(code: string): string {
  const h = failureHint(code);
  return h ? ` (${h})` : '';
}

/**
 * An AbortController that follows the caller's signal. The time limits of a call (first token,
 * silence between chunks, overall cap) are the LlmGate's, which aborts through that signal; the
 * providers keep no watchdog of their own, so there is one set of limits and one place that says
 * which ran out.
 */
export class CallController {
  readonly controller = new AbortController();
  private readonly onAbort: () => void;

  constructor(private readonly outer: AbortSignal | undefined) {
    this.onAbort = () => this.controller.abort(outer?.reason);
    if (outer?.aborted) this.controller.abort(outer.reason);
    else outer?.addEventListener('abort', this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  dispose(): void {
    this.outer?.removeEventListener('abort', this.onAbort);
  }
}

/**
 * The byte budget of one reply (`LlmRequest.maxReplyBytes`). A streaming provider passes
 * every delta through `take` and stops reading — closing the HTTP stream — once `cut` is set, so
 * a runaway model costs at most the budget in memory, not the size of what it would have sent.
 */
export class ReplyBudget {
  private used = 0;
  /** Set once a delta did not fit: the reply is cut and the stream should be closed. */
  cut = false;

  constructor(private readonly limit: number | undefined) {}

  /** The part of `delta` that still fits (all of it while there is room; '' once cut). */
  take(delta: string): string {
    if (this.limit === undefined) return delta;
    if (this.cut) return '';
    const n = utf8Length(delta);
    if (this.used + n <= this.limit) {
      this.used += n;
      return delta;
    }
    const part = cutUtf8(delta, this.limit - this.used);
    this.used += utf8Length(part);
    this.cut = true;
    return part;
  }
}

/** Strip a trailing slash so logged URLs look the same however they were configured. */
export function displayUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

/** A non-empty text for a turn: providers reject empty content blocks. */
export function nonEmpty(text: string): string {
  return text.trim().length > 0 ? text : '(empty)';
}

/**
 * Convert an SDK error at the boundary and report it (once-loud, then quiet). A caller's abort
 * is not a provider failure worth reporting.
 */
export function providerFailure(
  err: unknown,
  req: LlmRequest,
  ctx: { provider: string; call: CallController | undefined; secrets: ReadonlyArray<string | null | undefined>; failures: FailureReporter },
): LlmError {
  // A prompt too long for the context window is its own code (the router shrinks and retries).
  const e = (req.signal?.aborted ? null : contextTooLong(err, ctx.provider, ctx.secrets)) ?? toLlmError(err, { provider: ctx.provider, signal: req.signal, secrets: ctx.secrets });
  if (e.code !== 'aborted') {
    const status = (err as { status?: unknown })?.status;
    ctx.failures.failed(e, req.model, { purpose: req.purpose, ...(typeof status === 'number' ? { status } : {}) });
  }
  return e;
}

/**
 * Client options both official SDKs take alike: base URL, timeout, retries, our logger. The SDK's
 * own timeout (per attempt, up to the response headers) is the overall cap, a backstop that never
 * fires before the gate's limits: a shorter one would make the SDK retry a slow local model's
 * prompt processing from scratch.
 */
export function sdkClientOptions(
  config: { timeout_seconds?: number | undefined; reply_timeout_seconds?: number | undefined; max_retries: number },
  baseUrl: string,
  logger: Logger,
  secrets: ReadonlyArray<string | null | undefined>,
) {
  return {
    baseURL: baseUrl,
    timeout: Math.round(replyTimeoutSeconds(config) * 1000),
    maxRetries: config.max_retries,
    logger: sdkLogger(logger, secrets),
    logLevel: 'warn' as const,
  };
}
