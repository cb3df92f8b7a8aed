/**
 * Slow and greedy clients on the web server: every connection is bounded in time and
 * each client address in how many connections it may hold.
 *
 * Why the old settings did not hold: `headersTimeout` and `requestTimeout` were set, but Node
 * enforces them only when it sweeps its connection list (every 30 s by default), and when it did
 * fire, our `clientError` handler answered with `socket.end()` alone. The HTTP server's sockets
 * allow half-open connections, so `end()` only sends our FIN; a client that never closes its own
 * side (one dribbling a header byte now and then, or doing nothing) kept the socket for minutes,
 * and so did an idle keep-alive socket after its timeout. Here every socket on which Chorus has
 * said its last word is destroyed shortly after, the sweep runs often enough that a limit is the
 * limit, and stalled responses have an inactivity timeout.
 */
import type { Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { clientAddressKey } from './client.js';
import type { WebMetrics } from './metrics.js';

/** How long a client may take, and how many connections it may hold (channels.web.*). */
export interface ConnectionLimits {
  /** To send the request headers, however steadily they trickle in. */
  headersTimeoutMs: number;
  /** To send the whole request, body included. */
  requestTimeoutMs: number;
  /** Nothing moving either way: a new connection that says nothing, between requests, or a response nobody reads. */
  idleTimeoutMs: number;
  /** Open connections per client address (see client.ts); 0 = no cap. */
  maxConnectionsPerAddress: number;
}

/** `createServer` options for these limits (the sweep interval can only be set at construction). */
export function serverOptions(limits: ConnectionLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // A quarter of the shortest limit, at most a second: the sweep is one pass over the open
    // connections, cheap next to a client holding one for 30 s longer than allowed.
    connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
  };
}

export interface ConnectionGuard {
  /** True for a connection over the per-address cap: it was answered 429 and is closing; ignore its requests. */
  refused(socket: Socket): boolean;
  /** Connections open now from the address of this key (tests, metrics). */
  openFrom(key: string): number;
}

/**
 * Apply the limits to a server: timeouts, the per-address cap with a clear 429, answers to
 * malformed or timed-out requests that really close the connection, and a short linger after
 * the server's last word before the socket is destroyed.
 */
export function guardConnections(server: Server, limits: ConnectionLimits, metrics: WebMetrics): ConnectionGuard {
  /** The response in progress on each socket, so a late client error never writes into it. */
  const current = new WeakMap<Socket, ServerResponse>();
  const refused = new WeakSet<Socket>();
  const open = new Map<string, number>();

  server.keepAliveTimeout = limits.idleTimeoutMs;
  // Socket inactivity while a request or response is under way (a client that stops reading).
  // SSE streams opt out and rely on their heartbeat instead (sse.ts).
  server.timeout = limits.idleTimeoutMs;

  // After Chorus has said its last word on a connection (a timeout answer, a refusal, the end of
  // a keep-alive), the client gets a moment to read it and close; then the socket goes.
  const lingerMs = Math.min(1_000, limits.headersTimeoutMs);

  server.prependListener('connection', (socket: Socket) => {
    socket.once('finish', () => {
      const t = setTimeout(() => socket.destroy(), lingerMs);
      t.unref();
      socket.once('close', () => clearTimeout(t));
    });
    const key = clientAddressKey(socket.remoteAddress);
    const count = open.get(key) ?? 0;
    if (limits.maxConnectionsPerAddress > 0 && count >= limits.maxConnectionsPerAddress) {
      refused.add(socket);
      metrics.connectionsRefused++;
      metrics.countResponse(429);
      const message = `too many open connections from ${key} (the limit is ${limits.maxConnectionsPerAddress}); close some and try again`;
      socket.end(rawResponse(429, 'Too Many Requests', { code: 'too_many_connections', message }, { 'retry-after': '1' }));
      return;
    }
    open.set(key, count + 1);
    socket.once('close', () => {
      const n = (open.get(key) ?? 1) - 1;
      if (n <= 0) open.delete(key);
      else open.set(key, n);
    });
  });

  server.prependListener('request', (req, res) => {
    current.set(req.socket, res);
    // The inactivity timeout is for clients: one that stops sending its request, or stops reading
    // our answer. While the request is complete and Chorus itself is still working on the answer
    // (a slow disk, a long page of history), the silence is ours and the connection stays.
    res.on('timeout', (socket: Socket) => {
      if (!req.complete || res.headersSent) socket.destroy();
    });
  });

  server.on('clientError', (err: NodeJS.ErrnoException, duplex) => {
    const socket = duplex as Socket;
    // Answer only when nothing of a response was sent yet (as Node's own handler does), then
    // close: the linger above destroys the socket if the client keeps its side open.
    if (socket.writable && !refused.has(socket) && !current.get(socket)?.headersSent) {
      const [status, reason, code, message] =
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? ([408, 'Request Timeout', 'request_timeout', 'the request was not complete in time'] as const)
          : err.code === 'HPE_HEADER_OVERFLOW'
            ? ([431, 'Request Header Fields Too Large', 'headers_too_large', 'the request headers are too large'] as const)
            : ([400, 'Bad Request', 'bad_request', 'malformed HTTP request'] as const);
      metrics.countResponse(status);
      socket.end(rawResponse(status, reason, { code, message }));
    } else {
      socket.destroy();
    }
  });

  return {
    refused: (socket) => refused.has(socket),
    openFrom: (key) => open.get(key) ?? 0,
  };
}

/** A complete HTTP/1.1 JSON error written straight to a socket (there is no response object). */
function rawResponse(status: number, reason: string, error: { code: string; message: string }, headers: Record<string, string> = {}): string {
  const body = JSON.stringify({ error });
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    'connection: close',
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'cache-control: no-store',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}
