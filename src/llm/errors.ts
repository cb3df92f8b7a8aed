/**
 * Conversion of SDK errors into `LlmError` at the provider boundary, shared by the Anthropic and
 * OpenAI providers. Both official SDKs use the same error model (an `APIError` with `status`,
 * subclasses for aborts, timeouts and connection failures), so this works on their shape rather
 * than on one SDK's classes.
 */
import { LlmError } from '../core/errors.js';
import { redactSecrets } from '../redact.js';

/** What the caller knows about the attempt, for the message and the abort reason. */
export interface ConvertContext {
  /** Human name of the provider ("Anthropic", "OpenAI-compatible endpoint"). */
  provider: string;
  /** The caller's own signal: when it fired, the failure is an abort (or its timeout). */
  signal?: AbortSignal | undefined;
  /** Strings that must never appear in a message (the API key). */
  secrets?: ReadonlyArray<string | null | undefined> | undefined;
}

/**
 * Replace every secret in `text` with `***`, and every fragment of one of 8+ characters: a
 * provider that echoes a shortened or masked key ("sk-PROBE-SECR***") must not carry it into a
 * message or the log (see src/redact.ts).
 */
export function redact(text: string, secrets: ReadonlyArray<string | null | undefined> = []): string {
  return redactSecrets(text, secrets);
}

interface ApiErrorShape {
  status?: number | undefined;
  type?: string | null | undefined;
  error?: unknown;
  message?: string;
  name?: string;
}

function className(err: unknown): string {
  if (!err || typeof err !== 'object') return '';
  const own = (err as { name?: unknown }).name;
  if (typeof own === 'string' && own !== 'Error') return own;
  return (err as { constructor?: { name?: string } }).constructor?.name ?? '';
}

/** The `error.type` (Anthropic) or `error.code`/`type` (OpenAI) of an API error body, if any. */
function bodyType(err: ApiErrorShape): string | undefined {
  if (typeof err.type === 'string') return err.type;
  const body = err.error as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object') return undefined;
  const inner = (body['error'] ?? body) as Record<string, unknown>;
  const t = inner['type'] ?? inner['code'];
  return typeof t === 'string' ? t : undefined;
}

/**
 * A refusal that names the model: Anthropic's 404 `not_found_error` ("model: x"), OpenAI's
 * `model_not_found`, vLLM's "The model `x` does not exist", Ollama's `model "x" not found, try
 * pulling it first` (404, as `{error: "…"}` on its own API or `{error: {message}}` on /v1).
 */
const MODEL_MISSING = /\bmodel\b[^\n]{0,120}?\b(not found|does not exist|not exist|unknown|no such)\b|\b(unknown|no such|invalid) model\b|^model: /i;

/**
 * A server refusing images: llama.cpp without a vision projector (500, or 400 in newer builds,
 * "image input is not supported - hint: … you may need to provide the mmproj"), and the wordings of
 * other OpenAI-compatible servers and proxies for a model that cannot see. The same request would
 * be refused again, so it is not retried whatever the status says.
 */
const NO_VISION = /image input is not supported|does not support (?:image|vision)|(?:vision|images?) (?:is |are )?not supported|image_url is only supported/i;

/** The message of an API error body: `{error: {message}}`, `{error: "…"}` (Ollama), or `{message}`. */
function bodyMessage(err: ApiErrorShape): string | undefined {
  const body = err.error;
  if (typeof body === 'string') return body;
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  const inner = b['error'];
  if (typeof inner === 'string') return inner;
  if (inner && typeof inner === 'object' && typeof (inner as Record<string, unknown>)['message'] === 'string') return (inner as Record<string, string>)['message'];
  return typeof b['message'] === 'string' ? b['message'] : undefined;
}

