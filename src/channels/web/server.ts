/**
 * The HTTP server of the web feed: security headers, auth, routing to the API and the static
 * page, and the mapping of every failure to a JSON error. Bad input is always a 4xx; only a bug
 * is a 500, and even then the process keeps running.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../core/ports.js';
import type { Readiness } from '../../core/readModels.js';
import { StoreUnavailableError, UserError, describeError } from '../../core/errors.js';
import type { TokenAuth } from './auth.js';
import { guardConnections, serverOptions, type ConnectionLimits } from './connections.js';
import { HttpError, sendError, sendJson, sendText, setSecurityHeaders } from './http.js';
import type { WebMetrics } from './metrics.js';
import type { HttpMounts } from './mounts.js';
import type { Router } from './router.js';
import { checkHost, refuseCrossSite } from './sameOrigin.js';
import type { StaticFiles } from './static.js';

export interface ServerDeps {
  /**
   * Without a token the server only answers requests addressed to a loopback name (or the bound
   * host), so a web page elsewhere cannot reach it through DNS rebinding (sameOrigin.ts).
   */
  bindHost: string;
  router: Router;
  auth: TokenAuth;
  files: StaticFiles;
  logger: Logger;
  webMetrics: WebMetrics;
  /** Prometheus text for `/metrics`. */
  metricsText(): string | Promise<string>;
  /** What `/readyz` reports: can the store take writes, is every channel connected (and the tool servers up)? */
  readiness(): Readiness;
  /** Timeouts and the per-address connection cap (connections.ts). */
  limits: ConnectionLimits;
  /** Paths other channels serve here (Telegram webhooks); they authenticate their own requests. */
  mounts?: HttpMounts | undefined;
  /** Origins the page is also served under (a reverse proxy's public URL), besides the Host asked for. */
  publicOrigins?: readonly string[] | undefined;
}

/**
 * Paths whose GET accepts the token as `?token=` too: the SSE streams (EventSource cannot send
 * headers) and kept files (an `<img src>` or a download link cannot either).
 */
function takesQueryToken(pathname: string): boolean {
  return pathname === '/api/events' || /^\/api\/groups\/[^/]+\/events$/.test(pathname) || /^\/api\/files\/[^/]+$/.test(pathname);
}

export function createWebServer(deps: ServerDeps): Server {
  const server = createServer(serverOptions(deps.limits), (req, res) => {
    // Over the per-address cap: already answered 429 and closing.
    if (guard.refused(req.socket)) {
      req.resume();
      return;
    }
    res.on('finish', () => deps.webMetrics.countResponse(res.statusCode));
    accessLog(req, res, deps.logger);
    handle(req, res, deps).catch((err: unknown) => fail(res, err, deps.logger));
  });
  // Timeouts that hold, the per-address cap, and error answers that really close.
  const guard = guardConnections(server, deps.limits, deps.webMetrics);
  return server;
}

