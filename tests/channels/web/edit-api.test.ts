/**
 * PATCH and DELETE /api/groups/:id/messages/:entryId against the real app (router, file store,
 * web channel, FakeLlm): the sending browser edits and deletes its message, every other request
 * gets a 4xx JSON error, a failed write is a 503 that keeps nothing, and the page of messages and
 * search show the message as it now is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { LlmRequest } from '../../../src/core/ports.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';

const MINE = 'browser-key-of-maya-0001';
const OTHER = 'browser-key-of-omar-0002';

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { max_message_chars: 100 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst] }
`;
}

const shown = (req: LlmRequest) => req.messages.map((m) => m.content).join('\n');

describe('web API: editing and deleting one\'s own message', () => {
  let app: App;
  let base: string;
  let dataDir: string;
  const llm = new FakeLlm({ replies: { analyst: (req) => (req.mustReply ? 'Analyst here' : '[PASS]') } });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-edits-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
  });
  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown, key: string | null = MINE) => {
    const headers: Record<string, string> = {};
    if (key) headers['x-chorus-client'] = key;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const post = async (text: string, key = MINE) => {
    const r = await call('POST', '/api/groups/lobby/messages', { text, author_name: 'Maya' }, key);
    expect(r.status).toBeLessThan(300);
    return r.body.entryId as string;
  };
  const message = async (id: string) => (await call('GET', '/api/groups/lobby/messages?limit=500')).body.messages.find((m: any) => m.id === id);

  it('the sending browser edits its message: 200, the page and search show the new text, the next prompt the note', async () => {
    const id = await post('@analyst the meeting is on monday');
    const r = await call('PATCH', `/api/groups/lobby/messages/${id}`, { text: 'the meeting is on tuesday' });
    expect(r.status).toBe(200);
    expect(r.body.message).toMatchObject({ id, text: 'the meeting is on tuesday', editedAt: expect.any(Number) });
    expect(await message(id)).toMatchObject({ text: 'the meeting is on tuesday', editedAt: expect.any(Number) });
    // The note for the agents is in the page's data (marked editOf), not a message of anyone's.
    const note = (await call('GET', '/api/groups/lobby/messages?limit=500')).body.messages.find((m: any) => m.editOf === id);
    expect(note).toMatchObject({ kind: 'system' });
    expect((await call('GET', '/api/groups/lobby/search?q=tuesday')).body.results.map((x: any) => x.id)).toEqual([id]);
    expect((await call('GET', '/api/search?q=monday')).body.results).toEqual([]);
    await post('@analyst anything new?');
    await expect.poll(() => llm.callsFor('analyst').some((c) => shown(c).includes('Maya edited their message: the meeting is on tuesday')), { timeout: 10_000 }).toBe(true);
  });

  it('the sending browser deletes its message: 200, no text anywhere after', async () => {
    const id = await post('@analyst the door code is 4711-kiwi');
    await expect.poll(() => llm.callsFor('analyst').some((c) => shown(c).includes('4711-kiwi')), { timeout: 10_000 }).toBe(true);
    const r = await call('DELETE', `/api/groups/lobby/messages/${id}`);
    expect(r.status).toBe(200);
    expect(r.body.message).toMatchObject({ id, text: '', deleted: true });
    expect(await message(id)).toMatchObject({ text: '', deleted: true });
    expect((await call('GET', '/api/groups/lobby/search?q=kiwi')).body.results).toEqual([]);
    const n = llm.calls.length;
    await post('@analyst what was the code?');
    await expect.poll(() => llm.calls.length, { timeout: 10_000 }).toBeGreaterThan(n);
    for (const c of llm.calls.slice(n)) expect(shown(c)).not.toContain('4711-kiwi');
  });

  it('answers 4xx JSON errors for everything else', async () => {
    const mine = await post('plain words');
    const theirs = await post('their words', OTHER);
    const reply = (await call('GET', '/api/groups/lobby/messages?limit=500')).body.messages.find((m: any) => m.kind === 'agent').id;
    const patch = (id: string, body: unknown, key: string | null = MINE) => call('PATCH', `/api/groups/lobby/messages/${id}`, body, key).then((r) => [r.status, r.body.error?.code]);
    expect(await patch('lobby.9999', { text: 'x' })).toEqual([404, 'not_found']);
    expect(await patch('nonsense', { text: 'x' })).toEqual([404, 'not_found']);
    expect(await call('PATCH', `/api/groups/nope/messages/${mine}`, { text: 'x' }).then((r) => r.status)).toBe(404);
    expect(await patch(theirs, { text: 'x' })).toEqual([403, 'forbidden']);
    expect(await patch(mine, { text: 'x' }, null)).toEqual([403, 'forbidden']);
    expect(await patch(mine, { text: 'x' }, 'short')).toEqual([400, 'invalid_header']);
    expect(await patch(reply, { text: 'x' })).toEqual([409, 'not_editable']);
    expect(await patch(mine, { text: '  ' })).toEqual([400, 'empty']);
    expect(await patch(mine, { text: 'x'.repeat(101) })).toEqual([400, 'too_long']);
    expect(await patch(mine, {})).toEqual([400, 'invalid_field']);
    expect(await patch(mine, { text: 5 })).toEqual([400, 'invalid_field']);
    expect(await call('DELETE', `/api/groups/lobby/messages/${theirs}`).then((r) => [r.status, r.body.error?.code])).toEqual([403, 'forbidden']);
    expect((await call('DELETE', `/api/groups/lobby/messages/${theirs}`, undefined, OTHER)).status).toBe(200);
    expect(await call('DELETE', `/api/groups/lobby/messages/${theirs}`, undefined, OTHER).then((r) => [r.status, r.body.error?.code])).toEqual([409, 'deleted']);
    expect(await patch(theirs, { text: 'back' }, OTHER)).toEqual([409, 'deleted']);
    // Untouched by all of that.
    expect(await message(mine)).toMatchObject({ text: 'plain words' });
  });
});

describe('web API: a failed write', () => {
  it('is a 503 and keeps nothing', async () => {
    const { MemoryStore } = await import('../../helpers/memory-store.js');
    const store = new MemoryStore();
    const dataDir = mkdtempSync(join(tmpdir(), 'chorus-edits-503-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    const app = await createApp({ config, store, llm: new FakeLlm(), logger: silentLogger });
    await app.start();
    try {
      const headers = { 'x-chorus-client': MINE, 'content-type': 'application/json' };
      const posted = await fetch(`${app.webUrl}/api/groups/lobby/messages`, { method: 'POST', headers, body: JSON.stringify({ text: 'keep me', author_name: 'Maya' }) });
      const id = ((await posted.json()) as any).entryId as string;
      store.failWrites = 'ENOSPC: no space left on device';
      const res = await fetch(`${app.webUrl}/api/groups/lobby/messages/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ text: 'changed' }) });
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error.code).toBe('unavailable');
      const del = await fetch(`${app.webUrl}/api/groups/lobby/messages/${id}`, { method: 'DELETE', headers: { 'x-chorus-client': MINE } });
      expect(del.status).toBe(503);
      store.failWrites = null;
      expect(store.entries('lobby').find((e) => e.id === id)).toMatchObject({ text: 'keep me' });
      expect(store.entries('lobby').some((e) => e.editOf === id || e.deleted)).toBe(false);
    } finally {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
