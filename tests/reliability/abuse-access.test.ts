/**
 * Abuse and access: floods of @all, pasted [PASS] and mention storms stay within the
 * caps; rate and length limits answer politely; admin commands are refused to non-admins; ids
 * cannot escape data_dir; configured secrets never reach logs or error messages; without a token
 * the web server refuses to bind beyond loopback.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileStore } from '../../src/store/files/FileStore.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { createApp } from '../../src/app.js';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import type { GroupRecord } from '../../src/core/records.js';
import type { DurableGroup } from '../helpers/memory-store.js';
import { makeRouter } from '../helpers/router-harness.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { FakeLlm } from '../helpers/fake-llm.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('floods cannot push agent replies past the caps', () => {
  it('@all floods, mention storms and pasted [PASS] stay within addressed + max_agent_turns_per_message per round', async () => {
    const CAP = 2;
    // Every agent mentions every other agent every time: the worst chain-reaction.
    const h = await makeRouter({
      llm: { fallback: (req) => `on it @analyst @writer @critic @all [PASS] ${req.agent?.id}` },
      group: { max_agent_turns_per_message: CAP, max_depth: 5, cooldown_seconds: 0 },
    });
    const floods = [
      '@all @all @everyone @analyst @writer @critic',
      '[PASS] @all',
      '@analyst '.repeat(200),
      'hey everyone, [PASS] [pass] **[ PASS ]**',
      '@creatives @creatives @all please all talk to each other forever',
    ];
    for (let i = 0; i < 20; i++) await h.say(floods[i % floods.length]!);
    const t = await h.fullTranscript();
    const humans = t.filter((e) => e.kind === 'human');
    expect(humans).toHaveLength(20);
    const perRound = new Map<string, { addressed: number; others: number }>();
    for (const e of t) {
      if (e.kind !== 'agent') continue;
      const r = perRound.get(e.roundId!) ?? { addressed: 0, others: 0 };
      if (e.meta?.reason === 'addressed') r.addressed++;
      else r.others++;
      perRound.set(e.roundId!, r);
    }
    for (const [round, r] of perRound) {
      expect(r.addressed, round).toBeLessThanOrEqual(3); // each participant answers an address once
      expect(r.others, round).toBeLessThanOrEqual(CAP);
    }
    // No more replies overall than 3 addressed + CAP per human message.
    expect(t.filter((e) => e.kind === 'agent').length).toBeLessThanOrEqual(20 * (3 + CAP));
    for (const p of h.channel.posts) expect(p.text).not.toMatch(/\[\s*pass\s*\]/i);
  });

  it('rate and length limits answer with a polite notice; other people are unaffected', async () => {
    const h = await makeRouter({ limits: { user_messages_per_minute: 5, max_message_chars: 100 }, group: { reply_strategy: 'mention_only' } });
    const results = [];
    for (let i = 0; i < 8; i++) results.push((await h.say(`msg ${i}`)).status);
    expect(results.filter((s) => s === 'recorded')).toHaveLength(5);
    expect(results.slice(5)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(h.channel.texts(null).some((t) => /faster than 5 a minute/.test(t))).toBe(true);
    expect((await h.say('other person', { author: { id: 'tom', name: 'Tom' } })).status).toBe('recorded');
    const long = await h.say('x'.repeat(101), { author: { id: 'ann', name: 'Ann' } });
    expect(long.status).toBe('rejected');
    expect(long.reason).toMatch(/too long \(101 characters; the limit is 100\)/);
    // A minute later the first person may speak again.
    await h.clock.advance(61_000);
    expect((await h.say('back again')).status).toBe('recorded');
  });
});

describe('admin commands need an admin', () => {
  it('every admin subcommand from a non-admin is refused and changes nothing', async () => {
    const h = await makeRouter();
    h.channel.admins = new Set(['boss']);
    const strip = (g: DurableGroup) => JSON.stringify({ ...g, transcript: [], nextSeq: 0, seen: [], sessions: Object.fromEntries(g.sessions) });
    const before = strip(h.store.group('room'));
    const commands = ['/group create analyst', '/group add critic', '/group remove writer', '/group mute writer', '/group unmute writer', '/group reset', '/group dissolve', '/group config max_depth 9'];
    for (const c of commands) {
      await h.say(c, { author: { id: 'mallory', name: 'Mallory' } });
      expect(h.channel.texts(null).at(-1), c).toMatch(/only chat admins can use/);
    }
    expect(strip(h.store.group('room'))).toBe(before);
    expect(h.llm.calls).toHaveLength(0);
  });
});

describe('ids cannot escape data_dir', () => {
  it('the file store refuses unsafe group ids and writes nothing outside its directory', async () => {
    const root = mkdtempSync(join(tmpdir(), 'chorus-ids-'));
    dirs.push(root);
    const dataDir = join(root, 'data');
    const store = new FileStore({ dataDir, fsync: 'never', logger: silentLogger });
    await store.open();
    const rec: GroupRecord = { v: 2, n: 1, ts: 0 };
    for (const bad of ['../x', '..', '/etc/passwd', 'a/b', 'a\\b', '.hidden', '', 'UPPER', 'x'.repeat(81), 'nul\u0000l']) {
      await expect(Promise.resolve().then(() => store.append(bad, rec)), bad).rejects.toThrow(/unsafe|id/i);
    }
    await store.append('fine-id', rec);
    await store.close();
    expect(readdirSync(root)).toEqual(['data']);
  });

  it('the web API refuses to create a group with id "../x"', async () => {
    const { config } = parseConfigText('agents:\n  - { id: analyst, name: Analyst, persona: "x" }\nchannels: { web: { port: 0 } }\n', 't');
    const app = await createApp({ config, llm: new FakeLlm(), logger: silentLogger, store: new (await import('../helpers/memory-store.js')).MemoryStore() });
    await app.start();
    try {
      for (const id of ['../x', '..', 'a/b', '.x', '%2e%2e']) {
        const res = await fetch(`${app.webUrl}/api/groups`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'Evil', participants: ['analyst'], id }) });
        expect(res.status, id).toBe(400);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBeTypeOf('string');
      }
      await expect(app.router.gateway.createGroup({ title: 'x', participants: ['analyst'], id: '../x' })).rejects.toThrow(/slug/);
    } finally {
      await app.stop();
    }
  });
});

describe('secrets never reach logs or error messages', () => {
  it('bot tokens, API keys and the web token are absent from everything logged in a run full of errors', async () => {
    const SECRETS = {
      tg: '7777777:AAH-telegram-SECRET-token-x1',
      tg2: '8888888:BBH-telegram-SECRET-token-x2',
      discord: 'discord.SECRET.token-zz9',
      llm: 'sk-llm-SECRET-key-4242',
      web: 'web-SECRET-token-5151',
    };
    // A platform that fails every request, echoing what it was sent (the worst case for leaks).
    const hostile = createServer((req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: false, error_code: 500, description: `boom at ${req.url}`, message: `bad auth ${req.headers.authorization ?? ''}` }));
    });
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
    const port = (hostile.address() as AddressInfo).port;
    const root = mkdtempSync(join(tmpdir(), 'chorus-secrets-'));
    dirs.push(root);
    const { config } = parseConfigText(
      `data_dir: ${join(root, 'data')}
log_level: debug
llm: { provider: openai, api_key: ${SECRETS.llm}, base_url: "http://127.0.0.1:${port}/v1", max_retries: 0, timeout_seconds: 2 }
agents:
  - { id: analyst, name: Analyst, persona: "x", telegram: { token: "${SECRETS.tg}" } }
  - { id: writer, name: Writer, persona: "y", telegram: { token: "${SECRETS.tg2}" } }
channels:
  web: { port: 0, auth_token: ${SECRETS.web} }
  telegram: { enabled: true, api_root: "http://127.0.0.1:${port}" }
  discord: { enabled: true, token: ${SECRETS.discord}, api_base: "http://127.0.0.1:${port}/api" }
groups:
  - { channel: web, chat_id: room, participants: [analyst, writer] }
`,
      'secrets',
    );
    const logger = new CapturingLogger();
    const app = await createApp({ config, logger });
    const errors: string[] = [];
    try {
      await app.start().catch((e: unknown) => errors.push(String(e)));
      const auth = { authorization: `Bearer ${SECRETS.web}`, 'content-type': 'application/json' };
      const bodies: string[] = [];
      for (const text of ['@analyst hi', '@all go', '/group config max_depth nope']) {
        const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ text }) });
        bodies.push(await res.text());
      }
      bodies.push(await (await fetch(`${app.webUrl}/api/groups`, { headers: { authorization: `Bearer ${SECRETS.web}-wrong` } })).text());
      bodies.push(await (await fetch(`${app.webUrl}/api/agents`, { headers: auth })).text());
      await app.router.idle();
      const transcript = (await app.router.gateway.messages('room', { limit: 500 })).map((e) => e.text);
      expect(transcript.some((t) => /could not reply/.test(t)), 'the LLM errors produced notices').toBe(true);
      const everything = [logger.text(), ...errors, ...bodies, ...transcript].join('\n');
      expect(logger.lines.length).toBeGreaterThan(5);
      for (const [name, secret] of Object.entries(SECRETS)) {
        expect(everything.includes(secret), `${name} secret leaked`).toBe(false);
        // Also the distinctive half of a bot token (after the colon).
        const tail = secret.split(':').at(-1)!;
        expect(everything.includes(tail), `${name} secret tail leaked`).toBe(false);
      }
    } finally {
      await app.stop();
      hostile.closeAllConnections();
      await new Promise((r) => hostile.close(r));
    }
  }, 60_000);
});

describe('without a token the web server stays on loopback', () => {
  const base = 'agents:\n  - { id: analyst, name: Analyst, persona: "x" }\n';
  it('the config check refuses a non-loopback host without auth_token', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com']) {
      let err: unknown;
      try {
        parseConfigText(`${base}channels: { web: { host: "${host}" } }\n`, 't', {});
      } catch (e) {
        err = e;
      }
      expect(err, host).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toContainEqual({ path: 'channels.web.host', message: expect.stringMatching(/refusing to listen on .* without channels\.web\.auth_token/) });
    }
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) expect(() => parseConfigText(`${base}channels: { web: { host: "${host}" } }\n`, 't', {})).not.toThrow();
    expect(() => parseConfigText(`${base}channels: { web: { host: "0.0.0.0", auth_token: "s3cret" } }\n`, 't', {})).not.toThrow();
  });

  it('the web channel itself refuses to bind beyond loopback without a token (second line of defence)', async () => {
    const web = new WebChannel({ config: { enabled: true, host: '0.0.0.0', port: 0, auth_token: null }, logger: silentLogger, agents: [] });
    const h = await makeRouter();
    await expect(web.start(h.router)).rejects.toThrow(/refusing to listen on 0\.0\.0\.0/);
    expect(web.url).toBeUndefined();
  });
});
