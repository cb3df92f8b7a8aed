/**
 * Which requests the web server carries out, judged from the headers a browser adds by itself
 * (sameOrigin.ts), over real HTTP against an in-memory gateway:
 * - a request that may change something is refused with a 403 JSON error naming why when
 *   `Sec-Fetch-Site` is `same-site` or `cross-site`, or when `Origin` is another origin (or
 *   "null"), with or without a web token, and nothing is handed to the gateway;
 * - a form body (multipart, urlencoded, text/plain) from a browser needs proof it is our page;
 * - the page's own requests (`same-origin`, its own Origin, a configured public origin) and
 *   clients that are no browser (neither header: curl, Node, the CLI) pass; reading is never refused;
 * - without a token, a request for a name that is not loopback is refused (DNS rebinding).
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel, type WebChannelOptions } from '../../../src/channels/web/WebChannel.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';

const running: WebChannel[] = [];

afterEach(async () => {
  for (const w of running.splice(0)) await w.stop();
});

interface Harness {
  gw: FakeGateway;
  port: number;
  /** `http://127.0.0.1:<port>`: what the server's own page sends as its Origin. */
  own: string;
}

async function setup(opts: { token?: string; extra?: Partial<WebChannelOptions> } = {}): Promise<Harness> {
  const gw = new FakeGateway();
  gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
  const web = new WebChannel({
    config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: opts.token ?? null },
    logger: silentLogger,
    agents: TEST_AGENTS,
    ...opts.extra,
  });
  running.push(web);
  await web.start(gw);
  const port = Number(new URL(web.url!).port);
  return { gw, port, own: `http://127.0.0.1:${port}` };
}

interface Reply {
  status: number;
  json: { error?: { code: string; message: string } } & Record<string, unknown>;
}

/** One request with exactly these headers (Node's fetch sends neither Sec-Fetch-Site nor a Host of our choosing). */
type HeaderMap = Record<string, string>;

