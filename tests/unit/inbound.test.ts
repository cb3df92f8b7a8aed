/**
 * Inbound messages: one memory of messages taken before (durable per group, bounded for chats
 * without a group), and the intents a message is classified into.
 */
import { describe, expect, it } from 'vitest';
import { makeRouter } from '../helpers/router-harness.js';

describe('messages taken before', () => {
  it('a redelivered message is a duplicate, also after a restart on the same store', async () => {
    const h = await makeRouter({ participants: ['analyst'] });
    const m = h.message('@analyst hello');
    expect((await h.router.receive(m)).status).toBe('recorded');
    expect(await h.router.receive({ ...m })).toMatchObject({ status: 'duplicate', groupId: h.group.id });
    await h.router.idle();
    await h.router.stop();

    const again = await makeRouter({ store: h.store, participants: ['analyst'] });
    expect(await again.router.receive({ ...m })).toMatchObject({ status: 'duplicate', groupId: h.group.id });
    const log = await again.fullTranscript();
    expect(log.filter((e) => e.platformMessageId === m.messageId)).toHaveLength(1);
  });

  it('copies of one message arriving together (one per bot) are recorded once', async () => {
    const h = await makeRouter();
    const m = h.message('@analyst hi, all of you');
    const results = await Promise.all(['analyst', 'writer', 'critic'].map((via) => h.router.receive({ ...m, viaAgentId: via })));
    expect(results.map((r) => r.status).sort()).toEqual(['duplicate', 'duplicate', 'recorded']);
    await h.router.idle();
    expect((await h.fullTranscript()).filter((e) => e.platformMessageId === m.messageId)).toHaveLength(1);
  });

  it('a command handled before its chat had a group stays a duplicate once the chat has one', async () => {
    const h = await makeRouter();
    const help = h.message('/help', { chatId: 'new-chat', viaAgentId: 'analyst' });
    expect((await h.router.receive(help)).status).toBe('command');
    await h.router.receive(h.message('/group create analyst', { chatId: 'new-chat' }));
    const group = h.router.findGroup('web', 'new-chat');
    expect(group).toBeDefined();
    // The same /help as another bot saw it.
    expect(await h.router.receive({ ...help, viaAgentId: 'writer' })).toMatchObject({ status: 'duplicate', groupId: group!.id });
  });
});

describe('what a message is', () => {
  it('a message in a chat without a group is refused; a private one to an agent opens its group', async () => {
    const h = await makeRouter();
    expect((await h.router.receive(h.message('hello?', { chatId: 'nowhere' }))).status).toBe('no_group');
    const dm = await h.router.receive(h.message('hi there', { chatId: 'dm-1', isPrivate: true, viaAgentId: 'writer' }));
    expect(dm.status).toBe('recorded');
    await h.router.idle();
    const g = h.router.groups.get(dm.groupId!)!;
    expect(g.participants).toEqual(['writer']);
  });

  it('a message over the length limit is refused with a notice in the chat', async () => {
    const h = await makeRouter({ limits: { user_messages_per_minute: 1000, max_message_chars: 10 } });
    const long = await h.router.receive(h.message('far too long for the limit'));
    expect(long).toMatchObject({ status: 'rejected', code: 'too_long' });
    expect(h.transcript().at(-1)?.text).toMatch(/too long/);
  });
});
