/**
 * Reactions a platform reports by its own message ids (`ChannelHost.reacted`): found on a person's
 * message or on an agent's posted reply, also one older than the in-memory tail; a message Chorus
 * does not know and an emoji it does not take are ignored without a failure.
 */
import { describe, expect, it } from 'vitest';
import { makeRouter } from '../helpers/router-harness.js';

describe('reactions reported by a platform', () => {
  it('lands on the person\'s message and on the agent\'s posted reply, and is taken back', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' } });
    await h.say('@analyst how are the numbers?');
    const reply = h.transcript().find((e) => e.kind === 'agent')!;
    const posted = reply.postedIds![0]!;
    const by = { id: '42', name: 'Sam' };
    await h.router.handle({ kind: 'reaction', reaction: { channel: 'web', chatId: h.group.chatId, platformMessageId: 'm1', by, emoji: '👍', on: true } });
    await h.router.handle({ kind: 'reaction', reaction: { channel: 'web', chatId: h.group.chatId, platformMessageId: posted, by, emoji: '🎉', on: true } });
    const t = h.transcript();
    expect(t.find((e) => e.platformMessageId === 'm1')!.reactions).toMatchObject([{ emoji: '👍', by: 'Sam', byKey: 'web:42' }]);
    expect(t.find((e) => e.id === reply.id)!.reactions).toMatchObject([{ emoji: '🎉', by: 'Sam', byKey: 'web:42' }]);
    await h.router.handle({ kind: 'reaction', reaction: { channel: 'web', chatId: h.group.chatId, platformMessageId: posted, by, emoji: '🎉', on: false } });
    expect(h.transcript().find((e) => e.id === reply.id)!.reactions ?? []).toEqual([]);
    // Nothing to answer: a reaction never starts a round.
    expect(h.router.groups.get('room')!.rounds).toEqual([]);
    await h.router.stop();
  });

  it('finds a message older than the in-memory tail; ignores unknown messages and emoji it does not take', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' } });
    await h.say('first message');
    for (let i = 0; i < 120; i++) await h.router.handle({ kind: 'message', message: h.message(`filler ${i}`) });
    await h.router.idle();
    expect(h.transcript().some((e) => e.platformMessageId === 'm1')).toBe(false);
    const by = { id: '7', name: 'Ana' };
    await h.router.handle({ kind: 'reaction', reaction: { channel: 'web', chatId: h.group.chatId, platformMessageId: 'm1', by, emoji: '❤️', on: true } });
    const [first] = await h.router.gateway.messages('room', { before: 2, limit: 1 });
    expect(first!.reactions).toMatchObject([{ emoji: '❤️', by: 'Ana' }]);
    await h.router.handle({ kind: 'reaction', reaction: { channel: 'web', chatId: h.group.chatId, platformMessageId: 'nope', by, emoji: '👍', on: true } });
    await h.router.handle({ kind: 'reaction', reaction: { channel: 'web', chatId: h.group.chatId, platformMessageId: 'm2', by, emoji: 'not an emoji', on: true } });
    expect((await h.fullTranscript()).find((e) => e.platformMessageId === 'm2')!.reactions ?? []).toEqual([]);
    await h.router.stop();
  });
});
