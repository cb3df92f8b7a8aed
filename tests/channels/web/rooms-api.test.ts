/**
 * Rooms across chats, the web's API: link codes, the web joining a room with a code, unlinking a
 * chat, and the one rule for what the page may write to — a group whose home is the web, or whose
 * room the web has joined. A Telegram group the web only follows stays read-only for every kind of
 * write (messages, files, edits, deletions, reactions, /stop, regenerate, retry, tool decisions).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../../src/channels/web/WebChannel.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';
import { openSse, type SseConnection } from './sse-client.js';

const running: WebChannel[] = [];
const streams: SseConnection[] = [];

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const w of running.splice(0)) await w.stop();
});

async function setup(token: string | null = null): Promise<{ gw: FakeGateway; base: string }> {
  const gw = new FakeGateway();
  gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
  gw.addGroup({ id: 'tg-1', title: 'Team chat', channel: 'telegram', chatId: '-100123', participants: ['analyst'] });
  const web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: token }, logger: silentLogger, agents: TEST_AGENTS, aliases: {} });
  running.push(web);
  await web.start(gw);
  return { gw, base: web.url! };
}

interface Reply {
  status: number;
  text: string;
  json: any;
}

async function call(base: string, method: string, path: string, opts: { body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  const body = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  expect(res.headers.get('content-type'), text).toMatch(/application\/json/);
  return { status: res.status, text, json };
}

function expectError(r: Reply, status: number, code: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.json?.error?.code, r.text).toBe(code);
  expect(typeof r.json?.error?.message).toBe('string');
}

/** Every kind of write the page makes to group `id`, each as its HTTP answer. */
async function writes(base: string, id: string): Promise<Record<'message' | 'upload' | 'edit' | 'delete' | 'react' | 'unreact' | 'regenerate' | 'retry' | 'stop' | 'tool', Reply>> {
  const g = `/api/groups/${id}`;
  const form = new FormData();
  form.append('text', 'with a file');
  form.append('file', new Blob([Buffer.from('hello\n')], { type: 'text/plain' }), 'a.txt');
  const upload = await fetch(base + g + '/messages', { method: 'POST', body: form });
  return {
    message: await call(base, 'POST', g + '/messages', { body: { text: 'hello', author_name: 'Maya' } }),
    upload: { status: upload.status, text: await upload.text(), json: undefined },
    edit: await call(base, 'PATCH', g + '/messages/' + id + '.1', { body: { text: 'changed' } }),
    delete: await call(base, 'DELETE', g + '/messages/' + id + '.1'),
    react: await call(base, 'POST', g + '/messages/' + id + '.1/reactions', { body: { emoji: '👍' } }),
    unreact: await call(base, 'DELETE', g + '/messages/' + id + '.1/reactions', { body: { emoji: '👍' } }),
    regenerate: await call(base, 'POST', g + '/messages/' + id + '.1/regenerate'),
    retry: await call(base, 'POST', g + '/messages/' + id + '.1/retry'),
    stop: await call(base, 'POST', g + '/stop'),
    tool: await call(base, 'POST', g + '/tools/t1', { body: { decision: 'approve' } }),
  };
}

