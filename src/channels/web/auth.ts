/**
 * Bearer-token auth for the web API. With a token configured, every `/api/*` call
 * (and `/metrics`) needs `Authorization: Bearer <token>`; SSE routes and kept files also accept
 * `?token=`, because neither EventSource nor `<img src>` can send headers. Tokens are compared in constant time over hashes,
 * so neither content nor length leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export class TokenAuth {
  private readonly expected: Buffer | null;

  constructor(token: string | null | undefined) {
    const t = token?.trim();
    this.expected = t ? digest(t) : null;
  }

  /** Whether a token is configured at all. */
  get enabled(): boolean {
    return this.expected !== null;
  }

  /** Constant-time comparison of a presented token with the configured one. */
  matches(presented: string): boolean {
    if (!this.expected) return true;
    return timingSafeEqual(digest(presented), this.expected);
  }

  /**
   * Throw 401 unless the request carries the token. `allowQuery` enables `?token=` (SSE and files only).
   */
  check(req: IncomingMessage, url: URL, allowQuery: boolean): void {
    if (!this.expected) return;
    const header = req.headers.authorization;
    let presented: string | undefined;
    if (typeof header === 'string' && header.length > 0) {
      const m = /^Bearer\s+(.+)$/i.exec(header.trim());
      if (!m) throw unauthorized('the Authorization header must be "Bearer <token>"');
      presented = m[1]!.trim();
    } else if (allowQuery) {
      presented = url.searchParams.get('token') ?? undefined;
    }
    if (presented === undefined || presented === '') throw unauthorized('this server needs an auth token');
    if (!this.matches(presented)) throw unauthorized('the auth token is wrong');
  }
}

function unauthorized(message: string): HttpError {
  return new HttpError(401, 'unauthorized', message, { 'www-authenticate': 'Bearer realm="chorus"' });
}
