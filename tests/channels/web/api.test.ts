/**
 * The web channel's HTTP API against an in-memory gateway: every route, every kind of bad
 * request (always a 4xx JSON error, never a 5xx or a crash), auth, and the SSE streams including
 * resume with Last-Event-ID and listener clean-up.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { findPublicDir } from '../../../src/channels/web/static.js';
import { WebChannel, type WebChannelOptions } from '../../../src/channels/web/WebChannel.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';
import { openSse, type SseConnection } from './sse-client.js';

interface Harness {
  web: WebChannel;
  gw: FakeGateway;
  base: string;
}

const running: WebChannel[] = [];
const streams: SseConnection[] = [];

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const w of running.splice(0)) await w.stop();
});

async function setup(opts: { token?: string | null; extra?: Partial<WebChannelOptions> } = {}): Promise<Harness> {
  const gw = new FakeGateway();
  gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer', 'critic'] });
  gw.addGroup({ id: 'tg-1', title: 'Telegram chat', channel: 'telegram', chatId: '-100123', participants: ['analyst'] });
  const web = new WebChannel({
    config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: opts.token ?? null },
    logger: silentLogger,
    agents: TEST_AGENTS,
    aliases: { creatives: ['writer', 'critic'] },
    heartbeatMs: 100,
    ...opts.extra,
  });
  running.push(web);
  await web.start(gw);
  return { web, gw, base: web.url! };
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function call(base: string, method: string, path: string, opts: { body?: unknown; raw?: string; type?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, text, json };
}

function expectError(r: Reply, status: number, code?: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/application\/json/);
  expect(typeof r.json?.error?.message).toBe('string');
  expect(r.json.error.message.length).toBeGreaterThan(0);
  if (code) expect(r.json.error.code).toBe(code);
}

describe('web API: basics', () => {
  it('serves /healthz, the page and security headers', async () => {
    const { base } = await setup();
    const h = await call(base, 'GET', '/healthz');
    expect(h.status).toBe(200);
    expect(h.json).toEqual({ status: 'ok' });
    expect(h.headers.get('x-content-type-options')).toBe('nosniff');
    expect(h.headers.get('content-security-policy')).toContain("default-src 'self'");
    const page = await call(base, 'GET', '/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    // The page's script under its content-hashed name (static-files.test.ts has the rest).
    const script = /<script type="module" src="(\/app\.\w+\.js)"><\/script>/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const js = await call(base, 'GET', script!);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expectError(await call(base, 'GET', '/../package.json'), 404);
    expectError(await call(base, 'GET', '/nope.html'), 404, 'not_found');
    expectError(await call(base, 'POST', '/healthz'), 405);
  });

  it('serves Prometheus metrics, derived from the gateway or injected', async () => {
    const { base, web } = await setup();
    const m = await call(base, 'GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toMatch(/text\/plain/);
    expect(m.text).toContain('chorus_groups{channel="web"} 1');
    expect(m.text).toContain('chorus_groups{channel="telegram"} 1');
    expect(m.text).toContain('chorus_web_sse_clients 0');
    await web.stop();
    const injected = await setup({ extra: { metrics: () => 'chorus_rounds_total 7' } });
    const m2 = await call(injected.base, 'GET', '/metrics');
    expect(m2.text).toContain('chorus_rounds_total 7\n');
    expect(m2.text).toContain('chorus_web_http_responses_total{status="2xx"}');
  });

  it('lists agents without secrets, with handles, aliases and the scripted flag', async () => {
    const { base, gw } = await setup();
    gw.scriptedProvider = true;
    const r = await call(base, 'GET', '/api/agents');
    expect(r.status).toBe(200);
    expect(r.json.scriptedProvider).toBe(true);
    expect(r.json.aliases).toEqual({ creatives: ['writer', 'critic'] });
    const analyst = r.json.agents.find((a: any) => a.id === 'analyst');
    expect(analyst).toMatchObject({ name: 'Analyst', avatar: '📈', color: '#2563eb', handles: ['analyst', 'numbers'] });
    expect(r.text).not.toContain('SECRET');
    expect(r.text).not.toContain('persona');
    const info = await call(base, 'GET', '/api/info');
    expect(info.json).toMatchObject({ scriptedProvider: true, maxMessageLength: 16000 });
  });

  it('answers unknown routes with 404 and wrong methods with 405 + Allow', async () => {
    const { base } = await setup();
    expectError(await call(base, 'GET', '/api/nope'), 404, 'not_found');
    expectError(await call(base, 'GET', '/api'), 404);
    const r = await call(base, 'PUT', '/api/groups');
    expectError(r, 405, 'method_not_allowed');
    expect(r.headers.get('allow')).toContain('POST');
    expectError(await call(base, 'POST', '/api/groups/lobby'), 405);
    expectError(await call(base, 'GET', '/api/groups/%E0%A4%A'), 400, 'bad_path');
  });
});

describe('web API: groups', () => {
  it('lists, creates, reads and dissolves groups', async () => {
    const { base } = await setup();
    const list = await call(base, 'GET', '/api/groups');
    expect(list.json.groups.map((g: any) => g.id)).toEqual(['lobby', 'tg-1']);
    const created = await call(base, 'POST', '/api/groups', { body: { title: 'Market team', participants: ['analyst', 'writer'], id: 'market' } });
    expect(created.status).toBe(201);
    expect(created.json.group).toMatchObject({ id: 'market', title: 'Market team', channel: 'web', participants: ['analyst', 'writer'] });
    const got = await call(base, 'GET', '/api/groups/market');
    expect(got.json.group.members.map((m: any) => m.agentId)).toEqual(['analyst', 'writer']);
    const del = await call(base, 'DELETE', '/api/groups/market');
    expect(del.status).toBe(200);
    expect((await call(base, 'GET', '/api/groups/market')).json.group.archived).toBe(true);
  });

  it('rejects bad group input with 4xx JSON', async () => {
    const { base } = await setup();
    expectError(await call(base, 'POST', '/api/groups', { raw: '{"title": "x",' }), 400, 'bad_json');
    expectError(await call(base, 'POST', '/api/groups', { raw: '' }), 400, 'bad_json');
    expectError(await call(base, 'POST', '/api/groups', { raw: '[1,2]' }), 400, 'bad_json');
    expectError(await call(base, 'POST', '/api/groups', { raw: 'null' }), 400, 'bad_json');
    expectError(await call(base, 'POST', '/api/groups', { raw: '{"title":"x","participants":["writer"]}', type: 'text/plain' }), 415);
    expectError(await call(base, 'POST', '/api/groups', { body: { title: 5, participants: ['writer'] } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups', { body: { title: '  ', participants: ['writer'] } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups', { body: { title: 'x', participants: 'writer' } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups', { body: { title: 'x', participants: [1] } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups', { body: { title: 'x', participants: [] } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups', { body: { title: 'x', participants: ['writer'], id: 'Bad Id!' } }), 400, 'invalid_field');
    const unknown = await call(base, 'POST', '/api/groups', { body: { title: 'x', participants: ['ghost'] } });
    expectError(unknown, 400, 'unknown_agent');
    expect(unknown.json.error.message).toContain('known: analyst, writer, critic');
    expectError(await call(base, 'POST', '/api/groups', { body: { title: 'Lobby', participants: ['writer'], id: 'lobby' } }), 409);
    const big = await call(base, 'POST', '/api/groups', { body: { title: 'x', participants: ['writer'], pad: 'a'.repeat(70_000) } });
    expectError(big, 413, 'payload_too_large');
    expectError(await call(base, 'GET', '/api/groups/ghost'), 404, 'unknown_group');
    expectError(await call(base, 'DELETE', '/api/groups/ghost'), 404, 'unknown_group');
  });

  it('patches config and reports invalid values from the gateway', async () => {
    const { base } = await setup();
    const ok = await call(base, 'PATCH', '/api/groups/lobby/config', { body: { reply_strategy: 'mention_only', max_depth: 1 } });
    expect(ok.status).toBe(200);
    expect(ok.json.config).toMatchObject({ reply_strategy: 'mention_only', max_depth: 1 });
    const bad = await call(base, 'PATCH', '/api/groups/lobby/config', { body: { reply_strategy: 'loud' } });
    expectError(bad, 400, 'invalid_config');
    expect(bad.json.error.message).toContain('hybrid');
    expectError(await call(base, 'PATCH', '/api/groups/lobby/config', { body: { nope: 1 } }), 400);
    expectError(await call(base, 'PATCH', '/api/groups/lobby/config', { body: {} }), 400);
    expectError(await call(base, 'PATCH', '/api/groups/lobby/config', { raw: 'max_depth=1' }), 400, 'bad_json');
    expectError(await call(base, 'PATCH', '/api/groups/ghost/config', { body: { max_depth: 1 } }), 404);
  });

  it('adds and removes members', async () => {
    const { base } = await setup();
    const created = await call(base, 'POST', '/api/groups', { body: { title: 'Duo', participants: ['analyst'], id: 'duo' } });
    expect(created.status).toBe(201);
    const add = await call(base, 'POST', '/api/groups/duo/members', { body: { agent: 'critic' } });
    expect(add.status).toBe(200);
    expect(add.json.group.participants).toEqual(['analyst', 'critic']);
    expectError(await call(base, 'POST', '/api/groups/duo/members', { body: { agent: 'critic' } }), 409);
    expectError(await call(base, 'POST', '/api/groups/duo/members', { body: { agent: 'ghost' } }), 400, 'unknown_agent');
    expectError(await call(base, 'POST', '/api/groups/duo/members', { body: { agent: ['critic'] } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups/duo/members', { body: {} }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups/ghost/members', { body: { agent: 'critic' } }), 404);
    const rm = await call(base, 'DELETE', '/api/groups/duo/members/critic');
    expect(rm.json.group.participants).toEqual(['analyst']);
    expectError(await call(base, 'DELETE', '/api/groups/duo/members/critic'), 404);
    expectError(await call(base, 'DELETE', '/api/groups/ghost/members/critic'), 404);
  });
});

describe('web API: messages', () => {
  it('pages the transcript and validates before/limit', async () => {
    const { base, gw } = await setup();
    for (let i = 1; i <= 7; i++) gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: `m${i}` });
    const newest = await call(base, 'GET', '/api/groups/lobby/messages?limit=3');
    expect(newest.json.messages.map((e: any) => e.text)).toEqual(['m5', 'm6', 'm7']);
    expect(newest.json.hasMore).toBe(true);
    const older = await call(base, 'GET', '/api/groups/lobby/messages?limit=3&before=5');
    expect(older.json.messages.map((e: any) => e.seq)).toEqual([2, 3, 4]);
    const oldest = await call(base, 'GET', '/api/groups/lobby/messages?limit=3&before=2');
    expect(oldest.json).toMatchObject({ hasMore: false });
    expect(oldest.json.messages.map((e: any) => e.seq)).toEqual([1]);
    expect((await call(base, 'GET', '/api/groups/lobby/messages')).json.messages).toHaveLength(7);
    for (const q of ['limit=abc', 'limit=0', 'limit=501', 'limit=-1', 'before=x', 'before=1.5', 'limit=1e3']) {
      expectError(await call(base, 'GET', `/api/groups/lobby/messages?${q}`), 400, 'invalid_query');
    }
    expectError(await call(base, 'GET', '/api/groups/ghost/messages'), 404);
  });

  it('hands a posted message to the router and answers 202 once recorded', async () => {
    const { base, gw } = await setup();
    const r = await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: '@writer hi', author_name: 'Maya' } });
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({ status: 'recorded', groupId: 'lobby' });
    expect(r.json.entryId).toBe('lobby.1');
    const msg = gw.received[0]!;
    expect(msg).toMatchObject({ channel: 'web', chatId: 'lobby', text: '@writer hi', author: { id: 'Maya', name: 'Maya' } });
    expect(msg.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof msg.ts).toBe('number');
    const anon = await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'hello' } });
    expect(anon.status).toBe(202);
    expect(gw.received[1]!.author.name).toBe('Guest');
    const cmd = await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: '/group list' } });
    expect(cmd.status).toBe(202);
    expect(cmd.json.status).toBe('command');
  });

  it('uses client_id for idempotent retries and reply_to for addressing', async () => {
    const { base, gw } = await setup();
    const first = await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'once', client_id: 'c-1' } });
    const again = await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'once', client_id: 'c-1' } });
    expect(first.json.status).toBe('recorded');
    expect(again.status).toBe(202);
    expect(again.json.status).toBe('duplicate');
    expect(await gw.messages('lobby', { limit: 50 })).toHaveLength(1);
    const reply = gw.append('lobby', { kind: 'agent', authorId: 'writer', authorName: 'Writer', agentId: 'writer', text: 'hi' });
    await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'more please', reply_to: reply.id } });
    expect(gw.received.at(-1)!.replyToAgentId).toBe('writer');
    expectError(await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'x', reply_to: 'nope' } }), 400, 'unknown_entry');
    expectError(await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'x', client_id: 'has space' } }), 400);
  });

  it('rejects bad messages with 4xx JSON', async () => {
    const { base, gw } = await setup();
    const post = (body: unknown) => call(base, 'POST', '/api/groups/lobby/messages', { body });
    expectError(await post({}), 400, 'invalid_field');
    expectError(await post({ text: '' }), 400, 'invalid_field');
    expectError(await post({ text: '   ' }), 400, 'invalid_field');
    expectError(await post({ text: 42 }), 400, 'invalid_field');
    expectError(await post({ text: 'x', author_name: { a: 1 } }), 400, 'invalid_field');
    expectError(await post({ text: 'x', author_name: 'n'.repeat(65) }), 400, 'invalid_field');
    expectError(await post({ text: 'x'.repeat(16001) }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/groups/lobby/messages', { raw: '{text:1}' }), 400, 'bad_json');
    expectError(await call(base, 'POST', '/api/groups/lobby/messages', { raw: 'text=hi', type: 'application/x-www-form-urlencoded' }), 415);
    expectError(await call(base, 'POST', '/api/groups/ghost/messages', { body: { text: 'x' } }), 404, 'unknown_group');
    expectError(await call(base, 'POST', '/api/groups/tg-1/messages', { body: { text: 'x' } }), 403, 'read_only');
    gw.nextResult = { status: 'rejected', code: 'rate_limited', reason: '⚠ Maya, you are sending messages faster than 20 a minute; please wait a moment.' };
    expectError(await post({ text: 'fast' }), 429, 'rate_limited');
    gw.nextResult = { status: 'rejected', code: 'too_long', reason: 'message too long' };
    expectError(await post({ text: 'long' }), 422, 'too_long');
    gw.nextResult = { status: 'rejected', code: 'empty', reason: 'message is empty' };
    expectError(await post({ text: 'other' }), 422, 'empty');
    gw.nextResult = { status: 'rejected', code: 'shutting_down', reason: 'shutting down' };
    const down = await post({ text: 'bye' });
    expectError(down, 503, 'unavailable');
    expect(down.headers.get('retry-after')).toBe('5');
    await call(base, 'DELETE', '/api/groups/lobby');
    expectError(await post({ text: 'late' }), 409, 'archived');
    expect(gw.received.map((m) => m.text)).toEqual(['fast', 'long', 'other', 'bye']);
  });

  it('never answers garbage with a 5xx', async () => {
    const { base } = await setup();
    const paths = ['/api/groups/lobby/messages', '/api/groups', '/api/groups/lobby/config', '/api/groups/lobby/members', '/api/agents', '/api/groups/%00/members/%2F'];
    const bodies = ['{', '"str"', '123', '{"text":null}', '{"title":[],"participants":{}}', '\u0000\u0001', '{"agent":"' + 'a'.repeat(500) + '"}'];
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS']) {
      for (const p of paths) {
        for (const raw of method === 'GET' || method === 'DELETE' ? [undefined] : bodies) {
          const r = await call(base, method, p, raw === undefined ? {} : { raw });
          expect(r.status, `${method} ${p} ${raw}`).toBeLessThan(500);
          if (r.status >= 400) expect(r.json?.error?.code, `${method} ${p}`).toBeTruthy();
        }
      }
    }
    expect((await call(base, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('web API: auth', () => {
  it('needs the bearer token on every API call, not on /healthz or the page', async () => {
    const { base } = await setup({ token: 's3cret-token' });
    expect((await call(base, 'GET', '/healthz')).status).toBe(200);
    expect((await call(base, 'GET', '/')).status).toBe(200);
    const missing = await call(base, 'GET', '/api/groups');
    expectError(missing, 401, 'unauthorized');
    expect(missing.headers.get('www-authenticate')).toContain('Bearer');
    expectError(await call(base, 'GET', '/api/groups', { headers: { authorization: 'Bearer wrong' } }), 401, 'unauthorized');
    expectError(await call(base, 'GET', '/api/groups', { headers: { authorization: 'Basic czNjcmV0' } }), 401);
    expectError(await call(base, 'GET', '/api/nope'), 401);
    expectError(await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'x' } }), 401);
    expectError(await call(base, 'GET', '/metrics'), 401);
    // ?token= is only for SSE (EventSource cannot send headers).
    expectError(await call(base, 'GET', '/api/groups?token=s3cret-token'), 401);
    const ok = await call(base, 'GET', '/api/groups', { headers: { authorization: 'Bearer s3cret-token' } });
    expect(ok.status).toBe(200);
    expect((await call(base, 'GET', '/metrics', { headers: { authorization: 'Bearer s3cret-token' } })).status).toBe(200);
  });

  it('accepts ?token= on SSE routes only, and refuses a wrong one', async () => {
    const { base } = await setup({ token: 's3cret-token' });
    const denied = await openSse(`${base}/api/groups/lobby/events`);
    streams.push(denied);
    expect(denied.status).toBe(401);
    const wrong = await openSse(`${base}/api/events?token=nope`);
    streams.push(wrong);
    expect(wrong.status).toBe(401);
    const ok = await openSse(`${base}/api/groups/lobby/events?token=s3cret-token`);
    streams.push(ok);
    expect(ok.status).toBe(200);
    expect(ok.headers['content-type']).toMatch(/text\/event-stream/);
  });

  it('without a token, answers only requests addressed to a loopback name (no DNS rebinding)', async () => {
    const { base } = await setup();
    const port = Number(new URL(base).port);
    const get = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/api/groups', headers: { host } }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    const evil = await get('evil.example:' + port);
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body).error.code).toBe('bad_host');
    expect((await get(`localhost:${port}`)).status).toBe(200);
    expect((await get(`127.0.0.1:${port}`)).status).toBe(200);
    expect((await get(`[::1]:${port}`)).status).toBe(200);
    // With a token, any name is fine (the token protects it).
    const withToken = await setup({ token: 't0ken' });
    const p2 = Number(new URL(withToken.base).port);
    const res = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: p2, path: '/api/groups', headers: { host: 'chorus.example', authorization: 'Bearer t0ken' } }, (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(res).toBe(200);
  });

  it('refuses a non-loopback host without a token', async () => {
    const web = new WebChannel({ config: { enabled: true, host: '0.0.0.0', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS });
    await expect(web.start(new FakeGateway())).rejects.toThrow(/refusing to listen on 0\.0\.0\.0 without channels\.web\.auth_token/);
    expect(web.url).toBeUndefined();
  });

  it('reports a busy port clearly', async () => {
    const { web } = await setup();
    const port = Number(new URL(web.url!).port);
    const other = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS });
    await expect(other.start(new FakeGateway())).rejects.toThrow(/already in use/);
  });
});

describe('web API: SSE', () => {
  it('streams group events with seq ids and heartbeats', async () => {
    const { base, gw } = await setup();
    const s = await openSse(`${base}/api/groups/lobby/events`);
    streams.push(s);
    expect(s.status).toBe(200);
    await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: '@writer hi' } });
    gw.emit({ type: 'typing', groupId: 'lobby', agentId: 'writer', active: true });
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't1', text: 'Hel' });
    gw.append('lobby', { kind: 'agent', authorId: 'writer', authorName: 'Writer', agentId: 'writer', text: 'Hello' });
    gw.append('lobby', { kind: 'decision', authorId: 'critic', authorName: 'Critic', text: '', decision: { type: 'pass', agentId: 'critic' } });
    gw.emit({ type: 'typing', groupId: 'lobby', agentId: 'writer', active: false });
    gw.emit({ type: 'config', groupId: 'lobby', config: gw.getGroup('lobby')!.config });
    gw.emit({ type: 'member', groupId: 'lobby', participants: ['writer'], removed: 'analyst' });
    gw.append('tg-1', { kind: 'human', authorId: 'tg:1', authorName: 'Bob', text: 'elsewhere' });
    const events = await s.waitFor((ev) => ev.some((e) => e.event === 'member'));
    expect(events.map((e) => [e.event, e.id ?? null])).toEqual([
      ['message', '1'],
      ['typing', null],
      ['delta', null],
      ['message', '2'],
      ['decision', '3'],
      ['typing', null],
      ['config', null],
      ['member', null],
    ]);
    expect(events[0]!.data.entry.text).toBe('@writer hi');
    await s.waitFor(() => s.comments.includes('ping'));
  });

  it('resumes after Last-Event-ID (or ?after=) without duplicates or gaps', async () => {
    const { base, gw } = await setup();
    for (let i = 1; i <= 5; i++) gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: `m${i}` });
    const s = await openSse(`${base}/api/groups/lobby/events`, { 'last-event-id': '2' });
    streams.push(s);
    await s.waitFor((ev) => ev.length >= 3);
    gw.append('lobby', { kind: 'agent', authorId: 'writer', authorName: 'Writer', agentId: 'writer', text: 'm6' });
    await s.waitFor((ev) => ev.length >= 4);
    await new Promise((r) => setTimeout(r, 100));
    expect(s.events.map((e) => e.id)).toEqual(['3', '4', '5', '6']);
    expect(s.events.map((e) => e.data.entry.text)).toEqual(['m3', 'm4', 'm5', 'm6']);

    const q = await openSse(`${base}/api/groups/lobby/events?after=4`);
    streams.push(q);
    await q.waitFor((ev) => ev.length >= 2);
    expect(q.events.map((e) => e.id)).toEqual(['5', '6']);
    // The header wins over ?after= (a browser reconnecting keeps the original URL).
    const both = await openSse(`${base}/api/groups/lobby/events?after=1`, { 'last-event-id': '5' });
    streams.push(both);
    await both.waitFor((ev) => ev.length >= 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(both.events.map((e) => e.id)).toEqual(['6']);
    const current = await openSse(`${base}/api/groups/lobby/events`, { 'last-event-id': '6' });
    streams.push(current);
    await new Promise((r) => setTimeout(r, 50));
    expect(current.events).toEqual([]);
  });

  it('an entry already replayed is not sent again when its live event comes late', async () => {
    const { base, gw } = await setup();
    gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: 'seen' });
    // Recorded (visible to the replay) but its event is emitted only after the client connected.
    const late = gw.record('lobby', { kind: 'agent', authorId: 'writer', authorName: 'Writer', agentId: 'writer', text: 'late' });
    const s = await openSse(`${base}/api/groups/lobby/events`, { 'last-event-id': '1' });
    streams.push(s);
    await s.waitFor((ev) => ev.length >= 1);
    gw.emitEntry('lobby', late);
    gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: 'next' });
    await s.waitFor((ev) => ev.length >= 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(s.events.map((e) => [e.id, e.data.entry.text])).toEqual([
      ['2', 'late'],
      ['3', 'next'],
    ]);
  });

  it('replays entries older than one page', async () => {
    const { base, gw } = await setup();
    for (let i = 1; i <= 450; i++) gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: `m${i}` });
    const s = await openSse(`${base}/api/groups/lobby/events?after=10`);
    streams.push(s);
    await s.waitFor((ev) => ev.length >= 440);
    expect(s.events.map((e) => Number(e.id))).toEqual(Array.from({ length: 440 }, (_, i) => i + 11));
  });

  it('rejects a bad resume point and an unknown group', async () => {
    const { base } = await setup();
    const bad = await openSse(`${base}/api/groups/lobby/events`, { 'last-event-id': 'abc' });
    streams.push(bad);
    expect(bad.status).toBe(400);
    const badAfter = await openSse(`${base}/api/groups/lobby/events?after=-3`);
    streams.push(badAfter);
    expect(badAfter.status).toBe(400);
    const ghost = await openSse(`${base}/api/groups/ghost/events`);
    streams.push(ghost);
    expect(ghost.status).toBe(404);
  });

  it('the global stream carries every group except deltas', async () => {
    const { base, gw } = await setup();
    const s = await openSse(`${base}/api/events`);
    streams.push(s);
    gw.append('tg-1', { kind: 'human', authorId: 'tg:1', authorName: 'Bob', text: 'from telegram' });
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't', text: 'x' });
    await call(base, 'POST', '/api/groups', { body: { title: 'New', participants: ['writer'], id: 'new' } });
    const ev = await s.waitFor((e) => e.some((x) => x.event === 'group'));
    expect(ev.map((e) => e.event)).toEqual(['message', 'group']);
    expect(ev[0]!.data).toMatchObject({ groupId: 'tg-1', entry: { text: 'from telegram' } });
  });

  it('a disconnected client leaves no listener on the gateway', async () => {
    const { base, gw, web } = await setup();
    // The channel's own listener: it keeps the replies in flight for pages that connect mid-reply.
    expect(gw.subscriberCount).toBe(1);
    const a = await openSse(`${base}/api/groups/lobby/events`);
    const b = await openSse(`${base}/api/events`);
    await a.waitFor(() => gw.subscriberCount === 2);
    expect(web.sseClientCount).toBe(2);
    a.close();
    await b.waitFor(() => web.sseClientCount === 1);
    expect(gw.subscriberCount).toBe(2);
    b.close();
    const deadline = Date.now() + 5000;
    while (gw.subscriberCount > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(gw.subscriberCount).toBe(1);
    expect(web.sseClientCount).toBe(0);
    // Events after everyone left go nowhere and break nothing.
    gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: 'alone' });
    expect((await call(base, 'GET', '/healthz')).status).toBe(200);
  });

  it('stop() ends open streams, frees the port and is idempotent', async () => {
    const { base, gw, web } = await setup();
    const s = await openSse(`${base}/api/groups/lobby/events`);
    await web.stop();
    await s.ended;
    expect(gw.subscriberCount).toBe(0);
    await web.stop();
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    await web.start(gw);
    expect((await call(web.url!, 'GET', '/healthz')).status).toBe(200);
  });

  it('disconnectStreams() ends streams so clients reconnect and resume', async () => {
    const { base, gw, web } = await setup();
    const s = await openSse(`${base}/api/groups/lobby/events`);
    gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: 'one' });
    await s.waitFor((e) => e.length === 1);
    web.disconnectStreams();
    await s.ended;
    gw.append('lobby', { kind: 'human', authorId: 'web:a', authorName: 'A', text: 'two' });
    const again = await openSse(`${base}/api/groups/lobby/events`, { 'last-event-id': s.events.at(-1)!.id! });
    streams.push(again);
    await again.waitFor((e) => e.length === 1);
    expect(again.events[0]!.data.entry.text).toBe('two');
  });
});

describe('static files', () => {
  it('are found from the source tree and from a compiled dist/', () => {
    const root = process.cwd();
    const fromSrc = findPublicDir(pathToFileURL(join(root, 'src/channels/web/static.ts')).href);
    const fromDist = findPublicDir(pathToFileURL(join(root, 'dist/src/channels/web/static.js')).href);
    const expected = join(root, 'src/channels/web/public');
    expect(fromSrc).toBe(expected);
    expect(fromDist).toBe(expected);
    for (const f of ['index.html', 'app.js', 'app.css']) expect(existsSync(join(expected, f))).toBe(true);
  });

  it('the page uses no inline script, no CDN and no innerHTML', () => {
    const dir = join(process.cwd(), 'src/channels/web/public');
    for (const name of readdirSync(dir)) {
      const text = readFileSync(join(dir, name), 'utf8');
      expect(text, name).not.toMatch(/\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|\beval\(|new Function/);
      expect(text, name).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
      if (name.endsWith('.html')) expect(text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });
});

describe('web channel port', () => {
  it('posts return ids per chunk, typing is a no-op, the token holder is admin', async () => {
    const { web } = await setup();
    const chat = { channel: 'web' as const, chatId: 'lobby' };
    const one = await web.postAsAgent(chat, TEST_AGENTS[0]!, 'hello');
    expect(one.ids).toHaveLength(1);
    const two = await web.postAsSystem(chat, ('x'.repeat(100) + '\n').repeat(200));
    expect(two.ids.length).toBeGreaterThan(1);
    expect(new Set([...one.ids, ...two.ids]).size).toBe(one.ids.length + two.ids.length);
    const stopTyping = web.startTyping();
    expect(() => stopTyping()).not.toThrow();
    expect(await web.isAdmin()).toBe(true);
    expect(web.warnings()).toEqual([]);
    expect(web.kind).toBe('web');
  });
});