/** Code and retryability for an HTTP status / API error type (and the error's message, when known). */
export function classify(status: number | undefined, type: string | undefined, message = ''): { code: string; retryable: boolean } {
  if (status !== undefined && status >= 400 && NO_VISION.test(message)) return { code: 'bad_request', retryable: false };
  if (type === 'model_not_found' || ((status === 404 || status === 400 || type === 'not_found_error' || type === 'invalid_request_error') && MODEL_MISSING.test(message))) {
    return { code: 'model_not_found', retryable: false };
  }
  // A 404 that does not name a model: the URL is wrong (a base_url without /v1, a proxy's path).
  if (status === 404 || type === 'not_found_error') return { code: 'not_found', retryable: false };
  if (type === 'overloaded_error' || status === 529) return { code: 'overloaded', retryable: true };
  if (type === 'rate_limit_error' || status === 429) return { code: 'rate_limited', retryable: true };
  if (type === 'authentication_error' || type === 'permission_error' || type === 'billing_error') return { code: 'auth', retryable: false };
  if (status === 401 || status === 402 || status === 403) return { code: 'auth', retryable: false };
  if (type === 'timeout_error' || status === 408 || status === 504) return { code: 'timeout', retryable: true };
  if (type === 'api_error' || (status !== undefined && status >= 500)) return { code: 'server', retryable: true };
  if (status === 409) return { code: 'server', retryable: true };
  if (type === 'invalid_request_error' || type === 'request_too_large') {
    return { code: 'bad_request', retryable: false };
  }
  if (status !== undefined && status >= 400) return { code: 'bad_request', retryable: false };
  return { code: 'server', retryable: true };
}

function isAbortReasonTimeout(signal: AbortSignal | undefined): boolean {
  const reason: unknown = signal?.reason;
  return !!reason && typeof reason === 'object' && (reason as { name?: string }).name === 'TimeoutError';
}

/**
 * Turn anything an SDK threw into an `LlmError`. Aborts by the caller's signal become 'aborted'
 * (or 'timeout' when the signal's reason is a `TimeoutError`, as with `AbortSignal.timeout`).
 */
export function toLlmError(err: unknown, ctx: ConvertContext): LlmError {
  if (err instanceof LlmError) return err;
  const e = (err ?? {}) as ApiErrorShape;
  const name = className(err);
  const secrets = ctx.secrets ?? [];
  const raw = err instanceof Error ? err.message : String(err);
  const detail = redact(raw, secrets);
  const make = (code: string, retryable: boolean, message: string) =>
    new LlmError(redact(message, secrets), code, retryable, { cause: err });

  if (ctx.signal?.aborted) {
    if (isAbortReasonTimeout(ctx.signal)) return make('timeout', true, `${ctx.provider}: the call timed out (caller deadline)`);
    return make('aborted', false, `${ctx.provider}: the call was aborted`);
  }
  if (name === 'APIConnectionTimeoutError' || /timed? ?out/i.test(name)) {
    return make('timeout', true, `${ctx.provider}: request timed out`);
  }
  if (name === 'APIUserAbortError' || name === 'AbortError' || (err as { name?: string })?.name === 'AbortError') {
    return make('aborted', false, `${ctx.provider}: the call was aborted`);
  }
  if (name === 'APIConnectionError') {
    const cause = (err as { cause?: unknown }).cause;
    const why = cause instanceof Error ? `${cause.message}${(cause as { code?: string }).code ? ` (${(cause as { code?: string }).code})` : ''}` : detail;
    return make('network', true, `${ctx.provider}: could not connect: ${redact(why, secrets)}`);
  }
  if (typeof e.status === 'number' || bodyType(e) !== undefined) {
    const message = bodyMessage(e) ?? raw.replace(/^\d{3}\s+/, '');
    const { code, retryable } = classify(e.status, bodyType(e), message);
    const blind = NO_VISION.test(message) ? ' (the model cannot take images: set vision: false for this agent, or serve a model that can see, e.g. llama.cpp with --mmproj)' : '';
    return make(code, retryable, `${ctx.provider}: ${detail}${blind}`);
  }
  if (err instanceof TypeError && /fetch failed|network|ECONN/i.test(raw)) {
    return make('network', true, `${ctx.provider}: could not connect: ${detail}`);
  }
  if (/api ?key|auth/i.test(raw) && /could not resolve|missing|expected/i.test(raw)) {
    return make('auth', false, `${ctx.provider}: ${detail}`);
  }
  return make('server', false, `${ctx.provider}: unexpected error: ${detail}`);
}
