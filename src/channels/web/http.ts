/**
 * Small request/response helpers for the web channel's `node:http` server: JSON replies, JSON
 * errors, reading a bounded JSON body, and the security headers every response carries.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

/** An error that becomes `{error: {code, message, ...details}}` with its status. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    /** More about the error for a client to act on (which file, what limit). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Content-Security-Policy for every response: only our own origin; avatars may be https images. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  // blob: for the previews of files chosen to send, made in the page from the files themselves.
  "img-src 'self' data: blob: https:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function setSecurityHeaders(res: ServerResponse): void {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  res.setHeader('cross-origin-resource-policy', 'same-origin');
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}, details: Record<string, unknown> = {}): void {
  sendJson(res, status, { error: { code, message, ...details } }, headers);
}

export function sendText(res: ServerResponse, status: number, text: string, contentType: string): void {
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

/** True when the request declares a JSON body (`application/json`, any charset). */
function isJsonContentType(req: IncomingMessage): boolean {
  const ct = req.headers['content-type'];
  if (!ct) return false;
  const mime = ct.split(';')[0]!.trim().toLowerCase();
  return mime === 'application/json';
}

/**
 * Read and parse a JSON object body. 415 for another content type, 413 past the size limit,
 * 400 for malformed JSON or a body that is not an object.
 */
export async function readJsonObject(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Record<string, unknown>> {
  if (!isJsonContentType(req)) {
    req.resume();
    throw new HttpError(415, 'unsupported_media_type', 'send the body as application/json');
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw new HttpError(413, 'payload_too_large', `request body is larger than ${limit} bytes`, { connection: 'close' });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  await new Promise<void>((resolve, reject) => {
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > limit) {
        tooLarge = true;
        chunks.length = 0;
        resolve();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve());
    req.on('error', (err) => reject(new HttpError(400, 'bad_request', `could not read the request body (${err.message})`)));
    req.on('aborted', () => reject(new HttpError(400, 'bad_request', 'request aborted')));
  });
  if (tooLarge) {
    req.resume();
    throw new HttpError(413, 'payload_too_large', `request body is larger than ${limit} bytes`, { connection: 'close' });
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'bad_json', 'request body is empty; expected a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'bad_json', `malformed JSON: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new HttpError(400, 'bad_json', 'request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** Field validators: each throws a 400 naming the field. */
export const field = {
  string(body: Record<string, unknown>, key: string, opts: { min?: number; max?: number; optional?: boolean } = {}): string | undefined {
    const v = body[key];
    if (v === undefined || v === null) {
      if (opts.optional) return undefined;
      throw new HttpError(400, 'invalid_field', `"${key}" is required`);
    }
    if (typeof v !== 'string') throw new HttpError(400, 'invalid_field', `"${key}" must be a string`);
    const min = opts.min ?? 0;
    if (v.trim().length < min) throw new HttpError(400, 'invalid_field', min <= 1 ? `"${key}" must not be empty` : `"${key}" needs at least ${min} characters`);
    if (opts.max !== undefined && v.length > opts.max) throw new HttpError(400, 'invalid_field', `"${key}" may have at most ${opts.max} characters`);
    return v;
  },
  stringArray(body: Record<string, unknown>, key: string): string[] {
    const v = body[key];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new HttpError(400, 'invalid_field', `"${key}" must be an array of strings`);
    }
    return v as string[];
  },
};

/** Parse an optional non-negative integer query parameter; 400 when present but not one. */
export function intParam(params: URLSearchParams, key: string, opts: { min: number; max: number }): number | undefined {
  const raw = params.get(key);
  if (raw === null || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw)) throw new HttpError(400, 'invalid_query', `"${key}" must be a whole number`);
  const n = Number(raw);
  if (n < opts.min || n > opts.max) throw new HttpError(400, 'invalid_query', `"${key}" must be between ${opts.min} and ${opts.max}`);
  return n;
}
