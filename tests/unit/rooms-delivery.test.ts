/**
 * A room in three chats (the web room at home, a Telegram group and a Discord channel linked):
 * people relayed under their names, agents posting in every chat, each chat's own delivery queue
 * (one chat down holds back nothing else, then gets its backlog in order, once), what the log
 * records of every copy, edits carried across, replies threaded to the same entry everywhere.
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import { agentsFromConfig } from '../../src/app.js';
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import type { ChannelKind, InboundMessage } from '../../src/core/types.js';
import { FakeChannel } from '../helpers/fake-channel.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { AGENTS_YAML } from '../helpers/router-harness.js';

const TG = '-1001234';
const DC = '5566';

async function room(store = new MemoryStore(), clock = new FakeClock()) {
  const { config } = parseConfigText(AGENTS_YAML + '\nllm: { provider: scripted }\n', 'test');
  const router = new GroupRouter({
    agents: agentsFromConfig(config),
    aliases: config.aliases,
    groupDefaults: { ...config.group_defaults, cooldown_seconds: 0, reply_strategy: 'mention_only' },
    limits: { user_messages_per_minute: 1000, max_message_chars: 8000, bot_pair_events_per_minute: 2 },
    llm: new FakeLlm(),
    llmSettings: { model: 'test-model', summaryModel: 'test-small', maxTokens: 256, maxConcurrency: 4, contextTokens: null, defaultContextTokens: 200_000 },
    validateConfig: validateGroupConfig,
    store,
    clock,
    logger: silentLogger,
  });
  const chans = { web: new FakeChannel('web'), telegram: new FakeChannel('telegram'), discord: new FakeChannel('discord') };
  for (const c of Object.values(chans)) router.addChannel(c);
  await router.start();
  for (const c of Object.values(chans)) await c.start(router);
  if (!router.gateway.getGroup('room')) {
    await router.gateway.createGroup({ title: 'Team', participants: ['analyst', 'writer'], id: 'room' });
    const g = router.groups.get('room')!;
    // What `/group link` does once both sides agreed (tests/unit/rooms-link.test.ts covers the codes),
    // as a task of the group's mailbox like every change.
    await router.mailbox.send(g.id, async () => {
      router.groups.link(g, { channel: 'telegram', chatId: TG, title: 'Team chat', at: clock.now() });
      router.groups.link(g, { channel: 'discord', chatId: DC, title: '#general', at: clock.now() });
      await router.groups.commit(g).durable;
    });
  }
  let n = 0;
  const msg = (channel: ChannelKind, text: string, extra: Partial<InboundMessage> = {}): InboundMessage => ({
    channel,
    chatId: channel === 'web' ? 'room' : channel === 'telegram' ? TG : DC,
    messageId: `${channel}-${++n}`,
    author: { id: `${channel}-maya`, name: 'Maya' },
    text,
    ts: clock.now(),
    ...extra,
  });
  /** Every queue has posted what it can (a chat that is down keeps waiting). */
  const settle = async () => {
    await router.idle();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    await router.groups.settle();
  };
  return { router, chans, clock, store, msg, settle, g: () => router.groups.get('room')! };
}

