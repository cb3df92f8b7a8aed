/**
 * What every channel adapter keeps, run on Telegram, Discord and the web against their fakes:
 * each method of the `Channel` port, and each kind of `PlatformEvent` the platform reports, handed
 * to the host through its one method. A platform that never reports a kind (Telegram tells bots of
 * no deletion; a Discord channel has no bot members; web chats keep their ids) shows it as skipped.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PlatformEvent } from '../../src/core/ports.js';
import { CHANNELS, recordEvents, type ConformanceHarness } from './harnesses.js';

async function until<T>(probe: () => T | undefined | null | false, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ofKind = <K extends PlatformEvent['kind']>(events: PlatformEvent[], kind: K) => events.filter((e): e is Extract<PlatformEvent, { kind: K }> => e.kind === kind);
/**
 * The messages handed over, once each: where several of the agents' bots see one message
 * (Telegram), each hands it over with the same key and the host answers the copies `duplicate`.
 */
const messages = (events: PlatformEvent[]) => {
  const byKey = new Map(ofKind(events, 'message').map((e) => [`${e.message.chatId}:${e.message.messageId}`, e.message]));
  return [...byKey.values()];
};

describe.each(CHANNELS)('channel conformance: $name', (c) => {
  let h: ConformanceHarness | undefined;
  let events: PlatformEvent[] = [];
  afterEach(async () => {
    await h?.channel.stop();
    await h?.close();
    h = undefined;
  });
  async function started(): Promise<ConformanceHarness> {
    h = await c.make();
    events = recordEvents(h.host);
    await h.channel.start(h.host);
    return h;
  }
  const says = async (text: string) => {
    const id = await h!.humanSays(text);
    await until(() => messages(events).some((m) => m.messageId === id), `"${text}" handed over`);
    return id;
  };

  it('start and stop are idempotent; a message after a restart is handed over', async () => {
    h = await c.make();
    events = recordEvents(h.host);
    await h.channel.start(h.host);
    await h.channel.start(h.host);
    await h.channel.stop();
    await h.channel.stop();
    await h.channel.start(h.host);
    await says('still here after a restart');
    expect(messages(events).map((m) => m.text)).toEqual(['still here after a restart']);
  });

  it('message: normalised and handed over as a message event, every copy under one key', async () => {
    await started();
    const text = `hello @${h!.agent.id}`;
    const id = await says(text);
    const [msg] = messages(events);
    expect(msg).toMatchObject({ channel: c.name, chatId: h!.chat.chatId, messageId: id, text });
    expect(msg!.author.id).toBeTruthy();
    expect(msg!.author.name).toBeTruthy();
    expect(typeof msg!.ts).toBe('number');
    for (const copy of ofKind(events, 'message')) expect(copy.message).toMatchObject({ chatId: msg!.chatId, messageId: id, text });
  });

  it('postAsAgent: split to the platform limit, one id per piece, under the agent\'s name, never handed back', async () => {
    await started();
    const limit = h!.channel.capabilities.maxMessageLength;
    const long = Array.from({ length: Math.ceil((limit * 1.5) / 60) }, (_, i) => `line ${i} `.padEnd(59, '.')).join('\n');
    const res = await h!.channel.postAsAgent(h!.chat, h!.agent, long);
    expect(res.ids).toHaveLength(2);
    expect(new Set(res.ids).size).toBe(2);
    const shown = h!.shown();
    if (shown) {
      const mine = shown.filter((p) => p.author === h!.agent.name);
      expect(mine.map((p) => p.id)).toEqual(res.ids);
      expect(mine.every((p) => p.text.length <= limit)).toBe(true);
      expect(mine.map((p) => p.text).join('').replace(/\s+/g, '')).toBe(long.replace(/\s+/g, ''));
    }
    // The channel's own posts never come back as messages: the next one handed over is the person's.
    await says('marker after the posts');
    expect(messages(events).map((m) => m.text)).toEqual(['marker after the posts']);
  });

  it('postAsSystem: the system voice, not the agent', async () => {
    await started();
    const res = await h!.channel.postAsSystem(h!.chat, 'system notice');
    expect(res.ids).toHaveLength(1);
    const shown = h!.shown();
    if (shown) expect(shown.find((p) => p.id === res.ids[0])).toMatchObject({ text: 'system notice', author: expect.not.stringMatching(new RegExp(`^${h!.agent.name}$`)) });
  });

  it('relay: a person of another chat under their own name, never as an agent, never handed back', async () => {
    await started();
    const res = await h!.channel.relay(h!.chat, { name: 'Ann', platform: 'web', kind: 'person' }, 'hello from the page');
    expect(res.ids.length).toBeGreaterThanOrEqual(1);
    const shown = h!.shown();
    if (shown) {
      const post = shown.find((p) => p.id === res.ids[0])!;
      expect(post.text).toContain('hello from the page');
      expect(`${post.author} ${post.text}`).toContain('Ann');
      expect(post.author).not.toBe(h!.agent.name);
    }
    await says('marker after the relay');
    expect(messages(events).map((m) => m.text)).toEqual(['marker after the relay']);
  });

  it('editPosted and deletePosted: what the channel posted follows', async () => {
    await started();
    const res = await h!.channel.postAsAgent(h!.chat, h!.agent, 'first version');
    await h!.channel.editPosted(h!.chat, res.ids, { agentId: h!.agent.id }, 'second version', res.via);
    if (h!.shown()) expect(h!.shown()!.find((p) => p.id === res.ids[0])?.text).toBe('second version');
    await h!.channel.deletePosted(h!.chat, res.ids, { agentId: h!.agent.id }, res.via);
    if (h!.shown()) expect(h!.shown()!.some((p) => p.id === res.ids[0])).toBe(false);
  });

  it('react: an agent\'s reaction is shown and taken back; a message that is not there is false, never thrown', async () => {
    await started();
    const id = await says('numbers are in');
    expect(await h!.channel.react(h!.chat, h!.agent, id, '👍', true)).toBe(true);
    if (h!.agentReactions(id) === null) return; // the page shows reactions from the transcript
    await until(() => h!.agentReactions(id)!.includes('👍'), 'the reaction shown');
    expect(await h!.channel.react(h!.chat, h!.agent, id, '👍', false)).toBe(true);
    await until(() => !h!.agentReactions(id)!.includes('👍'), 'the reaction taken back');
    expect(await h!.channel.react(h!.chat, h!.agent, '999999999', '👍', true)).toBe(false);
  });

  it('startTyping: shown until stopped; stopping twice, or an unknown chat, never throws', async () => {
    await started();
    const stop = h!.channel.startTyping(h!.chat, h!.agent);
    if (h!.typingSignals() !== null) await until(() => h!.typingSignals()! >= 1, 'a typing signal');
    stop();
    stop();
    h!.channel.startTyping({ channel: c.name, chatId: '424242' }, h!.agent)();
  });

  it('isAdmin: a chat admin may run admin commands, another person may not', async () => {
    await started();
    expect(await h!.channel.isAdmin(h!.chat, h!.admin)).toBe(true);
    // On the web the holder of the token is the admin, whatever name they type.
    expect(await h!.channel.isAdmin(h!.chat, h!.notAdmin ?? 'anyone')).toBe(h!.notAdmin === null);
  });

  it('warnings and status: a list of problems for a chat, never thrown; connected once started', async () => {
    await started();
    expect(Array.isArray(h!.channel.warnings(h!.chat, [h!.agent.id, 'nobody-configured']))).toBe(true);
    if (h!.channel.status) await until(() => h!.channel.status!().ok, 'connected');
    await h!.channel.stop();
    expect(Array.isArray(h!.channel.warnings(h!.chat, [h!.agent.id]))).toBe(true);
  });

  it.skipIf(!c.reports.has('edit'))('edit: a person\'s edit is handed over as an edit of that message', async () => {
    await started();
    const id = await says('typo heer');
    await h!.edit!(id, 'typo here');
    const edit = await until(() => ofKind(events, 'edit')[0], 'the edit');
    expect(edit.edit).toMatchObject({ channel: c.name, chatId: h!.chat.chatId, platformMessageId: id, text: 'typo here' });
    expect(edit.edit.author.id).toBe(messages(events)[0]!.author.id);
  });

  it.skipIf(!c.reports.has('delete'))('delete: a person\'s deletion is handed over as an edit that deletes', async () => {
    await started();
    const id = await says('never mind this');
    await h!.remove!(id);
    const edit = await until(() => ofKind(events, 'edit')[0], 'the deletion');
    expect(edit.edit).toMatchObject({ channel: c.name, chatId: h!.chat.chatId, platformMessageId: id, deleted: true });
  });

  it.skipIf(!c.reports.has('reaction'))('reaction: a person\'s reaction and its taking back, each handed over once', async () => {
    await started();
    const id = await says('react to me');
    await h!.react!(id, '🎉', true);
    await until(() => ofKind(events, 'reaction').length >= 1, 'the reaction');
    await h!.react!(id, '🎉', false);
    await until(() => ofKind(events, 'reaction').length >= 2, 'the reaction taken back');
    const person = messages(events)[0]!.author.id;
    expect(ofKind(events, 'reaction').map((e) => e.reaction)).toEqual([
      expect.objectContaining({ channel: c.name, chatId: h!.chat.chatId, platformMessageId: id, emoji: '🎉', on: true, by: expect.objectContaining({ id: person }) }),
      expect.objectContaining({ platformMessageId: id, emoji: '🎉', on: false }),
    ]);
  });

  it.skipIf(!c.reports.has('membership'))('membership: the agent\'s bot leaving and joining the chat is handed over', async () => {
    await started();
    await until(() => ofKind(events, 'membership').length > 0, 'the bots already in the chat');
    const before = ofKind(events, 'membership').length;
    await h!.membership!(false);
    const left = await until(() => ofKind(events, 'membership')[before], 'the bot leaving');
    expect(left).toMatchObject({ chat: { channel: c.name, chatId: h!.chat.chatId }, change: { left: [h!.agent.id] } });
    await h!.membership!(true);
    const joined = await until(() => ofKind(events, 'membership')[before + 1], 'the bot joining');
    expect(joined.change.joined).toContain(h!.agent.id);
  });

  it.skipIf(!c.reports.has('rekey'))('rekey: a chat\'s new platform id is handed over once, old and new', async () => {
    await started();
    const ids = await h!.rekey!();
    const rekey = await until(() => ofKind(events, 'rekey')[0], 'the new id');
    expect(rekey).toEqual({ kind: 'rekey', channel: c.name, ...ids });
    await says('after the move');
    expect(ofKind(events, 'rekey')).toHaveLength(1);
  });
});
