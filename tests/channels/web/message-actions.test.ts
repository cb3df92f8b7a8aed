/**
 * The web API for command answers and message actions, against the real app (router, store,
 * web channel, FakeLlm): ephemeral command answers and refusals (answered to the asker, never
 * stored), regenerate (202, the old reply kept, 404/409 JSON errors) and "ask again" about one
 * message (`reply_to`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { LlmRequest } from '../../../src/core/ports.js';
import type { TranscriptEntry } from '../../../src/core/types.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';

const POLL = { timeout: 15_000, interval: 25 };

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
  - { id: writer, name: Writer, persona: "You are Writer." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: 3 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer] }
  - { channel: web, chat_id: fast, title: Fast, participants: [analyst] }
  - { channel: web, chat_id: regen, title: Regen, participants: [analyst, writer] }
`;
}

/** The text of the last user turn a request carried (what the agent was asked). */
function lastUserTurn(req: LlmRequest): string {
  return [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
}

describe('web API: ephemeral answers and message actions', () => {
  let app: App;
  let base: string;
  let dataDir: string;
  let writerCalls = 0;
  const llm = new FakeLlm({
    replies: {
      writer: () => `Writer answer ${++writerCalls}`,
      analyst: (req) => (req.mustReply ? 'Analyst here' : '[PASS]'),
    },
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-actions-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
  }, 30_000);

  afterAll(async () => {
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const post = (group: string, body: Record<string, unknown>) =>
    fetch(`${base}/api/groups/${group}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ author_name: 'Maya', ...body }) });
  const regenerate = (group: string, entryId: string) => fetch(`${base}/api/groups/${group}/messages/${encodeURIComponent(entryId)}/regenerate`, { method: 'POST' });
  const messages = async (group: string): Promise<TranscriptEntry[]> => ((await (await fetch(`${base}/api/groups/${group}/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;

  it('/help and /group list answer the asker in the response and leave nothing in the transcript', async () => {
    const before = await messages('lobby');
    const res = await post('lobby', { text: '/help', client_id: 'help-1' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ephemeral: { text: string; kind: string } };
    expect(body.ephemeral.kind).toBe('command');
    expect(body.ephemeral.text).toContain('Chorus commands');
    const list = (await (await post('lobby', { text: '/group list' })).json()) as { ephemeral: { text: string } };
    expect(list.ephemeral.text).toContain('Group “Lobby”');
    const after = await messages('lobby');
    expect(after.length).toBe(before.length);
    expect(after.some((e) => e.text.includes('/help') || e.text.includes('Chorus commands') || e.text.includes('/group list'))).toBe(false);
  });

  it('a failed command is an ephemeral answer; a command that changes the group leaves its shared system line', async () => {
    const bad = await post('lobby', { text: '/group mute nobody' });
    expect(bad.status).toBe(200);
    const badBody = (await bad.json()) as { ephemeral: { text: string; kind: string } };
    expect(badBody.ephemeral.text).toMatch(/^⚠ unknown agent "nobody"/);
    const mute = await post('lobby', { text: '/group mute writer', client_id: 'mute-1' });
    expect(mute.status).toBe(202);
    const muteBody = (await mute.json()) as { entryId: string | null; ephemeral?: unknown };
    expect(muteBody.entryId).toMatch(/^lobby\.\d+$/);
    expect(muteBody.ephemeral).toBeUndefined();
    const all = await messages('lobby');
    expect(all.some((e) => e.text.includes('nobody'))).toBe(false);
    const line = all.find((e) => e.kind === 'system' && e.text.includes('Writer is muted'));
    expect(line).toBeDefined();
    expect(all.find((e) => e.id === muteBody.entryId)?.hiddenFromAgents).toBe(true);
    // The same client id again is a duplicate: the mute is not recorded twice.
    expect((await post('lobby', { text: '/group mute writer', client_id: 'mute-1' })).status).toBe(202);
    expect((await messages('lobby')).filter((e) => e.text.includes('Writer is muted')).length).toBe(1);
    expect((await post('lobby', { text: '/group unmute writer' })).status).toBe(202);
  });

  it('a refused message is a 429 with Retry-After and the retry time, once, and is not stored', async () => {
    for (let i = 1; i <= 3; i++) expect((await post('fast', { text: `message ${i}` })).status).toBe(202);
    const res = await post('fast', { text: 'one too many' });
    expect(res.status).toBe(429);
    const retry = Number(res.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    const body = (await res.json()) as { error: { code: string; message: string }; ephemeral: { text: string; kind: string; retryAfterSeconds: number } };
    expect(body.error.code).toBe('rate_limited');
    expect(body.ephemeral.kind).toBe('refusal');
    expect(body.ephemeral.retryAfterSeconds).toBe(retry);
    expect(body.ephemeral.text).toContain(`try again in ${retry} s`);
    expect(body.ephemeral.text).toContain('faster than 3 a minute');
    const all = await messages('fast');
    expect(all.some((e) => e.text.includes('one too many') || e.text.includes('faster than'))).toBe(false);
    expect(all.filter((e) => e.kind === 'human').length).toBe(3);
  });

  it('regenerate: 202, a second reply marked as a regeneration, the first kept; older replies 409', async () => {
    const sent = (await (await post('regen', { text: '@writer what is a haiku?' })).json()) as { entryId: string };
    await expect.poll(async () => (await messages('regen')).filter((e) => e.agentId === 'writer').length, POLL).toBe(1);
    const first = (await messages('regen')).find((e) => e.agentId === 'writer')!;
    expect(first.meta?.answers).toBe(sent.entryId);
    const res = await regenerate('regen', first.id);
    expect(res.status).toBe(202);
    expect(((await res.json()) as { agentId: string }).agentId).toBe('writer');
    await expect.poll(async () => (await messages('regen')).filter((e) => e.agentId === 'writer').length, POLL).toBe(2);
    const replies = (await messages('regen')).filter((e) => e.agentId === 'writer');
    expect(replies[0]!.id).toBe(first.id);
    expect(replies[0]!.text).toBe(first.text);
    expect(replies[1]!.meta?.regenerates).toBe(first.id);
    expect(replies[1]!.meta?.answers).toBe(sent.entryId);
    // The regenerated turn was asked about the same question, quoted.
    expect(lastUserTurn(llm.callsFor('writer').at(-1)!)).toContain('what is a haiku?');

    const stale = await regenerate('regen', first.id);
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { error: { code: string } }).error.code).toBe('not_latest');
    const human = await regenerate('regen', sent.entryId);
    expect(human.status).toBe(409);
    expect(((await human.json()) as { error: { code: string } }).error.code).toBe('not_agent_reply');
    for (const bad of ['regen.999999', 'nonsense', 'regen.0']) {
      const r = await regenerate('regen', bad);
      expect(r.status, bad).toBe(404);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('unknown_entry');
    }
    const noGroup = await regenerate('nope', first.id);
    expect(noGroup.status).toBe(404);
    expect(((await noGroup.json()) as { error: { code: string } }).error.code).toBe('unknown_group');
  });

  it('ask again with reply_to answers the question that reply answered, not the latest message', async () => {
    await post('regen', { text: '@analyst unrelated later question' });
    await expect.poll(async () => (await messages('regen')).filter((e) => e.agentId === 'analyst').length, POLL).toBe(1);
    const writerReplies = (await messages('regen')).filter((e) => e.agentId === 'writer');
    const before = llm.callsFor('writer').length;
    const res = await post('regen', { text: '/ask writer', reply_to: writerReplies.at(-1)!.id });
    expect(res.status).toBe(202);
    await expect.poll(async () => (await messages('regen')).filter((e) => e.agentId === 'writer').length, POLL).toBe(writerReplies.length + 1);
    // What happened since is shown as context; the question it is asked is the quoted one.
    const asked = lastUserTurn(llm.callsFor('writer')[before]!).split('## Your turn')[1] ?? '';
    expect(asked).toContain('what is a haiku?');
    expect(asked).not.toContain('unrelated later question');
    // `/ask` itself leaves no command line on the web: the answer is the shared record.
    expect((await messages('regen')).some((e) => e.text.startsWith('/ask'))).toBe(false);
  });
});

describe('regenerate across a restart', () => {
  it('a regeneration recorded before a stop is answered after the next start, marked, the first reply kept', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'chorus-regen-restart-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    let block = false;
    const llm1 = new FakeLlm({
      replies: {
        writer: async (req) => {
          if (!block) return 'first answer';
          // The regeneration is still being written when the daemon stops.
          await new Promise((resolve) => req.signal?.addEventListener('abort', resolve));
          throw new Error('stopped');
        },
      },
    });
    let app = await createApp({ config, llm: llm1, logger: silentLogger });
    try {
      await app.start();
      let base = app.webUrl!;
      const list = async () => ((await (await fetch(`${base}/api/groups/regen/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;
      await fetch(`${base}/api/groups/regen/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: '@writer a question to answer twice' }) });
      await expect.poll(async () => (await list()).filter((e) => e.agentId === 'writer').length, POLL).toBe(1);
      const first = (await list()).find((e) => e.agentId === 'writer')!;
      block = true;
      expect((await fetch(`${base}/api/groups/regen/messages/${first.id}/regenerate`, { method: 'POST' })).status).toBe(202);
      await expect.poll(() => llm1.callsFor('writer').length, POLL).toBe(2);
      await app.stop();

      const llm2 = new FakeLlm({ replies: { writer: 'second answer, after the restart' } });
      app = await createApp({ config, llm: llm2, logger: silentLogger });
      await app.start();
      base = app.webUrl!;
      await expect.poll(async () => (await list()).filter((e) => e.agentId === 'writer').length, POLL).toBe(2);
      const replies = (await list()).filter((e) => e.agentId === 'writer');
      expect(replies[0]).toMatchObject({ id: first.id, text: 'first answer' });
      expect(replies[1]!.text).toBe('second answer, after the restart');
      expect(replies[1]!.meta?.regenerates).toBe(first.id);
      expect(askedIn(llm2.callsFor('writer')[0]!)).toContain('a question to answer twice');
    } finally {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});

function askedIn(req: LlmRequest): string {
  return lastUserTurn(req).split('## Your turn')[1] ?? '';
}
