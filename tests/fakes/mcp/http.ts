/**
 * # Fake MCP tool server over Streamable HTTP, in process
 *
 *     const fake = await startFakeHttpMcp({ token: 'secret' });   // fake.url: http://127.0.0.1:PORT/mcp
 *
 * The tools of `tools.ts` behind the SDK's `StreamableHTTPServerTransport`, one session (and one
 * `McpServer`) per client, on 127.0.0.1 with a random port. With `token`, every request must carry
 * `authorization: Bearer <token>`, else it is answered 401 (what a real server does with a wrong key).
 * `down()` closes the listener and every connection and forgets the sessions (the `crash` tool does
 * the same at once, so its own call gets no answer, as when a process dies); `up()` listens again
 * on the same port. `requests` counts requests per method.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createFakeMcpServer } from './tools.js';

export interface FakeHttpMcp {
  url: string;
  requests: { GET: number; POST: number; DELETE: number; unauthorized: number };
  /** Sessions open now. */
  readonly sessions: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeHttpMcp(opts: { token?: string; stateFile?: string; pageSize?: number } = {}): Promise<FakeHttpMcp> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const requests = { GET: 0, POST: 0, DELETE: 0, unauthorized: 0 };
  let port = 0;
  let running = true;

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const method = (req.method ?? 'GET') as 'GET' | 'POST' | 'DELETE';
    if (method in requests) requests[method]++;
    if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`) {
      requests.unauthorized++;
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid token' }));
      return;
    }
    const id = req.headers['mcp-session-id'];
    const known = typeof id === 'string' ? transports.get(id) : undefined;
    if (known) return known.handleRequest(req, res);
    if (typeof id === 'string' || method !== 'POST') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => void transports.set(sid, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    const server = createFakeMcpServer({ stateFile: opts.stateFile, pageSize: opts.pageSize, onCrash: () => void fake.down() });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  const listen = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  await listen();
  port = (server.address() as AddressInfo).port;

  const fake: FakeHttpMcp = {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    get sessions() {
      return transports.size;
    },
    async down() {
      if (!running) return;
      running = false;
      const all = [...transports.values()];
      transports.clear();
      await Promise.all(all.map((t) => t.close().catch(() => undefined)));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    async up() {
      if (running) return;
      running = true;
      await listen();
    },
    async close() {
      await fake.down();
    },
  };
  return fake;
}
