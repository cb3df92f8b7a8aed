/**
 * Recognising "the prompt does not fit the context window" in the answers of the servers Chorus
 * talks to, at the provider boundary, so the router can shrink the prompt and retry
 * instead of reporting a bad request:
 *
 * - Anthropic: 400 `invalid_request_error`, "prompt is too long: 208310 tokens > 200000 maximum";
 * - llama.cpp `llama-server`: 400 `{"error":{"code":400,"type":"exceed_context_size_error",
 *   "message":"request (843 tokens) exceeds the available context size (512 tokens)",
 *   "n_prompt_tokens":843,"n_ctx":512}}` (older builds: "the request exceeds the available context
 *   size, try increasing it", with or without the figures);
 * - OpenAI: 400 `code: "context_length_exceeded"`, "This model's maximum context length is 8192
 *   tokens. However, your messages resulted in 9000 tokens…";
 * - vLLM: 400 "This model's maximum context length is 4096 tokens. However, you requested 5000
 *   tokens (4000 in the messages, 1000 in the completion)…", or in newer versions "… and your
 *   request has 3500 input tokens …".
 *
 * Both SDKs keep the parsed error body on the error (`err.error`: the whole body for Anthropic,
 * the body's `error` member for OpenAI); the message is read as well, for servers that put the
 * figures only there.
 */
import { redact } from './errors.js';
import { ContextTooLongError } from '../core/session/contextBudget.js';

/** What an overflow answer said. */
export interface ContextOverflow {
  limit?: number | undefined;
  promptTokens?: number | undefined;
  message: string;
}

const TYPES = new Set(['exceed_context_size_error', 'context_length_exceeded', 'context_window_exceeded', 'string_above_max_length']);

const MESSAGE_RULES: RegExp[] = [
  /prompt is too long/i,
  /maximum context length/i,
  /exceeds? (?:the )?(?:available )?context (?:size|length|window)/i,
  /context (?:size|length|window) (?:has been |was )?exceeded/i,
  /input (?:length|tokens?) exceeds? (?:the )?(?:maximum )?context/i,
  /too many tokens/i,
];

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : undefined;
}

/** The error object inside an SDK error's body, at whichever depth the SDK left it. */
function bodyOf(err: unknown): Record<string, unknown> | undefined {
  const body = (err as { error?: unknown } | null)?.error;
  if (!body || typeof body !== 'object') return undefined;
  const inner = (body as Record<string, unknown>)['error'];
  return (inner && typeof inner === 'object' ? inner : body) as Record<string, unknown>;
}

/** Whether `err` says the prompt was too long for the context window, and the figures it gave. */
export function contextOverflow(err: unknown): ContextOverflow | null {
  if (!err || typeof err !== 'object') return null;
  const status = (err as { status?: unknown }).status;
  // Only a refusal of the request (400, or 413 from some proxies) can mean this.
  if (typeof status === 'number' && status !== 400 && status !== 413 && status !== 422) return null;
  const body = bodyOf(err);
  const type = [body?.['type'], body?.['code'], (err as { type?: unknown }).type, (err as { code?: unknown }).code].find((t) => typeof t === 'string' && TYPES.has(t));
  const message = [typeof body?.['message'] === 'string' ? (body['message'] as string) : '', err instanceof Error ? err.message : ''].join(' ');
  if (!type && !MESSAGE_RULES.some((re) => re.test(message))) return null;
  let limit = num(body?.['n_ctx']);
  let promptTokens = num(body?.['n_prompt_tokens']);
  const anthropic = /prompt is too long:\s*(\d+)\s*tokens?\s*>\s*(\d+)/i.exec(message);
  if (anthropic) {
    promptTokens ??= Number(anthropic[1]);
    limit ??= Number(anthropic[2]);
  }
  // llama.cpp's message: "request (4476 tokens) exceeds the available context size (4096 tokens)".
  const llama = /request \((\d+) tokens?\) exceeds the available context size \((\d+) tokens?\)/i.exec(message);
  if (llama) {
    promptTokens ??= Number(llama[1]);
    limit ??= Number(llama[2]);
  }
  const max = /maximum context length is\s*(\d+)/i.exec(message);
  if (max) limit ??= Number(max[1]);
  const inMessages = /\((\d+) in the messages/i.exec(message) ?? /request has (\d+) input tokens/i.exec(message) ?? /resulted in (\d+) tokens/i.exec(message);
  if (inMessages) promptTokens ??= Number(inMessages[1]);
  return { limit, promptTokens, message: message.trim() };
}

/** `err` as a ContextTooLongError when it is an overflow answer (secrets redacted), else null. */
export function contextTooLong(err: unknown, provider: string, secrets: ReadonlyArray<string | null | undefined>): ContextTooLongError | null {
  const o = contextOverflow(err);
  if (!o) return null;
  const figures = o.promptTokens !== undefined || o.limit !== undefined ? ` (${o.promptTokens ?? '?'} prompt tokens, window ${o.limit ?? '?'})` : '';
  return new ContextTooLongError(redact(`${provider}: the prompt does not fit the model's context window${figures}: ${o.message}`, secrets), o.limit, o.promptTokens, { cause: err });
}
