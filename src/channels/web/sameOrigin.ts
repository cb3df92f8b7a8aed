/**
 * Who may ask this server for something, decided before any route runs.
 *
 * - The Host name: without a web token the server answers only requests addressed to a loopback
 *   name (or the address it is bound to). A page elsewhere whose name is made to resolve to
 *   127.0.0.1 (DNS rebinding) is then same-origin with itself, never with us, and is refused here.
 *   With a token nothing more is needed: a rebound page cannot read the token the real page keeps.
 * - Cross-site requests: a page on another site can make a browser submit a form or a `no-cors`
 *   fetch to us (the browser does not ask first for those), and without a token nothing else tells
 *   such a request from the page's own. Every request that may change something (any method but
 *   GET, HEAD and OPTIONS) is therefore refused when the browser says it comes from elsewhere:
 *   `Sec-Fetch-Site` other than `same-origin` or `none` (two ports of 127.0.0.1 are "same-site",
 *   and still another origin), or an `Origin` that is not this server's. A body a form can send
 *   (multipart, urlencoded, text/plain) also needs a sign that the page is ours. Curl, Node's
 *   fetch, the CLI and bots send neither header and are not browsers being tricked: they pass.
 */
import type { IncomingMessage } from 'node:http';
import { isLoopback } from '../../config/rules.js';
import { HttpError } from './http.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The content types an HTML form (or a `no-cors` fetch) can send without a preflight. */
const FORM_TYPES = new Set(['multipart/form-data', 'application/x-www-form-urlencoded', 'text/plain']);

export interface OriginPolicy {
  /** The address the server listens on; its own name is always a right Host. */
  bindHost: string;
  /** Whether a web token is configured (then any Host is answered; the token protects). */
  tokenRequired: boolean;
  /** Origins the server is reached under besides its Host (a reverse proxy's public URL). */
  publicOrigins: readonly string[];
}

/** 403 `bad_host` for a tokenless server asked under a name that is not its own. */
export function checkHost(req: IncomingMessage, policy: OriginPolicy): void {
  if (policy.tokenRequired || hostAllowed(req.headers.host, policy.bindHost)) return;
  throw new HttpError(
    403,
    'bad_host',
    'this server only answers requests for its loopback address; set channels.web.auth_token to serve other names',
  );
}

function hostAllowed(header: string | undefined, bindHost: string): boolean {
  if (!header) return false;
  let name: string;
  try {
    name = new URL(`http://${header}`).hostname;
  } catch {
    return false;
  }
  const bare = name.replace(/^\[|\]$/g, '');
  return isLoopback(name) || isLoopback(bare) || bare === bindHost.replace(/^\[|\]$/g, '');
}

/**
 * 403 for a request that may change something and comes, by the browser's own word, from a page
 * that is not ours. The error's code and message say which sign gave it away.
 */
export function refuseCrossSite(req: IncomingMessage, policy: OriginPolicy): void {
  if (SAFE_METHODS.has(req.method ?? 'GET')) return;
  const site = single(req.headers['sec-fetch-site'])?.trim().toLowerCase();
  // The browser's own word that the page is ours, whatever Host a reverse proxy passes on.
  if (site === 'same-origin') return;
  if (site !== undefined && site !== 'none') {
    throw new HttpError(
      403,
      'cross_site',
      'refused: the browser says this request comes from a page of another origin ' +
        `(Sec-Fetch-Site: ${site.slice(0, 40)}); only this server's own page may change anything`,
    );
  }
  const origin = single(req.headers.origin)?.trim();
  const ownOrigin = origin !== undefined && isOwnOrigin(origin, req.headers.host, policy.publicOrigins);
  if (origin !== undefined && !ownOrigin) {
    throw new HttpError(
      403,
      'cross_origin',
      `refused: this request comes from the page of ${origin.slice(0, 100)}, not from this server's own page`,
    );
  }
  // A form body from a browser that gave no sign of where it comes from is not taken on trust:
  // only a client that is no browser at all (neither header) or our own Origin passes.
  if ((site !== undefined || origin !== undefined) && !ownOrigin && isFormBody(req)) {
    throw new HttpError(
      403,
      'form_not_same_origin',
      'refused: a form body needs a request from this server\'s own page (Origin or Sec-Fetch-Site: same-origin)',
    );
  }
}

/**
 * Whether `origin` is this server as the browser reached it: the scheme it used and the Host it
 * asked for (a TLS proxy in front may make either scheme ours), or one of the public origins.
 */
function isOwnOrigin(origin: string, host: string | undefined, publicOrigins: readonly string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    // "null" (a sandboxed frame, a file: page) and anything else that is no URL.
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  if (publicOrigins.includes(parsed.origin)) return true;
  if (!host) return false;
  try {
    return new URL(`${parsed.protocol}//${host}`).origin === parsed.origin;
  } catch {
    return false;
  }
}

/** The origin of a configured public URL (`https://chorus.example.com/base` → `https://chorus.example.com`). */
export function originOf(url: string | null | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

function isFormBody(req: IncomingMessage): boolean {
  const ct = req.headers['content-type'];
  return typeof ct === 'string' && FORM_TYPES.has(ct.split(';')[0]!.trim().toLowerCase());
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
