/**
 * Which bot posted each Telegram copy of a room's message, end to end: the real app (router, file
 * store, ChatDelivery) with the Telegram channel on the fake Bot API and a web chat in the room.
 * A person on the web page writes; the relay bot posts the copy in the Telegram group, then is
 * removed (403) and the first participant's bot posts the next one. The person edits and deletes
 * both after a restart (the state read back from the store, the channel remembering nothing, the
 * relay bot back in the group): each change goes straight to the bot that posted that copy —
 * Telegram lets only the sender edit — without asking another bot first.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { TranscriptEntry } from '../../../src/core/types.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';
import { agentDef, MAYA, RELAY, TOKENS, USERNAMES, waitUntil, type AgentId } from './harness.js';

const TEAM: AgentId[] = ['writer', 'analyst'];
const TAG = 'omar-browser-1';
const WAIT = 30_000;

function yaml(dataDir: string, apiRoot: string, chatId: number): string {
  const agents = TEAM.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: "You are the ${id}.", telegram: { token: "${TOKENS[id]}" } }`).join('\n');
  return `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
channels:
  web: { enabled: false }
  telegram: { enabled: true, api_root: "${apiRoot}", auto_create_groups: false, admins: [], relay_token: "${RELAY.token}" }
groups:
  - title: Room
    chats: [{ channel: telegram, chat_id: "${chatId}" }, { channel: web }]
    participants: [${TEAM.join(', ')}]
`;
}

describe('telegram: the bot that posted a copy changes it', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(chatId: number): Promise<{ app: App; groupId: string }> {
    const { config } = parseConfigText(yaml(dataDir!, fake!.apiRoot, chatId), 'test', {});
    const a = await createApp({ config, llm: new FakeLlm(), logger: silentLogger });
    await a.start();
    const g = await waitUntil(() => a.gateway.listGroups().find((x) => x.chatId === String(chatId)), 'the declared room', WAIT);
    return { app: a, groupId: g.id };
  }

  /** A person on the web page writes in the room. */
  async function webSays(groupId: string, text: string): Promise<void> {
    const r = await app!.router.receive({ channel: 'web', chatId: groupId, messageId: `w-${text}`, author: { id: 'Omar', name: 'Omar' }, rateKey: 'addr:test', text, ts: Date.now(), clientTag: TAG });
    expect(r.status).toBe('recorded');
  }

  /** Polls an async probe until it gives something. */
  async function waitFor<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
    const deadline = Date.now() + WAIT;
    for (;;) {
      const v = await probe();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('relay bot, then a fallback bot after its 403: each copy edited and deleted by its own bot after a restart', async () => {
    fake = await FakeTelegram.start();
    for (const id of TEAM) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    fake.addBot({ token: RELAY.token, username: RELAY.username, firstName: RELAY.firstName });
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-via-'));
    const chat = fake.createGroup('Team chat');
    for (const id of TEAM) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    fake.addBotToChat(chat.id, RELAY.token, MAYA);
    const key = `telegram:${chat.id}`;
    const started = await boot(chat.id);
    app = started.app;
    const { groupId } = started;
    const copyIn = (text: string) => fake!.postsIn(chat.id).find((p) => p.text === `Omar (Web): ${text}`);

    await webSays(groupId, 'first');
    const first = await waitUntil(() => copyIn('first'), 'the first copy', WAIT);
    expect(first.bot).toBe(RELAY.username);
    // The relay bot is removed from the group: Telegram answers 403, the writer's bot stands in.
    fake.removeBotFromChat(chat.id, RELAY.token, MAYA);
    await webSays(groupId, 'second');
    const second = await waitUntil(() => copyIn('second'), 'the second copy', WAIT);
    expect(second.bot).toBe(USERNAMES.writer);
    // Which bot posted each copy is recorded with it, by the bot's id (its token's first part).
    const recorded = await waitFor(async () => {
      const page = await app!.gateway.messages(groupId, { limit: 50 });
      const at = (t: string) => page.find((e) => e.text === t)?.copies?.[key];
      return at('first')?.via && at('second')?.via ? [at('first'), at('second')] : undefined;
    }, 'both copies recorded as posted');
    expect(recorded).toEqual([
      { delivery: 'posted', ids: [String(first.messageId)], via: RELAY.token.split(':')[0] },
      { delivery: 'posted', ids: [String(second.messageId)], via: TOKENS.writer.split(':')[0] },
    ]);

    // A restart: the group is read back from the store, the channel knows nothing of earlier posts.
    // The relay bot is back in the group, so a guess would try it first for the writer's copy.
    await app.stop();
    app = undefined;
    fake.addBotToChat(chat.id, RELAY.token, MAYA);
    const relayEditsBefore = fake.callsOf('editMessageText', RELAY.username).length;
    const writerEditsBefore = fake.callsOf('editMessageText', USERNAMES.writer).length;
    app = (await boot(chat.id)).app;
    const firstEntry = (await app.gateway.messages(groupId, { limit: 50 })).find((e) => e.text === 'first')!;
    const secondEntry = (await app.gateway.messages(groupId, { limit: 50 })).find((e) => e.text === 'second')!;
    await app.gateway.editMessage(groupId, firstEntry.id, { clientTag: TAG, text: 'first, edited', maxChars: 4000 });
    await app.gateway.editMessage(groupId, secondEntry.id, { clientTag: TAG, text: 'second, edited', maxChars: 4000 });
    const edits = await waitUntil(() => (fake!.changes.edits.length >= 2 ? fake!.changes.edits : undefined), 'both copies edited', WAIT);
    expect(edits.map((e) => [e.bot, e.messageId, e.text]).sort()).toEqual([
      [USERNAMES.writer, second.messageId, 'Omar (Web): second, edited'],
      [RELAY.username, first.messageId, 'Omar (Web): first, edited'],
    ].sort());
    // Straight to the bot that posted each: no other bot was asked to edit a message it did not send.
    expect(fake.callsOf('editMessageText', RELAY.username).slice(relayEditsBefore).map((c) => c.payload.message_id)).toEqual([first.messageId]);
    expect(fake.callsOf('editMessageText', USERNAMES.writer).slice(writerEditsBefore).map((c) => c.payload.message_id)).toEqual([second.messageId]);

    await app.gateway.deleteMessage(groupId, secondEntry.id, { clientTag: TAG });
    await app.gateway.deleteMessage(groupId, firstEntry.id, { clientTag: TAG });
    const gone = await waitUntil(() => (fake!.changes.deletions.length >= 2 ? fake!.changes.deletions : undefined), 'both copies deleted', WAIT);
    expect(gone.map((d) => [d.bot, d.messageId]).sort()).toEqual([
      [USERNAMES.writer, second.messageId],
      [RELAY.username, first.messageId],
    ].sort());
    expect(fake.callsOf('deleteMessage', RELAY.username).map((c) => c.payload.message_id)).toEqual([first.messageId]);
  }, 90_000);
});
