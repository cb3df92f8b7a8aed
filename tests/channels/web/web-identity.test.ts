/**
 * Who a web client is: the per-person rate limit counts per client
 * (its address), not per self-declared `author_name`; names are cleaned and length-limited; a
 * person cannot post under an agent's name, id or alias, however it is dressed up; and each
 * message records which browser sent it (a tag of the browser's own key), so a page can tell its
 * own messages from other people's.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { WebChannel } from '../../../src/channels/web/WebChannel.js';
import { parseConfigText } from '../../../src/config/load.js';
import { HELP_TEXT } from '../../../src/core/commands/commands.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryStore } from '../../helpers/memory-store.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';

const apps: App[] = [];
const channels: WebChannel[] = [];

afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
  for (const w of channels.splice(0)) await w.stop();
});

interface Reply {
  status: number;
  json: any;
}

/** POST JSON with node:http, optionally from another loopback address (another client). */
function post(base: string, path: string, body: unknown, localAddress?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const data = JSON.stringify(body);
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), host: url.host }, ...(localAddress ? { localAddress } : {}) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function realApp(perMinute: number): Promise<App> {
  const { config } = parseConfigText(
    `llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", aliases: [numbers] }
  - { id: writer, name: Writer, persona: "You are Writer." }
limits: { user_messages_per_minute: ${perMinute} }
group_defaults: { reply_strategy: mention_only }
channels: { web: { port: 0 } }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer] }
`,
    'identity',
  );
  const app = await createApp({ config, llm: new FakeLlm(), logger: silentLogger, store: new MemoryStore() });
  apps.push(app);
  await app.start();
  return app;
}

describe('the web rate limit counts per client, not per typed name', () => {
  it('changing author_name 40 times does not get past 20 a minute; another client keeps its own budget', async () => {
    const app = await realApp(20);
    const base = app.webUrl!;
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await post(base, '/api/groups/lobby/messages', { text: `hello ${i}`, author_name: `Maya ${i}` })).status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    // Same client, original name: still limited.
    expect((await post(base, '/api/groups/lobby/messages', { text: 'once more', author_name: 'Maya' })).status).toBe(429);

    // A second client (another loopback address) is not throttled by the first one.
    const other = await post(base, '/api/groups/lobby/messages', { text: 'from the other machine', author_name: 'Maya 0' }, '127.0.0.2');
    expect(other.status).toBe(202);

    const humans = (await app.gateway.messages('lobby', { limit: 500 })).filter((e) => e.kind === 'human');
    expect(humans).toHaveLength(21);
  });
});

describe('names on the web', () => {
  async function fakeWeb(): Promise<{ base: string; gw: FakeGateway }> {
    const gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer', 'critic'] });
    const web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS });
    channels.push(web);
    await web.start(gw);
    return { base: web.url!, gw };
  }

  it('refuses a name that reads as an agent, in any disguise, and records nothing', async () => {
    const { base, gw } = await fakeWeb();
    const disguises = [
      'Analyst',
      'analyst',
      ' ANALYST ',
      'Analyst (bot)',
      'Analyst [AI]',
      'The Analyst',
      'ＡＮＡＬＹＳＴ', // full-width
      'Аnalyst', // Cyrillic А
      'Anаlyst', // Cyrillic а inside
      'An\u200Balyst', // zero-width space
      'Ana\u00ADlyst', // soft hyphen
      '\u2066Analyst\u2069', // bidi isolate
      '@analyst',
      'numbers', // Analyst's alias
      'Critic 🤖',
      'W r i t e r',
    ];
    for (const name of disguises) {
      const r = await post(base, '/api/groups/lobby/messages', { text: 'As the analyst I now recommend selling everything', author_name: name });
      expect(r.status, name).toBe(400);
      expect(r.json.error.code, name).toBe('reserved_name');
      expect(r.json.error.message, name).toMatch(/agent (Analyst|Critic|Writer) \(@(analyst|critic|writer)\)/);
    }
    expect(gw.received).toHaveLength(0);
    // Names that merely contain an agent's name, or none, are fine.
    for (const name of ['Maya', 'Analyst Jones', 'Ana']) {
      expect((await post(base, '/api/groups/lobby/messages', { text: 'hi', author_name: name })).status, name).toBe(202);
    }
  });

  it('strips bidi and invisible characters, keeps a name on one line and at most 64 characters', async () => {
    const { base, gw } = await fakeWeb();
    // An RTL override that would render "tsylanA" as "Analyst" arrives as what it is.
    expect((await post(base, '/api/groups/lobby/messages', { text: 'a', author_name: '\u202Etsylan\u202CA' })).status).toBe(202);
    expect(gw.received.at(-1)!.author.name).toBe('tsylanA');
    expect((await post(base, '/api/groups/lobby/messages', { text: 'b', author_name: 'Ma\u200Bya\u200E\u2066\uFEFF' })).status).toBe(202);
    expect(gw.received.at(-1)!.author.name).toBe('Maya');
    expect((await post(base, '/api/groups/lobby/messages', { text: 'c', author_name: 'Maya\nRoe\t(ops)' })).status).toBe(202);
    expect(gw.received.at(-1)!.author.name).toBe('Maya Roe (ops)');
    // 64 visible characters padded with invisible ones: accepted, cleaned to the 64.
    const long = 'm'.repeat(64);
    expect((await post(base, '/api/groups/lobby/messages', { text: 'd', author_name: long + '\u200B'.repeat(100) })).status).toBe(202);
    expect(gw.received.at(-1)!.author.name).toBe(long);
    // 65 visible characters: refused, named.
    const tooLong = await post(base, '/api/groups/lobby/messages', { text: 'e', author_name: 'm'.repeat(65) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error.message).toContain('at most 64 characters');
    // Nothing visible left: the default name, one that does not read as every reader ("You").
    expect((await post(base, '/api/groups/lobby/messages', { text: 'f', author_name: '\u200B\u202E' })).status).toBe(202);
    expect(gw.received.at(-1)!.author.name).toBe('Guest');
    for (const m of gw.received) expect(m.author.name).not.toMatch(/[\u200B-\u200F\u202A-\u202E\u2066-\u2069\u061C\uFEFF\n\t]/);
  });
});

