/**
 * Outbound: agents post through one cached channel webhook under their own name and avatar,
 * long replies are split under 2,000 characters without breaking code fences, 429s are waited
 * out without losing or reordering posts, and the echoes of our own posts never come back in.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../../src/core/types.js';
import { ANALYST, CRITIC, WRITER, setup, until, type DiscordSetup } from './harness.js';

let s: DiscordSetup | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const chatOf = (x: DiscordSetup): ChatRef => ({ channel: 'discord', chatId: x.chatId });
const webhookExecutes = (x: DiscordSetup) => x.fake.requestsTo('POST', /^\/webhooks\/\d+\/[^/?]+\?wait=true/);
const webhookCreates = (x: DiscordSetup) => x.fake.requestsTo('POST', /^\/channels\/\d+\/webhooks$/);

describe('discord posting', () => {
  it('posts as the agent through one webhook execute with its name and avatar', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const before = webhookExecutes(s).length;
    const res = await s.channel.postAsAgent(chatOf(s), WRITER, 'Here is the draft.');
    expect(res.ids).toHaveLength(1);
    const executes = webhookExecutes(s).slice(before);
    expect(executes).toHaveLength(1);
    expect(executes[0]!.body).toMatchObject({ content: 'Here is the draft.', username: 'Writer', avatar_url: 'https://cdn.example.test/writer.png' });
    // Never @everyone/roles from agent text.
    expect(executes[0]!.body).toMatchObject({ allowed_mentions: { parse: ['users'] } });
    const [post] = s.fake.posts(s.chatId);
    expect(post).toMatchObject({ id: res.ids[0], content: 'Here is the draft.', avatar_url: 'https://cdn.example.test/writer.png' });
    expect(post!.author.username).toBe('Writer');
    expect(post!.webhook_id).toBeTruthy();
  });

  it('picks the avatar: discord.avatar_url, https avatar, emoji via emoji_avatar_base, else none', async () => {
    s = await setup();
    await s.channel.start(s.host);
    await s.channel.postAsAgent(chatOf(s), CRITIC, 'critic speaks');
    await s.channel.postAsAgent(chatOf(s), ANALYST, 'analyst speaks');
    const posts = s.fake.posts(s.chatId);
    expect(posts.map((p) => [p.author.username, p.avatar_url])).toEqual([
      ['Critic', 'https://cdn.example.test/critic.png'],
      ['Analyst', null],
    ]);
    await s.close();

    s = await setup({ config: { emoji_avatar_base: 'https://emoji.example.test/72x72/{codepoints}.png' } });
    await s.channel.start(s.host);
    await s.channel.postAsAgent(chatOf(s), ANALYST, 'analyst speaks');
    expect(s.fake.posts(s.chatId)[0]!.avatar_url).toBe('https://emoji.example.test/72x72/1f4c8.png');
  });

  it('reuses the webhook: created once, not per message, and found by name after a restart', async () => {
    s = await setup();
    await s.channel.start(s.host);
    for (const t of ['one', 'two', 'three']) await s.channel.postAsAgent(chatOf(s), WRITER, t);
    await s.channel.postAsSystem(chatOf(s), 'notice');
    expect(webhookCreates(s)).toHaveLength(1);
    // One lookup for the whole session: the client is cached, not looked up per message.
    expect(s.fake.requestsTo('GET', /^\/channels\/\d+\/webhooks$/)).toHaveLength(1);
    await s.channel.stop();
    await s.channel.start(s.host);
    await s.channel.postAsAgent(chatOf(s), ANALYST, 'four');
    expect(webhookCreates(s)).toHaveLength(1);
    expect(s.fake.webhooks).toHaveLength(1);
    const hookId = s.fake.webhooks[0]!.id;
    expect(s.fake.posts(s.chatId).every((p) => p.webhook_id === hookId)).toBe(true);
  });

  it('system notices go through the webhook under webhook_name', async () => {
    s = await setup({ config: { webhook_name: 'Chorus Gateway' } });
    await s.channel.start(s.host);
    await s.channel.postAsSystem(chatOf(s), 'Group created.');
    const [post] = s.fake.posts(s.chatId);
    expect(post).toMatchObject({ content: 'Group created.', avatar_url: null });
    expect(post!.author.username).toBe('Chorus Gateway');
  });

  it('ignores the echo of its own posts (agent and system) while the gateway does deliver them', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const res = await s.channel.postAsAgent(chatOf(s), WRITER, 'agent text');
    await s.channel.postAsSystem(chatOf(s), 'system text');
    const marker = s.fake.humanSays(s.chatId, s.maya, 'marker');
    await s.host.waitForReceived(1);
    // The gateway really sent the echoes, in order before the marker...
    const sent = s.fake.dispatched.map((d) => d.content);
    expect(sent.indexOf('agent text')).toBeGreaterThanOrEqual(0);
    expect(sent.indexOf('system text')).toBeLessThan(sent.indexOf('marker'));
    expect(s.fake.dispatched.find((d) => d.messageId === res.ids[0])?.webhookId).toBeTruthy();
    // ...and only the human message came in.
    expect(s.host.received.map((m) => m.messageId)).toEqual([marker]);
  });

  it('ignores its own echoes even when other bots are allowed in', async () => {
    s = await setup({ config: { allow_bots: true } });
    await s.channel.start(s.host);
    await s.channel.postAsAgent(chatOf(s), WRITER, 'agent text');
    await s.channel.postAsSystem(chatOf(s), 'system text');
    const marker = s.fake.humanSays(s.chatId, s.maya, 'marker');
    await s.host.waitForReceived(1);
    expect(s.host.received.map((m) => m.messageId)).toEqual([marker]);
  });

  it('splits a 4,500-character reply with a code block into three messages, fences balanced', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const prose = (n: number) => Array.from({ length: n }, (_, i) => `Sentence ${i} of the explanation goes on a little.`).join(' ');
    const code = Array.from({ length: 70 }, (_, i) => `const value${i} = compute(${i}); // step ${i}`).join('\n');
    const text = `${prose(16)}\n\n\`\`\`ts\n${code}\n\`\`\`\n\n${prose(20)}`;
    expect(text.length).toBeGreaterThanOrEqual(4400);
    expect(text.length).toBeLessThanOrEqual(4600);

    const res = await s.channel.postAsAgent(chatOf(s), WRITER, text);
    expect(res.ids).toHaveLength(3);
    const posts = s.fake.posts(s.chatId);
    expect(posts.map((p) => p.id)).toEqual(res.ids);
    for (const p of posts) {
      expect(p.content.length).toBeLessThanOrEqual(2000);
      const fences = p.content.split('\n').filter((l) => /^\s*```/.test(l));
      expect(fences.length % 2).toBe(0);
    }
    // Every code line arrives exactly once, in order.
    const lines = posts.flatMap((p) => p.content.split('\n')).filter((l) => l.startsWith('const value'));
    expect(lines).toEqual(code.split('\n'));
    // No request was refused for length.
    expect(s.fake.requests.filter((r) => r.status === 400)).toEqual([]);
  });

  it('waits out a 429 and delivers every post once, in order', async () => {
    s = await setup();
    await s.channel.start(s.host);
    await s.channel.postAsSystem(chatOf(s), 'warm-up'); // webhook exists before the limit hits
    s.fake.rateLimitNext(2, (method, path) => method === 'POST' && path.startsWith('/webhooks/'), 0.2);
    const texts = ['first', 'second', 'third', 'fourth'];
    // Fired concurrently, as a router delivering replies of one group would.
    const results = await Promise.all(texts.map((t) => s!.channel.postAsAgent(chatOf(s!), WRITER, t)));
    expect(results.every((r) => r.ids.length === 1)).toBe(true);
    const shown = s.fake.posts(s.chatId).map((p) => p.content).filter((c) => c !== 'warm-up');
    expect(shown).toEqual(texts);
    expect(s.fake.requests.filter((r) => r.status === 429)).toHaveLength(2);
  });

  it('concurrent multi-chunk replies to one chat never interleave', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const long = (tag: string) => Array.from({ length: 60 }, (_, i) => `${tag} line ${i} `.padEnd(50, '.')).join('\n');
    const [a, b] = await Promise.all([s.channel.postAsAgent(chatOf(s), WRITER, long('A')), s.channel.postAsAgent(chatOf(s), ANALYST, long('B'))]);
    expect(a.ids).toHaveLength(2);
    expect(b.ids).toHaveLength(2);
    expect(s.fake.posts(s.chatId).map((p) => p.id)).toEqual([...a.ids, ...b.ids]);
  });

  it('recreates the webhook once when someone deleted it on Discord', async () => {
    s = await setup();
    await s.channel.start(s.host);
    await s.channel.postAsAgent(chatOf(s), WRITER, 'before');
    s.fake.webhooks.splice(0);
    await s.channel.postAsAgent(chatOf(s), WRITER, 'after');
    expect(s.fake.posts(s.chatId).map((p) => p.content)).toEqual(['before', 'after']);
    expect(webhookCreates(s)).toHaveLength(2);
  });

  it('errors thrown to the router and the logs never carry the webhook or bot token', async () => {
    s = await setup({ fake: { token: 'fake-secret-token-123' } });
    await s.channel.start(s.host);
    await s.channel.postAsAgent(chatOf(s), WRITER, 'ok');
    const hookToken = s.fake.webhooks[0]!.token;
    s.fake.failNext(1, (m, p) => m === 'POST' && p.startsWith('/webhooks/'), { status: 400, code: 50006, message: 'Cannot send an empty message' });
    const err = await s.channel.postAsAgent(chatOf(s), WRITER, 'refused').then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toContain('Cannot send an empty message');
    const serialised = JSON.stringify({ ...err, message: err!.message, stack: err!.stack, cause: String(err!.cause) });
    expect(serialised).not.toContain(hookToken);
    expect(s.logger.text()).not.toContain(hookToken);
    expect(s.logger.text()).not.toContain('fake-secret-token-123');
  });

  it('shows typing in the channel until stopped, and never throws', async () => {
    s = await setup();
    const early = s.channel.startTyping(chatOf(s), WRITER); // not started: a no-op
    early();
    await s.channel.start(s.host);
    const stop = s.channel.startTyping(chatOf(s), WRITER);
    await until(() => s!.fake.typing.length >= 1, 'typing request');
    expect(s.fake.typing[0]).toMatchObject({ channelId: s.chatId });
    stop();
    stop();
    const bad = s.channel.startTyping({ channel: 'discord', chatId: '42' }, WRITER); // unknown channel: 404, swallowed
    bad();
  });
});
