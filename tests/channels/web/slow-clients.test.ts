/**
 * Slow and greedy clients are cut: raw sockets on 127.0.0.1 that behave like
 * the slow-client probe — they never close their own side — against the real web server with
 * short configured timeouts. Each socket must be gone, counted by the server itself (a client
 * that does not read its socket never sees the close), after its own timeout and never before
 * it. Before the fix these sockets stayed open for minutes whatever the timeouts said; after it
 * they go within the timeout, a sweep of Node's connection list and the short linger the server
 * grants a client to read its last answer. The tests wait up to DEADLINE_MS for that: long
 * enough for a machine many times slower than usual, far too short for the old behaviour. It
 * is no measure of speed.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel, type WebChannelOptions } from '../../../src/channels/web/WebChannel.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';

const running: WebChannel[] = [];
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const t of timers.splice(0)) clearInterval(t);
  for (const s of sockets.splice(0)) s.destroy();
  for (const w of running.splice(0)) await w.stop();
});

type Limits = Partial<Pick<WebChannelOptions['config'], 'headers_timeout_seconds' | 'request_timeout_seconds' | 'idle_timeout_seconds' | 'max_connections_per_address' | 'sse_heartbeat_seconds'>>;

async function start(limits: Limits, extra: Partial<WebChannelOptions> = {}): Promise<{ web: WebChannel; gw: FakeGateway; port: number }> {
  const gw = new FakeGateway();
  gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
  const web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null, ...limits }, logger: silentLogger, agents: TEST_AGENTS, ...extra });
  running.push(web);
  await web.start(gw);
  return { web, gw, port: Number(new URL(web.url!).port) };
}

/** A client like the probe: half-open allowed, so it never closes its side on its own. */
interface Hostile {
  socket: Socket;
  received: () => string;
  /** Resolves when the server closed its side (or the socket went): proof the server acted. */
  ended: Promise<void>;
}

function hostile(port: number, localAddress?: string): Promise<Hostile> {
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true, ...(localAddress ? { localAddress } : {}) });
    sockets.push(socket);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (data += d));
    socket.on('error', () => {});
    const ended = new Promise<void>((done) => {
      socket.once('end', done);
      socket.once('close', done);
    });
    socket.once('connect', () => resolve({ socket, received: () => data, ended }));
    socket.once('error', reject);
  });
}