describe('which browser sent a message', () => {
  const KEY_A = 'a-browser-key-0123456789';
  const KEY_B = 'b-browser-key-9876543210';

  function send(base: string, path: string, opts: { key?: string; body?: unknown; method?: string } = {}): Promise<Reply> {
    const headers: Record<string, string> = {};
    if (opts.key !== undefined) headers['x-chorus-client'] = opts.key;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    return fetch(new URL(path, base), { method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'), headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
      .then(async (r) => ({ status: r.status, json: await r.json() }));
  }

  it('records a tag of the browser key on each message, tells a page its own tag, and never shows the key', async () => {
    const app = await realApp(1000);
    const base = app.webUrl!;
    const infoA = await send(base, '/api/info', { key: KEY_A });
    const infoB = await send(base, '/api/info', { key: KEY_B });
    expect(infoA.status).toBe(200);
    expect(infoA.json.client).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(infoB.json.client).not.toBe(infoA.json.client);
    expect(infoA.json.client).not.toContain(KEY_A);
    expect((await send(base, '/api/info')).json.client).toBeNull();

    // Both call themselves Maya; the browsers still differ.
    expect((await send(base, '/api/groups/lobby/messages', { key: KEY_A, body: { text: 'from A', author_name: 'Maya' } })).status).toBe(202);
    expect((await send(base, '/api/groups/lobby/messages', { key: KEY_B, body: { text: 'from B', author_name: 'Maya' } })).status).toBe(202);
    expect((await send(base, '/api/groups/lobby/messages', { body: { text: 'from a script', author_name: 'Maya' } })).status).toBe(202);
    const page = await send(base, '/api/groups/lobby/messages');
    const byText = new Map<string, any>(page.json.messages.map((e: any) => [e.text, e]));
    expect(byText.get('from A').clientTag).toBe(infoA.json.client);
    expect(byText.get('from B').clientTag).toBe(infoB.json.client);
    expect(byText.get('from a script').clientTag).toBeUndefined();
    expect(JSON.stringify(page.json)).not.toContain(KEY_A);

    // A key of the wrong shape is refused, and nothing is recorded.
    for (const bad of ['short', 'has spaces in it here', 'x'.repeat(129), 'ünïcödé-key-0123456789']) {
      const r = await send(base, '/api/groups/lobby/messages', { key: bad, body: { text: 'nope', author_name: 'Maya' } });
      expect(r.status, bad).toBe(400);
      expect(r.json.error.code).toBe('invalid_header');
    }
    expect((await app.gateway.messages('lobby', { limit: 50 })).some((e) => e.text === 'nope')).toBe(false);
  });

  it('names a Stop without a name "someone", never "You"', async () => {
    const app = await realApp(1000);
    const r = await send(app.webUrl!, '/api/groups/lobby/stop', { key: KEY_A, method: 'POST' });
    expect(r.status).toBe(200);
    const notice = (await app.gateway.messages('lobby', { limit: 10 })).find((e) => e.decision?.type === 'stopped');
    expect(notice?.text).toContain('Stopped by someone');
  });

  it('lists the commands `/` completes to, each one the help text names', async () => {
    const app = await realApp(1000);
    const { json } = await send(app.webUrl!, '/api/agents');
    const commands: { command: string; args: string; summary: string }[] = json.commands;
    expect(commands.map((c) => c.command)).toEqual(expect.arrayContaining(['/help', '/ask', '/stop', '/group list', '/group config', '/group mute']));
    for (const c of commands) {
      expect(c.summary.length, c.command).toBeGreaterThan(0);
      if (c.command === '/help') continue; // the one that prints the help text
      const [word, sub] = c.command.split(' ');
      expect(HELP_TEXT, c.command).toContain(sub ? `${word} ${sub}` : word);
    }
  });
});
