/**
 * An agent's voluntary `[REACT 👍]` in a room of several chats, in the real app: a Telegram
 * supergroup (each agent its own bot) and a Discord channel (`agent_reactions: bot`), with the
 * web page. The reaction is set where the person wrote — by that platform's id of the message,
 * through that chat's channel, whichever chat is the room's home — and on the message's copies
 * in the other chats, also on a copy that was posted only after the agent reacted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import type { FakeUser as DiscordUser } from '../fakes/discord/model.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { MAYA, TOKENS, USERNAMES, waitUntil } from '../channels/telegram/harness.js';

const NEWS = 'We shipped the release tonight!';

describe('agents\' reactions in a room across Telegram and Discord (real app)', () => {
  let tg: FakeTelegram | undefined;
  let dc: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await tg?.close();
    await dc?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = tg = dc = dataDir = undefined;
  });

  /** The room: home `home`, both other chats linked. The writer reacts 👍 where it may, once `ready` resolves. */
  async function boot(home: 'telegram' | 'discord', ready: () => Promise<unknown> = async () => undefined) {
    tg = await FakeTelegram.start();
    dc = await new FakeDiscord().start();
    tg.addBot({ token: TOKENS.analyst, username: USERNAMES.analyst, firstName: 'Analyst' });
    tg.addBot({ token: TOKENS.writer, username: USERNAMES.writer, firstName: 'Writer' });
    const group = tg.createGroup('Family', { type: 'supergroup' });
    for (const t of [TOKENS.analyst, TOKENS.writer]) tg.addBotToChat(group.id, t, MAYA);
    const channel = dc.addChannel('general');
    const lee: DiscordUser = dc.addUser('Lee');
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-room-reactions-'));
    const tgChat = `{ channel: telegram, chat_id: "${group.id}" }`;
    const dcChat = `{ channel: discord, chat_id: "${channel}" }`;
    const agent = (id: 'analyst' | 'writer', name: string) => `  - { id: ${id}, name: ${name}, persona: You are the ${id}., telegram: { token: "${TOKENS[id]}" } }`;
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agent('analyst', 'Analyst')}
${agent('writer', 'Writer')}
group_defaults: { cooldown_seconds: 0, reply_strategy: hybrid, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
  telegram: { enabled: true, api_root: "${tg.apiRoot}", auto_create_groups: false }
  discord: { enabled: true, token: "${dc.token}", api_base: "${dc.apiBase}", agent_reactions: bot }
groups:
  - { title: Room, participants: [analyst, writer], chats: [${home === 'telegram' ? `${tgChat}, ${dcChat}` : `${dcChat}, ${tgChat}`}, { channel: web }] }
`;
    const react = async (q: { mustReply?: boolean }) => {
      if (q.mustReply) return 'ok';
      await ready();
      return '[REACT 👍]';
    };
    const llm = new FakeLlm({ replies: { writer: react }, fallback: (q) => (q.mustReply ? 'ok' : '[PASS]') });
    const a = await createApp({ config: parseConfigText(yaml, 'test', {}).config, llm, logger: silentLogger });
    app = a;
    await a.start();
    const roomId = a.gateway.listGroups().find((g) => g.title === 'Room')!.id;
    const news = async (): Promise<TranscriptEntry | undefined> => (await a.gateway.messages(roomId, { limit: 50 })).find((e) => e.text === NEWS);
    return { tgId: group.id, channel, lee, news };
  }

  /** Discord's copy of a person's message: posted through the channel's webhook under their name. */
  const dcCopy = (channel: string) => dc!.posts(channel).find((m) => m.webhook_id !== null && m.content === NEWS);

  it('a person writes in the linked Discord channel (home: Telegram): the reaction is on their Discord message and on its Telegram copy', async () => {
    const w = await boot('telegram', () => waitUntil(() => tg!.postsIn(w.tgId).find((p) => p.text.endsWith(NEWS)), 'the Telegram copy'));
    const said = dc!.humanSays(w.channel, w.lee, NEWS);
    // Discord: the gateway bot's reaction on Lee's own message.
    await waitUntil(() => dc!.reactionsOn(said).length > 0 || undefined, 'the reaction on Discord');
    expect(dc!.reactionsOn(said)).toEqual([['👍', dc!.bot.id]]);
    // Telegram: the writer's own bot, on the copy of Lee's message in the supergroup.
    const copy = tg!.postsIn(w.tgId).find((p) => p.text.endsWith(NEWS))!;
    const set = await waitUntil(() => tg!.reactions.set.find((r) => r.key === copy.key), 'the reaction on Telegram');
    expect(set).toMatchObject({ token: TOKENS.writer, chatId: w.tgId, messageId: copy.messageId, emoji: ['👍'] });
    // Nothing was asked of Telegram with Discord's id of the message.
    expect(new Set(tg!.callsOf('setMessageReaction').map((c) => c.payload.message_id))).toEqual(new Set([copy.messageId]));
    await app!.router.idle();
    expect((await w.news())!.reactions?.map((r) => [r.emoji, r.byKey])).toEqual([['👍', 'agent:writer']]);
  });

  it('a person writes in the linked Telegram supergroup (home: Discord): set by the writer\'s bot there; the Discord copy posted after the reaction gets it too', async () => {
    let held = true;
    const w = await boot('discord', async () => {
      // Discord's copy is held back until the writer has reacted (see below).
      await waitUntil(() => dc!.slow.before > 0 || undefined, 'the copy held');
    });
    dc!.stall((method, path) => held && method === 'POST' && /^\/webhooks\//.test(path));
    const said = tg!.humanSays(w.tgId, MAYA, NEWS);
    const set = await waitUntil(() => tg!.reactions.set.find((r) => r.key === said.key), 'the reaction on Telegram');
    expect(set).toEqual({ bot: USERNAMES.writer, token: TOKENS.writer, chatId: w.tgId, messageId: said.messageId, key: said.key, emoji: ['👍'] });
    await waitUntil(async () => (await w.news())?.reactions?.length || undefined, 'the reaction recorded');
    expect(dcCopy(w.channel)).toBeUndefined();
    held = false;
    dc!.release();
    const copy = await waitUntil(() => dcCopy(w.channel), 'the Discord copy');
    await waitUntil(() => dc!.reactionsOn(copy.id).length > 0 || undefined, 'the reaction on the Discord copy');
    expect(dc!.reactionsOn(copy.id)).toEqual([['👍', dc!.bot.id]]);
    expect(tg!.callsOf('setMessageReaction').map((c) => c.bot)).toEqual([USERNAMES.writer]);
  });
});