async function handle(req: IncomingMessage, res: ServerResponse, deps: ServerDeps): Promise<void> {
  setSecurityHeaders(res);
  const method = req.method ?? 'GET';
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://localhost');
  } catch {
    throw new HttpError(400, 'bad_request', 'malformed request URL');
  }
  const path = url.pathname;
  // Before the Host check and the web token: Telegram (through a reverse proxy) calls these with
  // the public host name and no Bearer token; the handler checks Telegram's secret header itself.
  const mounted = deps.mounts?.find(path);
  if (mounted) {
    await mounted(req, res, url);
    return;
  }
  // Before the token too: a page elsewhere is refused whether or not a token is configured.
  const policy = { bindHost: deps.bindHost, tokenRequired: deps.auth.enabled, publicOrigins: deps.publicOrigins ?? [] };
  checkHost(req, policy);
  refuseCrossSite(req, policy);

  if (path === '/healthz') {
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'method_not_allowed', `${method} is not allowed here`, { allow: 'GET, HEAD' });
    sendText(res, 200, JSON.stringify({ status: 'ok' }), 'application/json; charset=utf-8');
    return;
  }
  if (path === '/readyz') {
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'method_not_allowed', `${method} is not allowed here`, { allow: 'GET, HEAD' });
    const r = deps.readiness();
    // The status code is for probes, which carry no token. The detail (bot names, error texts)
    // is for operators: with a token configured it is shown only to requests that carry it.
    const detailed = !deps.auth.enabled || authorised(req, url, deps.auth);
    // A tool server that is down degrades but does not unready: agents answer without its tools.
    const status = !r.ready ? 'not_ready' : r.tools && !r.tools.ok ? 'degraded' : 'ready';
    const body = detailed
      ? { status, ready: r.ready, store: r.store, channels: r.channels, ...(r.cluster ? { cluster: r.cluster } : {}), ...(r.tools ? { tools: r.tools } : {}) }
      : { status, ready: r.ready };
    sendText(res, r.ready ? 200 : 503, JSON.stringify(body), 'application/json; charset=utf-8');
    return;
  }
  if (path === '/metrics') {
    deps.auth.check(req, url, false);
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'method_not_allowed', `${method} is not allowed here`, { allow: 'GET, HEAD' });
    sendText(res, 200, await deps.metricsText(), 'text/plain; version=0.0.4; charset=utf-8');
    return;
  }
  if (path === '/api' || path.startsWith('/api/')) {
    deps.auth.check(req, url, (method === 'GET' || method === 'HEAD') && takesQueryToken(path));
    const match = deps.router.match(method, path);
    if (match.kind === 'not_found') throw new HttpError(404, 'not_found', `no API route ${path}`);
    if (match.kind === 'method_not_allowed') {
      throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${path} (allowed: ${match.allowed.join(', ')})`, {
        allow: match.allowed.join(', '),
      });
    }
    await match.handler({ req, res, url, params: match.params });
    return;
  }
  if (method === 'GET' || method === 'HEAD') {
    if (deps.files.serve(path, req.headers, res)) return;
    if (path === '/' && !deps.files.loaded) throw new HttpError(404, 'not_found', 'the page files were not found; the API still works under /api');
    throw new HttpError(404, 'not_found', `nothing at ${path}`);
  }
  throw new HttpError(404, 'not_found', `nothing at ${path}`);
}

function authorised(req: IncomingMessage, url: URL, auth: TokenAuth): boolean {
  try {
    auth.check(req, url, false);
    return true;
  } catch {
    return false;
  }
}

/**
 * One debug line per request once it is answered (or the client went away): method, path,
 * status, time. The query string is left out on purpose — SSE requests carry `?token=` there.
 */
function accessLog(req: IncomingMessage, res: ServerResponse, logger: Logger): void {
  const started = process.hrtime.bigint();
  res.once('close', () => {
    const path = (req.url ?? '/').split('?')[0]!.slice(0, 200);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    logger.debug(
      { method: req.method, path, status: res.statusCode, ms: Math.round(ms * 10) / 10, completed: res.writableFinished, remote: req.socket.remoteAddress },
      `${req.method} ${path} ${res.statusCode}`,
    );
  });
}

function fail(res: ServerResponse, err: unknown, logger: Logger): void {
  if (res.headersSent) {
    // Mid-stream failure (e.g. SSE): nothing sensible to send any more.
    logger.warn({ err: describeError(err) }, 'web: error after response started');
    res.end();
    return;
  }
  if (err instanceof HttpError) {
    sendError(res, err.status, err.code, err.message, err.headers, err.details);
    return;
  }
  if (err instanceof UserError) {
    const status = err.status >= 400 && err.status < 500 ? err.status : 400;
    const retry = err.retryAfterSeconds;
    if (retry !== undefined) sendJson(res, status, { error: { code: err.code, message: err.message, retryAfterSeconds: retry } }, { 'retry-after': String(retry) });
    else sendError(res, status, err.code, err.message);
    return;
  }
  if (err instanceof StoreUnavailableError) {
    // The change was not made durable, so nothing of it was kept: the client may simply retry.
    sendError(res, 503, 'unavailable', 'storage is unavailable; nothing was changed, try again shortly', { 'retry-after': '5' });
    return;
  }
  logger.error({ err: describeError(err) }, 'web: unexpected error while handling a request');
  sendError(res, 500, 'internal', 'internal error; see the server log');
}

/** The URL a listening server answers on (IPv6 hosts in brackets). */
export function serverUrl(server: Server, host: string): string {
  const addr = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const h = shown.includes(':') && !shown.startsWith('[') ? `[${shown}]` : shown;
  return `http://${h}:${addr.port}`;
}