/** Write `chunk` every `ms` for as long as the socket takes it. */
function dribble(s: Socket, chunk: string, ms: number): void {
  const t = setInterval(() => {
    if (s.destroyed || !s.writable) clearInterval(t);
    else s.write(chunk);
  }, ms);
  timers.push(t);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** See the header: tells "cut after its timeout" from "kept for minutes", on any machine. */
const DEADLINE_MS = 15_000;

/** Whether every client saw the server close its side within DEADLINE_MS. */
async function allEnded(clients: Hostile[]): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), DEADLINE_MS)));
  try {
    return await Promise.race([Promise.all(clients.map((c) => c.ended)).then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Poll until the server holds `n` connections: the ms since `since` (default: now) when it does,
 * or Infinity once DEADLINE_MS have passed. (To wait for connections to be closed, first wait for
 * the clients to see it: a count of 0 also means "not accepted yet".)
 */
async function untilConnections(web: WebChannel, n: number, since = performance.now()): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < DEADLINE_MS) {
    if ((await web.openConnections()) === n) return performance.now() - since;
    await sleep(10);
  }
  return Infinity;
}

describe('slow clients are cut', () => {
  const H = 0.4; // headers timeout (s)
  const R = 0.8; // whole-request timeout (s)
  const I = 0.4; // idle timeout (s)
  // Lower bounds are timed from before the client connects, so the server's clock for the
  // connection cannot have started earlier: "never before the timeout" holds however slow the
  // machine. (The 0.9: the server and the test read the monotonic clock through different APIs.)

  it('a connection that sends nothing is answered 408 and closed after the headers timeout', async () => {
    // Idle timeout longer than the headers timeout here, so the headers timeout is what fires.
    const { web, port } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: 5 * I });
    const t0 = performance.now();
    const c = await hostile(port);
    expect(await allEnded([c]), 'the server closed the connection').toBe(true);
    const took = await untilConnections(web, 0, t0);
    expect(took).toBeGreaterThanOrEqual(H * 1000 * 0.9);
    expect(took).toBeLessThan(Infinity);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received()).toContain('"code":"request_timeout"');
  });

  it('a client dribbling its headers is cut at the headers timeout, however steadily it writes', async () => {
    const { web, port } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: I });
    const t0 = performance.now();
    const c = await hostile(port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    dribble(c.socket, 'X-Slow: 1\r\n', 50);
    expect(await allEnded([c]), 'the server closed the connection').toBe(true);
    const took = await untilConnections(web, 0, t0);
    expect(took).toBeGreaterThanOrEqual(H * 1000 * 0.9);
    expect(took).toBeLessThan(Infinity);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('sixty clients dribbling their headers at once are all cut, none before the headers timeout', async () => {
    // Node checks the headers timeout when it sweeps its connection list (every 30 s unless told
    // otherwise): these all expire in the same sweep, so a sweep that never comes keeps them all.
    const N = 60;
    const { web, port } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: I, max_connections_per_address: 0 });
    const t0 = performance.now();
    const clients = await Promise.all(Array.from({ length: N }, () => hostile(port)));
    for (const c of clients) {
      c.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      dribble(c.socket, 'X-Slow: 1\r\n', 50);
    }
    expect(await allEnded(clients), 'the server closed every connection').toBe(true);
    const took = await untilConnections(web, 0, t0);
    expect(took).toBeGreaterThanOrEqual(H * 1000 * 0.9);
    expect(took).toBeLessThan(Infinity);
    for (const c of clients) expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a client dribbling its body is cut at the request timeout and nothing is recorded', async () => {
    const { web, gw, port } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: I });
    const t0 = performance.now();
    const c = await hostile(port);
    c.socket.write('POST /api/groups/lobby/messages HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"text":"');
    dribble(c.socket, 'a', 50);
    expect(await allEnded([c]), 'the server closed the connection').toBe(true);
    const took = await untilConnections(web, 0, t0);
    expect(took).toBeGreaterThanOrEqual(R * 1000 * 0.9);
    expect(took).toBeLessThan(Infinity);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(gw.received).toHaveLength(0);
  });

  it('a connection that sends nothing is closed after the idle timeout when that is shorter', async () => {
    const { web, port } = await start({ headers_timeout_seconds: 5 * H, request_timeout_seconds: 5 * R, idle_timeout_seconds: I });
    const t0 = performance.now();
    const c = await hostile(port);
    expect(await allEnded([c]), 'the server closed the connection').toBe(true);
    const took = await untilConnections(web, 0, t0);
    expect(took).toBeGreaterThanOrEqual(I * 1000 * 0.9);
    expect(took).toBeLessThan(Infinity);
  });

  it('an idle kept-alive connection is closed after the idle timeout', async () => {
    const { web, port } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: I });
    const c = await hostile(port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    const t0 = performance.now();
    while (!c.received().includes('"status":"ok"') && performance.now() - t0 < 5000) await sleep(5);
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
    // (Node keeps a kept-alive socket up to a second past keepAliveTimeout, its own safety margin.)
    expect(await untilConnections(web, 0)).toBeLessThan(Infinity);
  });

  it('an answer that Chorus itself takes long to prepare is not cut by the idle timeout', async () => {
    const { gw, web } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: I });
    const slow = gw.messages.bind(gw);
    gw.messages = async (...args) => {
      await sleep(4 * I * 1000);
      return slow(...args);
    };
    const res = await fetch(`${web.url}/api/groups/lobby/messages`);
    expect(res.status).toBe(200);
    expect(await res.json()).toHaveProperty('messages');
  });

  it('a client that stops reading a large response is cut after the idle timeout', async () => {
    const { web, gw, port } = await start({ headers_timeout_seconds: H, request_timeout_seconds: R, idle_timeout_seconds: I });
    // 12 MB of history: more than the kernel's socket buffers on loopback can hold.
    const big = 'x'.repeat(60_000);
    for (let i = 0; i < 200; i++) gw.append('lobby', { kind: 'human', authorId: 'web:Maya', authorName: 'Maya', text: `${i} ${big}` });
    const c = await hostile(port);
    // Timed from the request: the server's clock starts with its answer, which cannot come sooner.
    const t0 = performance.now();
    c.socket.write('GET /api/groups/lobby/messages?limit=500 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    while (c.received().length === 0 && performance.now() - t0 < DEADLINE_MS) await sleep(5);
    c.socket.pause();
    // (A paused client does not see the close: the server's own count tells.)
    const took = await untilConnections(web, 0, t0);
    expect(took).toBeGreaterThanOrEqual(I * 1000 * 0.9);
    expect(took).toBeLessThan(Infinity);
  });
});