function send(port: number, method: string, path: string, headers: HeaderMap, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const all = body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers };
    const req = request({ host: '127.0.0.1', port, method, path, headers: all }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let json: Reply['json'] = {};
        try {
          json = JSON.parse(text) as Reply['json'];
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_TYPE = { 'content-type': 'application/json' };
const approve = JSON.stringify({ text: '/approve t1', author_name: 'Maya' });
const MESSAGES = '/api/groups/lobby/messages';
/** A message to the lobby with these headers. */
const postMessage = (port: number, headers: HeaderMap, body: string) => send(port, 'POST', MESSAGES, headers, body);
const text = (t: string) => JSON.stringify({ text: t, author_name: 'Maya' });

/** A multipart form with one text field, as a browser sends it. */
function multipart(text: string): { type: string; body: string } {
  const boundary = '----chorusTestBoundary';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="text"\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  return { type: `multipart/form-data; boundary=${boundary}`, body };
}

function expectRefused(r: Reply, code: string): void {
  expect(r.status, JSON.stringify(r.json)).toBe(403);
  expect(r.json.error?.code).toBe(code);
  expect(r.json.error?.message.length).toBeGreaterThan(0);
}

describe('web server: requests from other sites', () => {
  it('refuses a change with Sec-Fetch-Site same-site (another port of 127.0.0.1) or cross-site', async () => {
    const { gw, port } = await setup();
    const form = multipart('/approve t1');
    const sameSite = await postMessage(port, {
      'content-type': form.type,
      'sec-fetch-site': 'same-site',
      origin: `http://127.0.0.1:${port + 1}`,
    }, form.body);
    expectRefused(sameSite, 'cross_site');
    expect(sameSite.json.error?.message).toContain('same-site');
    expectRefused(await postMessage(port, { ...JSON_TYPE, 'sec-fetch-site': 'cross-site' }, approve), 'cross_site');
    // Nothing reached the gateway.
    expect(gw.received).toHaveLength(0);
  });

  it('refuses a change from another Origin, or from Origin "null", when there is no Sec-Fetch-Site', async () => {
    const { gw, port } = await setup();
    for (const origin of ['http://evil.example', `http://127.0.0.1:${port + 1}`, 'null', 'not a url']) {
      expectRefused(await postMessage(port, { ...JSON_TYPE, origin }, approve), 'cross_origin');
    }
    expect(gw.received).toHaveLength(0);
  });

  it('refuses every change route from another site: dissolve, config, members, stop, tools, links…', async () => {
    const { gw, port } = await setup();
    const entry = '/api/groups/lobby/messages/lobby.1';
    const routes: Array<[string, string]> = [
      ['POST', '/api/groups'],
      ['DELETE', '/api/groups/lobby'],
      ['PATCH', '/api/groups/lobby/config'],
      ['POST', '/api/groups/lobby/members'],
      ['DELETE', '/api/groups/lobby/members/writer'],
      ['POST', MESSAGES],
      ['PATCH', entry],
      ['DELETE', entry],
      ['POST', `${entry}/reactions`],
      ['DELETE', `${entry}/reactions`],
      ['POST', `${entry}/regenerate`],
      ['POST', `${entry}/retry`],
      ['POST', '/api/groups/lobby/stop'],
      ['POST', '/api/groups/lobby/tools/t1'],
      ['POST', '/api/groups/lobby/link-code'],
      ['POST', '/api/links'],
      ['DELETE', '/api/groups/lobby/links/telegram/-100'],
    ];
    const headers = { 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site', origin: 'http://evil.example' };
    for (const [method, path] of routes) {
      const r = await send(port, method, path, headers, 'x');
      expect(`${method} ${path} ${r.status} ${r.json.error?.code}`).toBe(`${method} ${path} 403 cross_site`);
    }
    const lobby = gw.getGroup('lobby')!;
    expect(lobby.archived).toBe(false);
    expect(lobby.participants).toEqual(['analyst', 'writer']);
    expect(gw.listGroups()).toHaveLength(1);
  });

  it('refuses a cross-site change with a web token too, even one that carries the token', async () => {
    const { gw, port } = await setup({ token: 'tok-123' });
    const r = await postMessage(port, {
      ...JSON_TYPE,
      authorization: 'Bearer tok-123',
      'sec-fetch-site': 'cross-site',
      origin: 'http://evil.example',
    }, approve);
    expectRefused(r, 'cross_site');
    expect(gw.received).toHaveLength(0);
  });

  it('refuses a form body from a browser that does not prove it is our page', async () => {
    const { gw, port, own } = await setup();
    const form = multipart('/group dissolve');
    // A user-started request (Sec-Fetch-Site: none) without an Origin says nothing of where its form came from.
    const refused = await postMessage(port, { 'content-type': form.type, 'sec-fetch-site': 'none' }, form.body);
    expectRefused(refused, 'form_not_same_origin');
    expect(gw.received).toHaveLength(0);
    // Our own Origin proves it: the form reaches the route (which takes multipart).
    const ours = { 'content-type': form.type, 'sec-fetch-site': 'none', origin: own };
    const proven = await postMessage(port, ours, form.body);
    expect(proven.status).toBe(202);
    expect(gw.received).toHaveLength(1);
  });
});

describe('web server: the page itself and clients that are no browser', () => {
  it('carries out the page\'s own changes (same-origin, its Origin), JSON and multipart', async () => {
    const { gw, port, own } = await setup();
    const page = { 'sec-fetch-site': 'same-origin', origin: own };
    expect((await postMessage(port, { ...JSON_TYPE, ...page }, text('hello'))).status).toBe(202);
    const form = multipart('hello again');
    expect((await postMessage(port, { 'content-type': form.type, ...page }, form.body)).status).toBe(202);
    // A page at localhost is as much ours as one at 127.0.0.1: the Origin is compared with the Host asked for.
    const local = { ...JSON_TYPE, host: `localhost:${port}`, origin: `http://localhost:${port}` };
    expect((await postMessage(port, local, text('third'))).status).toBe(202);
    expect(gw.received.map((m) => m.text)).toEqual(['hello', 'hello again', 'third']);
  });

  it('carries out changes from clients that send neither header (curl, Node, the CLI), JSON or multipart', async () => {
    const { gw, port } = await setup();
    expect((await postMessage(port, JSON_TYPE, text('from curl'))).status).toBe(202);
    const form = multipart('a form from curl');
    expect((await postMessage(port, { 'content-type': form.type }, form.body)).status).toBe(202);
    expect((await send(port, 'DELETE', '/api/groups/lobby', {})).status).toBe(200);
    expect(gw.received.map((m) => m.text)).toEqual(['from curl', 'a form from curl']);
    expect(gw.getGroup('lobby')!.archived).toBe(true);
  });

  it('behind a proxy: a configured public origin is ours whatever the Host; https of our Host too', async () => {
    const publicUrls = ['https://chorus.example.com/base', null];
    const { gw, port } = await setup({ token: 'tok-123', extra: { publicUrls } });
    const auth = { ...JSON_TYPE, authorization: 'Bearer tok-123' };
    const body = text('via proxy');
    expect((await postMessage(port, { ...auth, origin: 'https://chorus.example.com' }, body)).status).toBe(202);
    // A TLS proxy that keeps the Host: the page's Origin is https, the request reaching us is http.
    const kept = { ...auth, host: 'chat.example.org', origin: 'https://chat.example.org' };
    expect((await postMessage(port, kept, body)).status).toBe(202);
    for (const origin of ['https://chorus.example.com.evil.example', 'http://chorus.example.com']) {
      expectRefused(await postMessage(port, { ...auth, origin }, body), 'cross_origin');
    }
    expect(gw.received).toHaveLength(2);
  });

  it('behind a proxy that rewrites the Host: a browser\'s Sec-Fetch-Site same-origin is believed', async () => {
    const { gw, port } = await setup({ token: 'tok-123' });
    const auth = { authorization: 'Bearer tok-123', 'sec-fetch-site': 'same-origin', origin: 'https://chat.example' };
    expect((await postMessage(port, { ...JSON_TYPE, ...auth }, text('proxied'))).status).toBe(202);
    const form = multipart('proxied form');
    expect((await postMessage(port, { ...auth, 'content-type': form.type }, form.body)).status).toBe(202);
    expect(gw.received.map((m) => m.text)).toEqual(['proxied', 'proxied form']);
  });

  it('never refuses reading: a cross-site GET is answered (the browser hides it from the other page)', async () => {
    const { port } = await setup();
    const r = await send(port, 'GET', '/api/groups', { 'sec-fetch-site': 'cross-site', origin: 'http://evil.example' });
    expect(r.status).toBe(200);
  });
});

describe('web server: the Host name (DNS rebinding)', () => {
  it('without a token, refuses a change (and a read) for a name not loopback, even from its own page', async () => {
    const { gw, port } = await setup();
    // A page at evil.example:<port> whose name now resolves to 127.0.0.1 is same-origin with itself.
    const host = `evil.example:${port}`;
    const rebound = { ...JSON_TYPE, host, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' };
    expectRefused(await postMessage(port, rebound, approve), 'bad_host');
    expectRefused(await send(port, 'GET', '/api/groups', { host }), 'bad_host');
    expect(gw.received).toHaveLength(0);
    // Loopback names in any spelling are ours.
    for (const name of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      expect((await send(port, 'GET', '/api/groups', { host: name })).status, name).toBe(200);
    }
  });

  it('with a token, answers other names (a reverse proxy\'s) and asks for the token as before', async () => {
    const { port } = await setup({ token: 'tok-123' });
    const host = 'chorus.example.com';
    expect((await send(port, 'GET', '/api/groups', { host })).status).toBe(401);
    expect((await send(port, 'GET', '/api/groups', { host, authorization: 'Bearer tok-123' })).status).toBe(200);
  });
});
