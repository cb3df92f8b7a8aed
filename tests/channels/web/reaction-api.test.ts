/**
 * POST and DELETE /api/groups/:id/messages/:entryId/reactions against the real app (router, file
 * store, web channel, FakeLlm): a browser adds and takes back its reactions (one per emoji per
 * browser, whatever name it types), the page of messages and the live stream show them, the
 * agents read a note and no round starts; every mistake is a 4xx JSON error, the rate limit a 429
 * with Retry-After, a failed write a 503 that keeps nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { LlmRequest } from '../../../src/core/ports.js';
import type { GatewayEvent } from '../../../src/core/readModels.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';

const MINE = 'browser-key-of-maya-0001';
const OTHER = 'browser-key-of-omar-0002';

function configYaml(dataDir: string, perMinute = 1000): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { reactions_per_minute: ${perMinute} }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst] }
`;
}

const shown = (req: LlmRequest) => req.messages.map((m) => m.content).join('\n');

async function call(base: string, method: string, path: string, body?: unknown, key: string | null = MINE) {
  const headers: Record<string, string> = {};
  if (key) headers['x-chorus-client'] = key;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('web API: reactions', () => {
  let app: App;
  let base: string;
  let dataDir: string;
  const llm = new FakeLlm({ replies: { analyst: (req) => (req.mustReply ? 'Analyst here' : '[PASS]') } });
  const req = (method: string, path: string, body?: unknown, key: string | null = MINE) => call(base, method, path, body, key);
  const post = async (text: string, key = MINE) => {
    const r = await req('POST', '/api/groups/lobby/messages', { text, author_name: 'Maya' }, key);
    expect(r.status).toBeLessThan(300);
    return r.body.entryId as string;
  };
  const messages = async () => (await req('GET', '/api/groups/lobby/messages?limit=500')).body.messages as any[];
  const reactions = (id: string, method: 'POST' | 'DELETE', body: unknown, key: string | null = MINE) => req(method, `/api/groups/lobby/messages/${id}/reactions`, body, key);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-reactions-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
  });
  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a browser adds and takes back a reaction: 200 with the entry, the page and the live stream show it, the agents read a note, no round', async () => {
    const id = await post('@analyst the launch is friday');
    await expect.poll(async () => (await messages()).some((m) => m.kind === 'agent'), { timeout: 10_000 }).toBe(true);
    const reply = (await messages()).find((m) => m.kind === 'agent');
    const events: GatewayEvent[] = [];
    const off = app.gateway.subscribe((ev) => events.push(ev));
    const turns = llm.calls.length;
    const me = (await req('GET', '/api/info')).body.client as string;

    const added = await reactions(reply.id, 'POST', { emoji: '👍', author_name: 'Maya' });
    expect(added.status).toBe(200);
    expect(added.body.message).toMatchObject({ id: reply.id, text: reply.text, reactions: [{ emoji: '👍', by: 'Maya', byKey: me, at: expect.any(Number) }] });
    // Again: nothing new. Another browser, same emoji: its own; a name typed differently is still this browser.
    expect((await reactions(reply.id, 'POST', { emoji: '👍', author_name: 'Maya' })).body.message.reactions).toHaveLength(1);
    expect((await reactions(reply.id, 'POST', { emoji: '👍', author_name: 'Omar' }, OTHER)).body.message.reactions).toHaveLength(2);
    expect((await reactions(reply.id, 'POST', { emoji: '👍', author_name: 'Someone else' })).body.message.reactions).toHaveLength(2);
    expect((await reactions(id, 'POST', { emoji: '🚀', author_name: 'Omar' }, OTHER)).status).toBe(200);
    const page = await messages();
    expect(page.find((m) => m.id === reply.id).reactions.map((r: any) => `${r.by} ${r.emoji}`)).toEqual(['Maya 👍', 'Omar 👍']);
    expect(page.find((m) => m.id === id).reactions).toMatchObject([{ emoji: '🚀', by: 'Omar' }]);
    // The notes are in the page's data, marked for the page not to draw them.
    expect(page.filter((m) => m.reactionOf).map((m) => m.text)).toEqual([
      `Maya reacted 👍 to Analyst's message: "${reply.text}"`,
      `Omar reacted 👍 to Analyst's message: "${reply.text}"`,
      `Omar reacted 🚀 to Maya's message: "@analyst the launch is friday"`,
    ]);

    const taken = await reactions(reply.id, 'DELETE', { emoji: '👍', author_name: 'Maya' });
    expect(taken.status).toBe(200);
    expect(taken.body.message.reactions).toMatchObject([{ emoji: '👍', by: 'Omar' }]);
    expect((await reactions(reply.id, 'DELETE', { emoji: '👍', author_name: 'Maya' })).status).toBe(200);
    off();
    expect(events.filter((e) => e.type === 'edited').map((e) => (e as any).reactions.length)).toEqual([1, 2, 1, 1]);
    // No model was asked anything.
    expect(llm.calls.length).toBe(turns);
    await post('@analyst anything new?');
    await expect.poll(() => llm.callsFor('analyst').some((c) => shown(c).includes(`Maya and Omar reacted 👍 to Analyst's message`)), { timeout: 10_000 }).toBe(true);
  });

  it('answers 4xx JSON errors for everything else', async () => {
    const mine = await post('plain words');
    const codeOf = (r: { status: number; body: any }) => [r.status, r.body.error?.code];
    const add = (id: string, body: unknown, key: string | null = MINE) => reactions(id, 'POST', body, key).then(codeOf);
    expect(await add(mine, { emoji: 'ok' })).toEqual([400, 'invalid_emoji']);
    expect(await add(mine, { emoji: '👍👍' })).toEqual([400, 'invalid_emoji']);
    expect(await add(mine, {})).toEqual([400, 'invalid_field']);
    expect(await add(mine, { emoji: 5 })).toEqual([400, 'invalid_field']);
    expect(await add(mine, { emoji: '👍', author_name: 'Analyst' })).toEqual([400, 'reserved_name']);
    expect(await add(mine, { emoji: '👍' }, 'short')).toEqual([400, 'invalid_header']);
    expect(await add('lobby.99999', { emoji: '👍' })).toEqual([404, 'not_found']);
    expect(await add('nonsense', { emoji: '👍' })).toEqual([404, 'not_found']);
    expect(await reactions(mine, 'POST', { emoji: '👍' }).then((r) => r.status)).toBe(200);
    expect((await req('POST', `/api/groups/nope/messages/${mine}/reactions`, { emoji: '👍' })).status).toBe(404);
    const note = (await messages()).find((m) => m.reactionOf);
    expect(await add(note.id, { emoji: '👍' })).toEqual([409, 'not_reactable']);
    const gone = await post('soon gone');
    expect((await req('DELETE', `/api/groups/lobby/messages/${gone}`)).status).toBe(200);
    expect(await add(gone, { emoji: '👍' })).toEqual([409, 'not_reactable']);
    // Without a body type, the body is refused.
    const raw = await fetch(`${base}/api/groups/lobby/messages/${mine}/reactions`, { method: 'POST', body: 'x' });
    expect(raw.status).toBe(415);
    // A client without a key reacts as its address (a digest, never the address itself).
    const keyless = await reactions(mine, 'POST', { emoji: '🙂', author_name: 'Script' }, null);
    expect(keyless.status).toBe(200);
    const byKey = keyless.body.message.reactions.find((r: any) => r.emoji === '🙂').byKey as string;
    expect(byKey).toMatch(/^addr:[A-Za-z0-9_-]{22}$/);
    expect(byKey).not.toContain('127.0.0.1');
  });
});

describe('web API: reactions, limits and failures', () => {
  it('the rate limit counts per client address whatever key is sent: 429 with Retry-After', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'chorus-reactions-rate-'));
    const { config } = parseConfigText(configYaml(dataDir, 3), 'test');
    const app = await createApp({ config, llm: new FakeLlm(), logger: silentLogger });
    await app.start();
    try {
      const posted = await call(app.webUrl!, 'POST', '/api/groups/lobby/messages', { text: 'react to me', author_name: 'Maya' });
      const id = posted.body.entryId as string;
      const emoji = ['👍', '🎉', '👀', '🔥'];
      const keys = ['browser-key-number-0001', 'browser-key-number-0002', 'browser-key-number-0003', 'browser-key-number-0004'];
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await call(app.webUrl!, 'POST', `/api/groups/lobby/messages/${id}/reactions`, { emoji: emoji[i] }, keys[i]));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
      const refused = answers[3]!;
      expect(refused.body.error).toMatchObject({ code: 'rate_limited', retryAfterSeconds: expect.any(Number) });
      expect(Number(refused.headers.get('retry-after'))).toBe(refused.body.error.retryAfterSeconds);
      expect(refused.body.error.retryAfterSeconds).toBeGreaterThan(0);
      expect(refused.body.error.retryAfterSeconds).toBeLessThanOrEqual(60);
    } finally {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a failed write is a 503 and keeps nothing', async () => {
    const { MemoryStore } = await import('../../helpers/memory-store.js');
    const store = new MemoryStore();
    const dataDir = mkdtempSync(join(tmpdir(), 'chorus-reactions-503-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    const app = await createApp({ config, store, llm: new FakeLlm(), logger: silentLogger });
    await app.start();
    try {
      const id = (await call(app.webUrl!, 'POST', '/api/groups/lobby/messages', { text: 'keep me', author_name: 'Maya' })).body.entryId as string;
      store.failWrites = 'ENOSPC: no space left on device';
      const res = await call(app.webUrl!, 'POST', `/api/groups/lobby/messages/${id}/reactions`, { emoji: '👍', author_name: 'Maya' });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('unavailable');
      store.failWrites = null;
      expect(store.entries('lobby').some((e) => e.reactions || e.reactionOf)).toBe(false);
    } finally {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
