/**
 * The Telegram adapter against the fake Bot API with a recording host (no router): normalisation,
 * dedupe keys, mentions, replies, privacy, commands, membership and confirmation semantics.
 * Posting behaviour (limits, 429, parse errors, topics, migration) is in telegram-posting.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CapturingLogger } from '../../helpers/logger.js';
import { RecordingHost } from '../../helpers/recording-host.js';
import { TelegramChannel } from '../../../src/channels/telegram/TelegramChannel.js';
import { makeWorld, MAYA, TOKENS, TOM, USERNAMES, waitUntil, type World } from './harness.js';

describe('telegram adapter: inbound', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function groupWithAll(type: 'group' | 'supergroup' = 'supergroup') {
    w = await makeWorld();
    const chat = w.fake.createGroup('Market team', { type });
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    await waitUntil(() => w!.host.memberships.length === 3 || undefined, 'three joins');
    return chat;
  }

  for (const type of ['supergroup', 'group'] as const) {
    it(`gives every bot's copy of one human message the same dedupe key (${type})`, async () => {
      const chat = await groupWithAll(type);
      const sent = w!.fake.humanSays(chat.id, MAYA, 'What do we think about AAPL?');
      const copies = await waitUntil(() => (w!.host.attempts.length >= 3 ? w!.host.attempts : undefined), 'three copies');
      expect(new Set(copies.map((c) => `${c.channel}|${c.chatId}|${c.messageId}`)).size).toBe(1);
      expect(copies.map((c) => c.viaAgentId).sort()).toEqual(['analyst', 'critic', 'writer']);
      expect(w!.host.received).toHaveLength(1);
      expect(copies[0]).toMatchObject({ chatId: String(chat.id), text: 'What do we think about AAPL?', author: { id: String(MAYA.id), name: 'Maya' } });
      if (type === 'supergroup') expect(copies[0]!.messageId).toBe(String(sent.messageId));
      else {
        // The platform really numbered the copies differently; the key must not depend on that.
        const ids = new Set([...w!.fake.state.chat(chat.id).messages.at(-1)!.ids.values()]);
        expect(ids.size).toBe(4);
      }
    });
  }

  it('turns mention and text_mention entities into agent ids, in order', async () => {
    const chat = await groupWithAll();
    w!.fake.humanSays(chat.id, MAYA, `@${USERNAMES.writer} and @${USERNAMES.analyst}, thoughts? cc @someone_else`);
    const [m] = await w!.host.waitForReceived(1);
    expect(m!.mentionedAgentIds).toEqual(['writer', 'analyst']);
    const critic = w!.fake.state.bots.get(TOKENS.critic)!;
    w!.fake.humanSays(chat.id, TOM, 'Critic please look', { entities: [{ type: 'text_mention', offset: 0, length: 6, user: { id: critic.id, is_bot: true, first_name: 'Critic' } }] });
    const got = await w!.host.waitForReceived(2);
    expect(got[1]!.mentionedAgentIds).toEqual(['critic']);
    expect(got[1]!.text).toBe('Critic please look');
  });

  for (const type of ['supergroup', 'group'] as const) {
    it(`a reply to an agent's message addresses that agent (${type})`, async () => {
      const chat = await groupWithAll(type);
      const ref = { channel: 'telegram' as const, chatId: String(chat.id) };
      await w!.channel.postAsAgent(ref, w!.agents[1]!, 'Here is my draft.');
      const post = w!.fake.postsIn(chat.id)[0]!;
      expect(post.bot).toBe(USERNAMES.writer);
      w!.fake.humanSays(chat.id, MAYA, 'Shorter please', { replyTo: post });
      const copies = await waitUntil(() => (w!.host.attempts.length >= 3 ? w!.host.attempts : undefined), 'three copies');
      for (const c of copies) expect(c.replyToAgentId).toBe('writer');
    });
  }

  it('a privacy-on bot warns in the log and in warnings(), and only sees what is meant for it', async () => {
    const log = new CapturingLogger();
    w = await makeWorld({ privacyOn: ['critic'], logger: log });
    const chat = w.fake.createGroup('Market team');
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    const warn = log.lines.filter((l) => l.level === 'warn' && /privacy/.test(String(l.msg)));
    expect(warn).toHaveLength(1);
    expect(String(warn[0]!.msg)).toContain('"critic"');
    expect(String(warn[0]!.msg)).toContain('/setprivacy');
    // Each bot heard it joined as a member, not an admin: Telegram sends none of them reactions.
    const notAdmins = /^@chorus_analyst_bot, @chorus_writer_bot, @chorus_critic_bot are not admins .*make @chorus_analyst_bot an admin to see reactions/;
    const lines = await waitUntil(() => {
      const now = w!.channel.warnings({ channel: 'telegram', chatId: String(chat.id) }, ['analyst', 'writer', 'critic']);
      return now.some((l) => notAdmins.test(l)) && now;
    }, 'the three joins');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/Critic's bot @chorus_critic_bot has privacy mode on.*\/setprivacy.*Disable.*re-add/);

    w.fake.humanSays(chat.id, MAYA, 'plain message');
    w.fake.humanSays(chat.id, MAYA, `hey @${USERNAMES.critic}`);
    // Each bot hands over in order: once every bot delivered the second message, any copy of the
    // first it was going to deliver has arrived too.
    const second = (a: { text: string }) => a.text === `hey @${USERNAMES.critic}`;
    await waitUntil(() => w!.host.attempts.filter(second).length >= 3 || undefined, 'copies of the mention');
    const byText = (t: string) => w!.host.attempts.filter((a) => a.text === t).map((a) => a.viaAgentId).sort();
    expect(byText('plain message')).toEqual(['analyst', 'writer']);
    expect(byText(`hey @${USERNAMES.critic}`)).toEqual(['analyst', 'critic', 'writer']);
  });

  it('commands arrive as text; /cmd@bot names the addressed bot on every copy', async () => {
    w = await makeWorld({ privacyOn: ['writer', 'critic'] });
    const chat = w.fake.createGroup('Market team');
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    w.fake.humanSays(chat.id, MAYA, `/group@${USERNAMES.writer} list`);
    w.fake.humanSays(chat.id, MAYA, '/ask analyst what now?');
    // The unaddressed /ask reaches all three bots; by then every copy of the first has arrived.
    await waitUntil(() => w!.host.attempts.filter((a) => a.text.startsWith('/ask')).length >= 3 || undefined, '/ask copies');
    // Privacy-off analyst and the addressed writer get /group@writer; privacy-on critic does not.
    const copies = w.host.attempts.filter((a) => a.text.startsWith('/group'));
    expect(copies).toHaveLength(2);
    expect(copies.map((c) => c.viaAgentId)).toEqual(['writer', 'writer']);
    expect(w.host.received.map((m) => m.text)).toEqual([`/group@${USERNAMES.writer} list`, '/ask analyst what now?']);
  });

  it('my_chat_member joins and leaves become membershipChanged', async () => {
    w = await makeWorld({ ids: ['analyst', 'writer', 'critic', 'editor'] });
    const chat = w.fake.createGroup('Desk');
    // The chat's group exists already: each update is its own bot's change.
    w.host.groups.set(`telegram:${chat.id}`, {
      id: 'g1', title: 'Desk', channel: 'telegram', chatId: String(chat.id), participants: ['critic'], config: {} as never, archived: false, createdAt: 0,
    });
    await w.channel.start(w.host);
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    w.fake.addBotToChat(chat.id, TOKENS.editor, MAYA);
    await waitUntil(() => w!.host.memberships.length === 2 || undefined, 'two joins');
    w.fake.removeBotFromChat(chat.id, TOKENS.editor, MAYA);
    await waitUntil(() => w!.host.memberships.length === 3 || undefined, 'one leave');
    const m = w.host.memberships;
    expect(m.map((x) => [x.chat.chatId, x.joined ?? null, x.left ?? null]).sort()).toEqual(
      [[String(chat.id), ['analyst'], null], [String(chat.id), ['editor'], null], [String(chat.id), null, ['editor']]].sort(),
    );
    expect(m.at(-1)!.left).toEqual(['editor']);
    expect(w.fake.callsOf('getChatMember')).toEqual([]);
  });

  it('bots added together to a chat with no group yet: the join that forms it names every bot already there', async () => {
    w = await makeWorld({ ids: ['analyst', 'writer', 'critic', 'editor'] });
    const chat = w.fake.createGroup('Launch');
    await w.channel.start(w.host);
    // One "add members" in Telegram: all three are in before any of their updates is read.
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await waitUntil(() => w!.host.memberships.length === 3 || undefined, 'three joins');
    // This host never forms the group, so every join asks; the router's first one forms it with all three.
    for (const m of w.host.memberships) expect([...m.joined!].sort()).toEqual(['analyst', 'critic', 'writer']);
    // The editor's bot, not in the chat, is named by none.
    expect(w.host.memberships.every((m) => !m.joined!.includes('editor'))).toBe(true);
  });

  it('a DM is a private chat of that agent, answered by its bot', async () => {
    w = await makeWorld();
    await w.channel.start(w.host);
    w.fake.humanDms(TOKENS.writer, TOM, 'hello writer');
    w.fake.humanDms(TOKENS.analyst, TOM, 'hello analyst');
    const got = await w.host.waitForReceived(2);
    const writerDm = got.find((m) => m.text === 'hello writer')!;
    expect(writerDm).toMatchObject({ isPrivate: true, viaAgentId: 'writer', chatId: `dm:writer:${TOM.id}` });
    // Two DMs with the same person are two different chats (one per agent).
    expect(got.find((m) => m.text === 'hello analyst')!.chatId).toBe(`dm:analyst:${TOM.id}`);
    const chat = { channel: 'telegram' as const, chatId: writerDm.chatId };
    await w.channel.postAsAgent(chat, w.agents[1]!, 'hi Tom', { replyToMessageId: writerDm.messageId });
    await w.channel.postAsSystem(chat, 'notice');
    expect(w.fake.postsIn(TOM.id).map((p) => [p.bot, p.text])).toEqual([[USERNAMES.writer, 'hi Tom'], [USERNAMES.writer, 'notice']]);
    expect(await w.channel.isAdmin(chat, String(TOM.id))).toBe(true);
    expect(w.channel.warnings(chat, ['writer'])).toEqual([]);
  });

  it('isAdmin asks getChatAdministrators once per minute and honours telegram.admins', async () => {
    w = await makeWorld({ admins: ['9999'] });
    const chat = w.fake.createGroup('Desk');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    w.fake.setAdmins(chat.id, [MAYA.id]);
    await w.channel.start(w.host);
    const ref = { channel: 'telegram' as const, chatId: String(chat.id), viaAgentId: 'analyst' };
    expect(await w.channel.isAdmin(ref, String(MAYA.id))).toBe(true);
    expect(await w.channel.isAdmin(ref, String(TOM.id))).toBe(false);
    expect(await w.channel.isAdmin(ref, '9999')).toBe(true);
    expect(w.fake.callsOf('getChatAdministrators')).toHaveLength(1);
  });

  it('confirms an update only after the host recorded it; a failed hand-over is redelivered', async () => {
    w = await makeWorld({ ids: ['analyst'] });
    const chat = w.fake.createGroup('Desk');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    w.host.failNext = 1;
    await w.channel.start(w.host);
    w.fake.humanSays(chat.id, MAYA, 'do not lose me');
    await w.host.waitForReceived(1, 15_000);
    expect(w.host.attempts.filter((a) => a.text === 'do not lose me')).toHaveLength(2);
    // After a clean stop everything handled is confirmed: a new adapter gets nothing again.
    await w.channel.stop();
    expect(w.fake.state.bots.get(TOKENS.analyst)!.queue).toEqual([]);
    const again = new RecordingHost(w.agents);
    const fresh = new TelegramChannel({ config: { enabled: true, api_root: w.fake.apiRoot, auto_create_groups: true, admins: [] }, agents: w.agents, logger: new CapturingLogger(), pollTimeoutSeconds: 5 });
    await fresh.start(again);
    w.fake.humanSays(chat.id, MAYA, 'after restart');
    const got = await again.waitForReceived(1);
    await fresh.stop();
    expect(got.map((m) => m.text)).toEqual(['after restart']);
  });

  it('a rejected token logs one line naming the agent, never the token; the other bots work', async () => {
    const log = new CapturingLogger();
    w = await makeWorld({ ids: ['analyst', 'writer'], logger: log });
    w.fake.revoke(TOKENS.writer);
    const chat = w.fake.createGroup('Desk');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    await w.channel.start(w.host);
    const errors = log.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(String(errors[0]!.msg)).toContain('"writer"');
    w.fake.humanSays(chat.id, MAYA, 'still here?');
    await w.host.waitForReceived(1);
    await w.channel.postAsAgent({ channel: 'telegram', chatId: String(chat.id) }, w.agents[0]!, 'yes');
    expect(w.fake.postsIn(chat.id).map((p) => p.bot)).toEqual([USERNAMES.analyst]);
    await expect(w.channel.postAsAgent({ channel: 'telegram', chatId: String(chat.id) }, w.agents[1]!, 'me too')).rejects.toThrow(/writer/);
    expect(w.channel.warnings({ channel: 'telegram', chatId: String(chat.id) }, ['writer'])[0]).toMatch(/token was rejected/);
    const all = log.text();
    for (const t of Object.values(TOKENS)) {
      expect(all).not.toContain(t);
      expect(all).not.toContain(t.split(':')[1]!);
    }
  });

  it('calls setMyCommands exactly once per bot, also across stop/start', async () => {
    w = await makeWorld();
    await w.channel.start(w.host);
    await w.channel.stop();
    await w.channel.start(w.host);
    for (const id of ['analyst', 'writer', 'critic'] as const) {
      const calls = w.fake.callsOf('setMyCommands', USERNAMES[id]);
      expect(calls).toHaveLength(1);
      expect((calls[0]!.payload.commands as Array<{ command: string }>).map((c) => c.command)).toEqual(['group', 'ask', 'stop', 'approve', 'deny', 'help']);
    }
  });
});