describe('link codes', () => {
  it('POST /api/groups/:id/link-code answers 201 with a code and when it expires; 404 unknown group, 409 dissolved', async () => {
    const { gw, base } = await setup();
    const made = await call(base, 'POST', '/api/groups/lobby/link-code', { body: { author_name: 'Maya' } });
    expect(made.status, made.text).toBe(201);
    expect(made.json).toEqual({ code: expect.stringMatching(/^LINK-\d{4}$/), until: expect.any(Number) });
    expect(made.json.until).toBeGreaterThan(Date.now());
    expect(gw.linkCalls.at(-1)).toEqual({ method: 'linkCode', groupId: 'lobby', by: 'Maya' });
    // No body at all is fine too: the notice then says "someone".
    expect((await call(base, 'POST', '/api/groups/tg-1/link-code')).status).toBe(201);
    expect(gw.linkCalls.at(-1)).toEqual({ method: 'linkCode', groupId: 'tg-1', by: 'someone' });

    expectError(await call(base, 'POST', '/api/groups/ghost/link-code'), 404, 'unknown_group');
    expectError(await call(base, 'POST', '/api/groups/lobby/link-code', { raw: '{nope' }), 400, 'bad_json');
    expectError(await call(base, 'POST', '/api/groups/lobby/link-code', { body: { author_name: 'Analyst' } }), 400, 'reserved_name');
    expectError(await call(base, 'GET', '/api/groups/lobby/link-code'), 405, 'method_not_allowed');
    await gw.dissolveGroup('lobby');
    expectError(await call(base, 'POST', '/api/groups/lobby/link-code'), 409, 'archived');
  });

  it('POST /api/links joins the room of a code: 200 with the group and its web link; the code is used once', async () => {
    const { gw, base } = await setup();
    const { code } = await gw.linkCode('tg-1', 'Bob');
    const joined = await call(base, 'POST', '/api/links', { body: { code, author_name: 'Maya' } });
    expect(joined.status, joined.text).toBe(200);
    expect(joined.json.group).toMatchObject({ id: 'tg-1', channel: 'telegram', links: [{ channel: 'web', chatId: 'tg-1' }] });
    // The detail, as GET /api/groups/:id answers it (members and all).
    expect(joined.json.group.members).toHaveLength(1);
    expect(gw.linkCalls.at(-1)).toEqual({ method: 'linkWeb', code, by: 'Maya' });
    expectError(await call(base, 'POST', '/api/links', { body: { code } }), 404, 'unknown_code');
  });

  it('POST /api/links takes the code as typed around it, and refuses a missing or garbled one before asking the core', async () => {
    const { gw, base } = await setup();
    const { code } = await gw.linkCode('tg-1', 'Bob');
    expect((await call(base, 'POST', '/api/links', { body: { code: `  /group link ${code}\n` } })).status).toBe(200);
    gw.linkCalls.length = 0;
    expectError(await call(base, 'POST', '/api/links', { body: {} }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/links', { body: { code: '' } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/links', { body: { code: 42 } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/links', { body: { code: 'AB CD!' } }), 400, 'invalid_code');
    expectError(await call(base, 'POST', '/api/links', { body: { code: 'x'.repeat(201) } }), 400, 'invalid_field');
    expectError(await call(base, 'POST', '/api/links', { raw: 'code=ABCD' , headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expectError(await call(base, 'POST', '/api/links', { body: [] }), 400, 'bad_json');
    expect(gw.linkCalls).toEqual([]);
    expectError(await call(base, 'POST', '/api/links', { body: { code: 'NEVER-MADE' } }), 404, 'unknown_code');
  });

  it('DELETE /api/groups/:id/links/:channel/:chatId takes a chat out of the room', async () => {
    const { gw, base } = await setup();
    gw.link('lobby', { channel: 'discord', chatId: '998877', title: '#general' });
    gw.link('lobby', { channel: 'telegram', chatId: '-100/5', title: 'Odd id' });
    const left = await call(base, 'DELETE', '/api/groups/lobby/links/discord/998877', { body: { author_name: 'Maya' } });
    expect(left.status, left.text).toBe(200);
    expect(left.json.group.links).toEqual([expect.objectContaining({ channel: 'telegram', chatId: '-100/5' })]);
    expect(gw.linkCalls.at(-1)).toEqual({ method: 'unlinkChat', groupId: 'lobby', chat: { channel: 'discord', chatId: '998877' }, by: 'Maya' });
    // A chat id with characters a path cannot hold arrives percent-encoded.
    expect((await call(base, 'DELETE', `/api/groups/lobby/links/telegram/${encodeURIComponent('-100/5')}`)).status).toBe(200);
    expect(gw.getGroup('lobby')!.links).toBeUndefined();

    expectError(await call(base, 'DELETE', '/api/groups/lobby/links/discord/998877'), 404, 'not_linked');
    expectError(await call(base, 'DELETE', '/api/groups/lobby/links/irc/1'), 400, 'invalid_channel');
    expectError(await call(base, 'DELETE', '/api/groups/ghost/links/discord/1'), 404, 'unknown_group');
    expectError(await call(base, 'DELETE', '/api/groups/lobby/links/discord/%E0%A4%A'), 400, 'bad_path');
  });

  it('needs the token like every other call', async () => {
    const { gw, base } = await setup('s3cret-token');
    const { code } = await gw.linkCode('tg-1', 'Bob');
    gw.link('lobby', { channel: 'discord', chatId: '1' });
    gw.linkCalls.length = 0;
    expectError(await call(base, 'POST', '/api/groups/lobby/link-code'), 401, 'unauthorized');
    expectError(await call(base, 'POST', '/api/links', { body: { code } }), 401, 'unauthorized');
    expectError(await call(base, 'DELETE', '/api/groups/lobby/links/discord/1'), 401, 'unauthorized');
    expectError(await call(base, 'POST', '/api/links', { body: { code }, headers: { authorization: 'Bearer wrong' } }), 401, 'unauthorized');
    expect(gw.linkCalls).toEqual([]);
    const ok = await call(base, 'POST', '/api/links', { body: { code }, headers: { authorization: 'Bearer s3cret-token' } });
    expect(ok.status, ok.text).toBe(200);
  });
});

describe('what the page may write to', () => {
  it('a Telegram group the web only follows is read-only for every write; once linked, the web writes to it as its web chat', async () => {
    const { gw, base } = await setup();
    gw.append('tg-1', { kind: 'human', authorId: 'telegram:1', authorName: 'Bob', text: 'from telegram' });
    for (const [what, r] of Object.entries(await writes(base, 'tg-1'))) {
      expect(r.status, `${what}: ${r.text}`).toBe(403);
      expect(r.text, what).toContain('read_only');
    }
    expect(gw.received).toEqual([]);

    const { code } = await gw.linkCode('tg-1', 'Bob');
    expect((await call(base, 'POST', '/api/links', { body: { code } })).status).toBe(200);
    const after = await writes(base, 'tg-1');
    for (const [what, r] of Object.entries(after)) expect(r.status, `${what}: ${r.text}`).not.toBe(403);
    expect(after.message.status, after.message.text).toBe(202);
    expect(after.upload.status, after.upload.text).toBe(202);
    // Handed over as the web chat's message: the core finds the group through its web link.
    expect(gw.received.map((m) => [m.channel, m.chatId, m.text])).toEqual([
      ['web', 'tg-1', 'with a file'],
      ['web', 'tg-1', 'hello'],
    ]);
    expect((await gw.messages('tg-1', { limit: 10 })).map((e) => e.text)).toContain('hello');
  });

  it('unlinking the web makes the group read-only again; a web room stays writable whatever chats it links', async () => {
    const { gw, base } = await setup();
    gw.link('tg-1', { channel: 'web', chatId: 'tg-1' });
    expect((await call(base, 'POST', '/api/groups/tg-1/messages', { body: { text: 'while linked' } })).status).toBe(202);
    expect((await call(base, 'DELETE', '/api/groups/tg-1/links/web/tg-1')).status).toBe(200);
    expectError(await call(base, 'POST', '/api/groups/tg-1/messages', { body: { text: 'after' } }), 403, 'read_only');

    gw.link('lobby', { channel: 'telegram', chatId: '-1009', title: 'Family' });
    const r = await call(base, 'POST', '/api/groups/lobby/messages', { body: { text: 'still mine' } });
    expect(r.status, r.text).toBe(202);
    expect(gw.received.at(-1)).toMatchObject({ channel: 'web', chatId: 'lobby', text: 'still mine' });
  });

  it('a dissolved group refuses writes with 409 whether or not it is linked', async () => {
    const { gw, base } = await setup();
    gw.link('tg-1', { channel: 'web', chatId: 'tg-1' });
    await gw.dissolveGroup('tg-1');
    expectError(await call(base, 'POST', '/api/groups/tg-1/messages', { body: { text: 'x' } }), 409, 'archived');
    expectError(await call(base, 'POST', '/api/groups/tg-1/stop'), 409, 'archived');
  });

  it('linking and unlinking reach open pages as a group update', async () => {
    const { gw, base } = await setup();
    const s = await openSse(`${base}/api/groups/tg-1/events`);
    streams.push(s);
    const { code } = await gw.linkCode('tg-1', 'Bob');
    await call(base, 'POST', '/api/links', { body: { code } });
    const ev = await s.waitFor((e) => e.some((x) => x.event === 'group'));
    expect(ev.find((x) => x.event === 'group')!.data).toEqual({ type: 'group', groupId: 'tg-1', action: 'updated' });
  });
});
