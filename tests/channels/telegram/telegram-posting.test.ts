/**
 * Outbound Telegram traffic against the fake Bot API: split at 4096, 429 storms, parse-mode
 * fallback, forum topics, replies, group → supergroup migration, system voice and typing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../../src/core/types.js';
import { makeWorld, MAYA, TOKENS, USERNAMES, waitUntil, type World } from './harness.js';

describe('telegram adapter: posting', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function setup(type: 'group' | 'supergroup' = 'supergroup', forum = false) {
    w = await makeWorld();
    const chat = w.fake.createGroup('Market team', { type, forum });
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    const ref: ChatRef = { channel: 'telegram', chatId: String(chat.id) };
    return { chat, ref, analyst: w.agents[0]!, writer: w.agents[1]!, critic: w.agents[2]! };
  }

  it('splits a 6,000-character reply into two messages from the agent bot', async () => {
    const { chat, ref, analyst } = await setup();
    const paragraphs = Array.from({ length: 60 }, (_, i) => `Paragraph ${i}: ${'revenue grew '.repeat(7)}`.trim());
    const text = paragraphs.join('\n\n').slice(0, 6000);
    expect(text.length).toBe(6000);
    const res = await w!.channel.postAsAgent(ref, analyst, text);
    const posts = w!.fake.postsIn(chat.id);
    expect(res.ids).toEqual(posts.map((p) => String(p.messageId)));
    expect(posts).toHaveLength(2);
    expect(posts.every((p) => p.bot === USERNAMES.analyst && p.text.length <= 4096)).toBe(true);
    expect(posts.map((p) => p.text).join('').replace(/\s+/g, '')).toBe(text.replace(/\s+/g, ''));
  });

  it('a 429 storm delivers every post once and in order (auto-retry waits retry_after)', async () => {
    const { chat, ref, analyst, writer, critic } = await setup();
    w!.fake.rateLimit('sendMessage', 3, 1);
    const speakers = [analyst, writer, critic, analyst, writer];
    // All posts are requested at once, as parallel turns would; the chat sees them in call order.
    const results = await Promise.all(speakers.map((a, i) => w!.channel.postAsAgent(ref, a, `reply ${i} from ${a.id}`)));
    const posts = w!.fake.postsIn(chat.id);
    expect(posts.map((p) => p.text)).toEqual(speakers.map((a, i) => `reply ${i} from ${a.id}`));
    expect(posts.map((p) => p.bot)).toEqual(speakers.map((a) => USERNAMES[a.id as 'analyst']));
    expect(results.map((r) => r.ids.length)).toEqual([1, 1, 1, 1, 1]);
    expect(w!.fake.callsOf('sendMessage').length).toBe(5 + 3);
  });

  it('renders markdown as HTML and falls back to plain text when Telegram cannot parse it', async () => {
    const { chat, ref, analyst } = await setup();
    await w!.channel.postAsAgent(ref, analyst, 'AAPL is **up** 3% <b>&</b> `a<b`');
    expect(w!.fake.postsIn(chat.id)[0]).toMatchObject({ parseMode: 'HTML', text: 'AAPL is up 3% <b>&</b> a<b' });
    w!.fake.failNext('sendMessage', 1, { error_code: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 3" }, { when: (p) => p.parse_mode === 'HTML' });
    const res = await w!.channel.postAsAgent(ref, analyst, 'Second **reply**');
    const last = w!.fake.postsIn(chat.id).at(-1)!;
    expect(last).toMatchObject({ parseMode: undefined, text: 'Second **reply**' });
    expect(res.ids).toEqual([String(last.messageId)]);
    expect(w!.fake.postsIn(chat.id)).toHaveLength(2);
  });

  it('keeps forum topics: the inbound threadId, and replies land in the same topic', async () => {
    const { chat, analyst } = await setup('supergroup', true);
    const topic = w!.fake.createTopic(chat.id, 'Earnings');
    const human = w!.fake.humanSays(chat.id, MAYA, 'AAPL numbers?', { threadId: topic });
    const [msg] = await w!.host.waitForReceived(1);
    expect(msg).toMatchObject({ threadId: String(topic), messageId: String(human.messageId) });
    // The topic's root is not a reply to anyone.
    expect(msg!.replyToAgentId).toBeUndefined();
    const ref: ChatRef = { channel: 'telegram', chatId: msg!.chatId, threadId: msg!.threadId };
    await w!.channel.postAsAgent(ref, analyst, 'Up 8%.', { replyToMessageId: msg!.messageId });
    const stop = w!.channel.startTyping(ref, analyst);
    stop();
    expect(w!.fake.postsIn(chat.id)[0]).toMatchObject({ threadId: topic, replyToMessageId: human.messageId, bot: USERNAMES.analyst });
    const typing = await waitUntil(() => w!.fake.callsOf('sendChatAction', USERNAMES.analyst)[0], 'typing');
    expect(typing.payload).toMatchObject({ chat_id: chat.id, action: 'typing', message_thread_id: topic });
  });

  it('replies to the human message in a basic group using each bot\'s own message id', async () => {
    const { chat, writer } = await setup('group');
    const human = w!.fake.humanSays(chat.id, MAYA, 'Draft please');
    await waitUntil(() => w!.host.attempts.length >= 3 || undefined, 'three copies');
    const msg = w!.host.received[0]!;
    await w!.channel.postAsAgent({ channel: 'telegram', chatId: msg.chatId }, writer, 'Draft: ...', { replyToMessageId: msg.messageId });
    const post = w!.fake.postsIn(chat.id)[0]!;
    const writerView = w!.fake.state.idFor(human.rec, TOKENS.writer);
    expect(post.replyToMessageId).toBe(writerView);
  });

  it('a migration service message re-keys once, and later posts go to the supergroup', async () => {
    const { chat, ref, analyst } = await setup('group');
    const newId = w!.fake.migrate(chat.id);
    await waitUntil(() => w!.host.rekeys.length >= 1 || undefined, 'rekey');
    await new Promise((r) => setTimeout(r, 200));
    expect(w!.host.rekeys).toEqual([{ from: String(chat.id), to: String(newId) }]);
    await w!.channel.postAsAgent(ref, analyst, 'after the upgrade');
    expect(w!.fake.postsIn(newId).map((p) => p.text)).toEqual(['after the upgrade']);
  });

  it('a send answered with migrate_to_chat_id re-keys and resends to the new chat', async () => {
    const { chat, ref, writer } = await setup('group');
    const newId = w!.fake.migrate(chat.id, { notify: false });
    await w!.channel.postAsAgent(ref, writer, 'first after upgrade');
    await w!.channel.postAsSystem(ref, 'system after upgrade');
    expect(w!.host.rekeys).toEqual([{ from: String(chat.id), to: String(newId) }]);
    expect(w!.fake.postsIn(newId).map((p) => p.text)).toEqual(['first after upgrade', 'system after upgrade']);
    expect(w!.fake.postsIn(chat.id)).toEqual([]);
  });

  it('the system voice uses the addressed bot, else the first participant whose bot can post', async () => {
    const { chat, ref } = await setup();
    await w!.channel.postAsSystem({ ...ref, viaAgentId: 'critic' }, 'via critic');
    w!.host.groups.set(`telegram:${chat.id}`, {
      id: 'g1', title: 'Market team', channel: 'telegram', chatId: String(chat.id), participants: ['writer', 'analyst'],
      config: {} as never, archived: false, createdAt: 0,
    });
    await w!.channel.postAsSystem(ref, 'first participant');
    // The writer's bot was removed from the chat: the next participant's bot speaks instead.
    w!.fake.removeBotFromChat(chat.id, TOKENS.writer, MAYA);
    await w!.channel.postAsSystem(ref, 'writer is gone');
    expect(w!.fake.postsIn(chat.id).map((p) => [p.bot, p.text])).toEqual([
      [USERNAMES.critic, 'via critic'],
      [USERNAMES.writer, 'first participant'],
      [USERNAMES.analyst, 'writer is gone'],
    ]);
  });

  it('typing repeats until stopped and never throws', async () => {
    const { chat, ref, critic } = await setup();
    const stop = w!.channel.startTyping(ref, critic);
    await waitUntil(() => w!.fake.callsOf('sendChatAction', USERNAMES.critic).length >= 1 || undefined, 'first typing');
    stop();
    stop();
    const n = w!.fake.callsOf('sendChatAction').length;
    expect(n).toBe(1);
    // A chat that does not exist: the API says 400, typing stays silent.
    const bad = w!.channel.startTyping({ channel: 'telegram', chatId: '-999' }, critic);
    bad();
    expect(w!.fake.callsOf('sendChatAction', USERNAMES.critic)[0]!.payload).toMatchObject({ chat_id: chat.id });
  });
});