describe('a room across three chats', () => {
  it('relays a person to the other chats under their name and posts the agent in all of them', async () => {
    const r = await room();
    const res = await r.router.handle({ kind: 'message', message: r.msg('telegram', '@analyst what is 2+2?') });
    expect(res.status).toBe('recorded');
    await r.settle();
    // The person: relayed to Discord (not back to Telegram; the web shows the transcript).
    expect(r.chans.discord.relayed.map((p) => [p.from.name, p.from.platform, p.text])).toEqual([['Maya', 'telegram', '@analyst what is 2+2?']]);
    expect(r.chans.telegram.relayed).toEqual([]);
    // The agent: in the web room (home) and in both linked chats, under its own identity.
    for (const c of [r.chans.web, r.chans.telegram, r.chans.discord]) expect(c.posts.filter((p) => p.agentId === 'analyst')).toHaveLength(1);
    // The reply threads to the person's message in each chat: the original on Telegram, the relayed copy on Discord.
    expect(r.chans.telegram.posts.find((p) => p.agentId === 'analyst')!.replyTo).toBe('telegram-1');
    expect(r.chans.discord.posts.find((p) => p.agentId === 'analyst')!.replyTo).toBe(r.chans.discord.relayed[0]!.id);
    // The log keeps each copy's outcome.
    const entries = await r.store.readEntries('room', { afterSeq: 0, limit: 50 });
    const human = entries.find((e) => e.kind === 'human')!;
    expect(human.origin).toEqual({ channel: 'telegram', chatId: TG });
    expect(human.copies).toEqual({ [`discord:${DC}`]: { delivery: 'posted', ids: [r.chans.discord.relayed[0]!.id] } });
    const reply = entries.find((e) => e.kind === 'agent')!;
    expect(reply.delivery).toBe('posted');
    expect(Object.values(reply.copies!).map((c) => c.delivery)).toEqual(['posted', 'posted']);
  });

  it('a chat that is down holds back nothing elsewhere and gets its backlog in order, once', async () => {
    const r = await room();
    r.chans.discord.failPosts = true;
    for (const t of ['@analyst one', '@writer two', '@analyst three']) await r.router.handle({ kind: 'message', message: r.msg('web', t) });
    await r.settle();
    // Telegram has everything (three people's messages and three replies), in transcript order.
    expect(r.chans.telegram.relayed.map((p) => p.text)).toEqual(['@analyst one', '@writer two', '@analyst three']);
    expect(r.chans.telegram.posts.filter((p) => p.agentId)).toHaveLength(3);
    expect(r.chans.discord.relayed).toEqual([]);
    // Discord comes back: its queue, pausing between attempts, delivers the backlog.
    r.chans.discord.failPosts = false;
    for (let i = 0; i < 8 && r.chans.discord.relayed.length + r.chans.discord.posts.length < 6; i++) {
      await r.clock.advance(30_000);
      await r.settle();
    }
    const order = [...r.chans.discord.relayed.map((p) => ({ id: Number(p.id.slice(1)), what: p.text })), ...r.chans.discord.posts.map((p) => ({ id: Number(p.id.slice(1)), what: p.agentId! }))].sort((a, b) => a.id - b.id).map((x) => x.what);
    const expected = (await r.store.readEntries('room', { afterSeq: 0, limit: 50 })).filter((e) => e.kind === 'human' || e.kind === 'agent').map((e) => (e.kind === 'human' ? e.text : e.agentId!));
    expect(order).toEqual(expected);
    // Every copy is recorded as posted; nothing is owed any more.
    expect(r.g().undelivered).toEqual([]);
  });

  it('after a restart nothing is posted again, and what was owed is posted', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const a = await room(store, clock);
    a.chans.telegram.failPosts = true;
    await a.router.handle({ kind: 'message', message: a.msg('discord', '@writer hello') });
    await a.settle();
    expect(a.chans.telegram.relayed).toEqual([]);
    await a.router.stop();
    const b = await room(store, clock);
    await b.settle();
    // Telegram gets the relayed person and the reply; the others get nothing twice.
    expect(b.chans.telegram.relayed.map((p) => p.text)).toEqual(['@writer hello']);
    expect(b.chans.telegram.posts.filter((p) => p.agentId === 'writer')).toHaveLength(1);
    expect(b.chans.discord.posts).toEqual([]);
    expect(b.chans.web.posts).toEqual([]);
    expect(b.g().undelivered).toEqual([]);
  });

  it('an edit and a deletion reach the copies; an edit on a platform changes the entry', async () => {
    const r = await room();
    await r.router.handle({ kind: 'message', message: r.msg('telegram', 'first draft') });
    await r.settle();
    const entry = r.g().transcript.find((e) => e.kind === 'human')!;
    await r.router.handle({ kind: 'edit', edit: { channel: 'telegram', chatId: TG, platformMessageId: 'telegram-1', author: { id: 'telegram-maya', name: 'Maya' }, text: 'second draft' } });
    await r.settle();
    expect(r.g().transcript.find((e) => e.id === entry.id)!.text).toBe('second draft');
    expect(r.chans.discord.changed).toEqual([{ chatId: DC, ids: [r.chans.discord.relayed[0]!.id], by: { relayed: { name: 'Maya', platform: 'telegram', kind: 'person' } }, text: 'second draft' }]);
    // Someone else's edit of it changes nothing.
    await r.router.handle({ kind: 'edit', edit: { channel: 'telegram', chatId: TG, platformMessageId: 'telegram-1', author: { id: 'someone', name: 'Sam' }, text: 'hijacked' } });
    expect(r.g().transcript.find((e) => e.id === entry.id)!.text).toBe('second draft');
    await r.router.handle({ kind: 'edit', edit: { channel: 'telegram', chatId: TG, platformMessageId: 'telegram-1', author: { id: 'telegram-maya', name: 'Maya' }, deleted: true } });
    await r.settle();
    expect(r.chans.discord.changed.at(-1)).toMatchObject({ deleted: true, ids: [r.chans.discord.relayed[0]!.id] });
    expect(r.g().state.carry).toBeUndefined();
  });

  it('a reply on one platform to a copy is a reply to the same entry, and addresses its agent', async () => {
    const r = await room();
    await r.router.handle({ kind: 'message', message: r.msg('web', '@analyst hi') });
    await r.settle();
    const copyOnDiscord = r.chans.discord.posts.find((p) => p.agentId === 'analyst')!;
    await r.router.handle({ kind: 'message', message: r.msg('discord', 'and why?', { replyToPlatformId: copyOnDiscord.id }) });
    await r.settle();
    const human = r.g().transcript.filter((e) => e.kind === 'human').at(-1)!;
    const reply = r.g().transcript.find((e) => e.kind === 'agent')!;
    expect(human.replyTo).toBe(reply.id);
    // Addressed through the reply: the analyst answers again, in every chat.
    expect(r.chans.telegram.posts.filter((p) => p.agentId === 'analyst')).toHaveLength(2);
    // The relayed copy on Telegram threads to the analyst's message there.
    expect(r.chans.telegram.relayed.at(-1)!.replyTo).toBe(r.chans.telegram.posts.find((p) => p.agentId === 'analyst')!.id);
  });

  it('a bot that is not an agent is answered within its budget, then not until a person writes', async () => {
    const r = await room();
    const bot = { author: { id: 'helperbot', name: 'HelperBot' }, authorKind: 'bot' as const };
    // One at a time, as a bot answering each answer would.
    for (let i = 0; i < 4; i++) {
      await r.router.handle({ kind: 'message', message: r.msg('telegram', `@analyst ping ${i}`, bot) });
      await r.settle();
    }
    // Two answers a minute for this pair (the test's limit): the other two messages are kept, not answered.
    expect(r.chans.web.posts.filter((p) => p.agentId === 'analyst')).toHaveLength(2);
    const humans = r.g().transcript.filter((e) => e.kind === 'human');
    expect(humans).toHaveLength(4);
    expect(humans.every((e) => e.authorKind === 'bot')).toBe(true);
    // Its copies in the room's other chat have the same budget: two, the rest stay where they were written.
    expect(r.chans.discord.relayed.map((p) => p.text)).toEqual(['@analyst ping 0', '@analyst ping 1']);
    // A minute later the pair is still stopped: a window that refills would let the exchange start again.
    await r.clock.advance(61_000);
    await r.router.handle({ kind: 'message', message: r.msg('telegram', '@analyst again', bot) });
    await r.settle();
    expect(r.chans.web.posts.filter((p) => p.agentId === 'analyst')).toHaveLength(2);
    expect(r.chans.discord.relayed).toHaveLength(2);
    // A person writes: the bot is answered and copied again.
    await r.router.handle({ kind: 'message', message: r.msg('discord', 'hello everyone') });
    await r.router.handle({ kind: 'message', message: r.msg('telegram', '@analyst and now?', bot) });
    await r.settle();
    expect(r.chans.web.posts.filter((p) => p.agentId === 'analyst')).toHaveLength(3);
    expect(r.chans.discord.relayed.map((p) => p.text).at(-1)).toBe('@analyst and now?');
  });
});
