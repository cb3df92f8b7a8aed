/**
 * Telegram polling mode with two instances on one database: each bot's long poll is
 * held by one instance at a time (a lease), so Telegram never sees two `getUpdates` for one token
 * (which it would end with 409 Conflict); messages are handled once; when the holder goes away,
 * the other instance takes the polls over and the bots keep answering.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { MAYA, TOKENS, USERNAMES, waitUntil } from '../channels/telegram/harness.js';
import { telegramCluster } from './telegramCluster.js';

const BOTS = ['analyst', 'writer'] as const;
const cluster = telegramCluster('tgpoll', BOTS);
const instance = (id: string) => cluster.instance(id);

describe('Telegram long polls with two instances (PostgreSQL)', () => {
  it('one poller per bot, messages handled once, polls fail over', async (ctx) => {
    if (!cluster.db) return ctx.skip();
    const fake = cluster.fake;
    // Telegram ends an open long poll with 409 when a second getUpdates for the token arrives.
    const conflicts: string[] = [];
    let phase = 'start';
    const endPoll = fake.state.endPoll.bind(fake.state);
    fake.state.endPoll = ((bot: Parameters<typeof endPoll>[0], result: Parameters<typeof endPoll>[1]) => {
      if (JSON.stringify(result).includes('Conflict: terminated by other getUpdates')) conflicts.push(`${phase}: @${bot.username}`);
      return endPoll(bot, result);
    }) as typeof endPoll;

    const [a, b] = await Promise.all([instance('a'), instance('b')]);
    const holders = () => [...(a.cluster!.status().connections ?? []).map((k) => `a ${k}`), ...(b.cluster!.status().connections ?? []).map((k) => `b ${k}`)].sort();
    await waitUntil(() => holders().length === 2 || undefined, 'both polls held', 20_000);
    const keys = holders().map((h) => h.split(' ')[1]).sort();
    expect(keys).toEqual(['telegram:analyst', 'telegram:writer']);

    const chat = fake.createGroup('Ops');
    for (const id of BOTS) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    const group = await waitUntil(() => a.gateway.listGroups().concat(b.gateway.listGroups()).find((g) => g.chatId === String(chat.id) && g.participants.length === 2), 'group of two', 20_000);
    fake.humanSays(chat.id, MAYA, '@analyst status?');
    await waitUntil(() => fake.postsIn(chat.id).filter((p) => p.bot === USERNAMES.analyst && p.text.startsWith('analyst here')).length >= 1 || undefined, 'analyst reply', 20_000);

    // The instance holding the polls goes away (its pollers stop, it renews nothing more).
    phase = 'failover';
    const holder = holders().some((h) => h.startsWith('a ')) ? a : b;
    const other = holder === a ? b : a;
    holder.cluster!.stopTaking();
    // (Its own last getUpdates, sent on stop to confirm what it handled, may end its own long poll
    // whose closing the fake has not seen yet: that is one instance, not two.)
    phase = 'stopping';
    for (const c of holder.channels) await c.stop();
    phase = 'after';
    await waitUntil(() => (other.cluster!.status().connections?.length === 2 ? true : undefined), 'the other instance to take both polls', 20_000);
    fake.humanSays(chat.id, MAYA, '@writer and you?');
    await waitUntil(() => fake.postsIn(chat.id).filter((p) => p.bot === USERNAMES.writer && p.text.startsWith('writer here')).length >= 1 || undefined, 'writer reply after failover', 20_000);

    // Each message answered once, and no two instances ever polled one token at once.
    // (The analyst may also answer the second message: it is the sticky speaker.)
    const posts = fake.postsIn(chat.id).filter((p) => / here \(/.test(p.text));
    expect(posts.filter((p) => p.bot === USERNAMES.writer)).toHaveLength(1);
    expect(new Set(posts.map((p) => p.text)).size).toBe(posts.length);
    const humans = (await (holder === a ? b : a).gateway.messages(group.id, { limit: 50 })).filter((e) => e.kind === 'human');
    expect(humans.map((e) => e.text)).toEqual(['@analyst status?', '@writer and you?']);
    expect(conflicts.filter((c) => !c.startsWith('stopping'))).toEqual([]);
  }, 90_000);
});