describe('open connections per address are capped', () => {
  it('refuses connections past the cap with a clear 429, per address, and frees the slot when one closes', async () => {
    const CAP = 3;
    const { web, port } = await start({ headers_timeout_seconds: 30, request_timeout_seconds: 60, idle_timeout_seconds: 30, max_connections_per_address: CAP });
    const held = await Promise.all(Array.from({ length: CAP }, () => hostile(port)));
    expect(await untilConnections(web, CAP)).toBeLessThan(Infinity);

    // Twenty more from the same address: every one is told why, none is served.
    const extra = await Promise.all(Array.from({ length: 20 }, () => hostile(port)));
    for (const e of extra) e.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const t0 = performance.now();
    while (extra.some((e) => !e.received().includes('}')) && performance.now() - t0 < 5000) await sleep(10);
    for (const e of extra) {
      expect(e.received()).toMatch(/^HTTP\/1\.1 429 /);
      expect(e.received()).toContain('"code":"too_many_connections"');
      expect(e.received()).toContain(`the limit is ${CAP}`);
      expect(e.received()).not.toContain('"status":"ok"');
    }
    // The refused ones do not stay: the server is back to the held connections alone.
    expect(await untilConnections(web, CAP)).toBeLessThan(Infinity);

    // Another address is not affected by this one's cap.
    const other = await hostile(port, '127.0.0.2');
    other.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const t1 = performance.now();
    while (!other.received().includes('}') && performance.now() - t1 < 5000) await sleep(10);
    expect(other.received()).toMatch(/^HTTP\/1\.1 200 /);

    // Closing one held connection frees its slot.
    held[0]!.socket.destroy();
    expect(await untilConnections(web, CAP)).toBeLessThan(Infinity); // CAP - 1 held + `other`
    other.socket.destroy();
    expect(await untilConnections(web, CAP - 1)).toBeLessThan(Infinity);
    const again = await hostile(port);
    again.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const t2 = performance.now();
    while (!again.received().includes('}') && performance.now() - t2 < 5000) await sleep(10);
    expect(again.received()).toMatch(/^HTTP\/1\.1 200 /);

    // Free the address's slots first, so the scrape itself is not refused.
    for (const h of held) h.socket.destroy();
    again.socket.destroy();
    expect(await untilConnections(web, 0)).toBeLessThan(Infinity);
    const metrics = await (await fetch(`${web.url}/metrics`)).text();
    expect(metrics).toMatch(/chorus_web_connections_refused_total (2\d)/);
  });
});

describe('SSE heartbeats', () => {
  const HEARTBEAT_MS = 100;

  it('keep a quiet stream open past the idle timeout', async () => {
    const { web, port } = await start({ headers_timeout_seconds: 0.3, request_timeout_seconds: 0.6, idle_timeout_seconds: 0.3 }, { heartbeatMs: HEARTBEAT_MS });
    const c = await hostile(port);
    c.socket.write('GET /api/groups/lobby/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n');
    await sleep(6 * 300);
    expect(web.sseClientCount).toBe(1);
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(c.received().split(': ping').length - 1).toBeGreaterThanOrEqual(3);
  });

  it('close a stream whose client stopped reading, and keep the one that reads', async () => {
    // The size cut is raised out of the way so that the heartbeat alone must find the stalled peer.
    // A longer interval here: the reading client lives in this same busy process and must get
    // each 64 KiB piece through within two intervals even on a loaded CI machine.
    const HEARTBEAT_MS = 500;
    const { web, gw, port } = await start({}, { heartbeatMs: HEARTBEAT_MS, sseMaxBufferedBytes: 1 << 30 });
    const open = async (): Promise<Hostile> => {
      const c = await hostile(port);
      c.socket.write('GET /api/groups/lobby/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n');
      const t0 = performance.now();
      while (!c.received().includes(': connected') && performance.now() - t0 < 5000) await sleep(5);
      return c;
    };
    const stalled = await open();
    const reader = await open();
    let readBytes = 0;
    reader.socket.removeAllListeners('data');
    reader.socket.on('data', (d: string) => (readBytes += d.length));
    stalled.socket.pause();
    expect(web.sseClientCount).toBe(2);

    // 24 MB of deltas: far more than loopback's socket buffers hold for a peer that does not read.
    const piece = 'y'.repeat(64 * 1024);
    for (let i = 0; i < 384; i++) gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't1', text: piece });
    // Cut after two heartbeats without progress; the deadline only ends a wait that would never end.
    const t0 = performance.now();
    while (web.sseClientCount > 1 && performance.now() - t0 < 20 * HEARTBEAT_MS * 10) await sleep(10);
    expect(web.sseClientCount).toBe(1);

    // The reader got everything and is still connected.
    const t1 = performance.now();
    while (readBytes < 384 * piece.length && performance.now() - t1 < 10_000) await sleep(10);
    expect(readBytes).toBeGreaterThan(384 * piece.length);
    await sleep(3 * HEARTBEAT_MS);
    expect(web.sseClientCount).toBe(1);
    const metrics = await (await fetch(`${web.url}/metrics`)).text();
    expect(metrics).toContain('chorus_web_sse_stalled_total 1');
  });
});
