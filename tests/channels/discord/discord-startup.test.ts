/**
 * Start-up checks: each set-up mistake gives one clear message that says what to do, and the
 * token never appears in the logs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DISALLOWED_INTENTS_MESSAGE, MISSING_TOKEN_MESSAGE } from '../../../src/channels/discord/startupChecks.js';
import type { ChatRef } from '../../../src/core/types.js';
import { Intent, Perm } from '../../fakes/discord/model.js';
import { WRITER, agent, setup, type DiscordSetup } from './harness.js';

let s: DiscordSetup | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const chatOf = (x: DiscordSetup): ChatRef => ({ channel: 'discord', chatId: x.chatId });

describe('discord start-up', () => {
  it('connects with the Guilds, GuildMessages, GuildMessageReactions and MessageContent intents, via api_base', async () => {
    s = await setup();
    await s.channel.start(s.host);
    expect(s.fake.identifies).toHaveLength(1);
    expect(s.fake.identifies[0]!.intents).toBe(Intent.Guilds | Intent.GuildMessages | Intent.GuildMessageReactions | Intent.MessageContent);
    expect(s.fake.requestsTo('GET', /^\/gateway\/bot$/)).toHaveLength(1);
  });

  it('missing token: refuses to start and says where the token goes', async () => {
    s = await setup({ config: { token: '  ' } });
    await expect(s.channel.start(s.host)).rejects.toThrow(MISSING_TOKEN_MESSAGE);
    expect(s.logger.text()).toContain('channels.discord.token is empty');
    expect(s.fake.requests).toHaveLength(0);
  });

  it('wrong token: a clear message, and the token is not logged', async () => {
    s = await setup({ config: { token: 'not-the-right-token-xyz' } });
    await expect(s.channel.start(s.host)).rejects.toThrow(/bot token was rejected/);
    expect(s.logger.text()).not.toContain('not-the-right-token-xyz');
  });

  it('gateway close 4014: tells the user to enable the Message Content intent in the Developer Portal', async () => {
    s = await setup({ fake: { messageContentAllowed: false, token: 'fake-secret-token-4014' } });
    const err = await s.channel.start(s.host).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toBe(DISALLOWED_INTENTS_MESSAGE);
    expect(err?.message).toMatch(/4014/);
    expect(err?.message).toMatch(/Message Content Intent/);
    expect(err?.message).toMatch(/Developer Portal/);
    expect(s.logger.lines.some((l) => l.level === 'error' && (l.msg ?? l.obj) === DISALLOWED_INTENTS_MESSAGE)).toBe(true);
    expect(s.logger.text()).not.toContain('fake-secret-token-4014');
    // The adapter is stopped, not half-running: no gateway session stays open.
    expect(s.fake.connectedSessions).toBe(0);
  });

  it('agent names a webhook cannot carry are named at start; their posts still go out, labelled', async () => {
    const bad1 = agent('helper', 'Discord Helper', null);
    const bad2 = agent('clyde', 'Clyde', null);
    const bad3 = agent('long', 'L'.repeat(81), null);
    s = await setup({ agents: [WRITER, bad1, bad2, bad3] });
    await s.channel.start(s.host);
    const errors = s.logger.lines.filter((l) => l.level === 'error').map((l) => String(l.msg ?? l.obj));
    expect(errors.find((e) => e.includes('"helper"') && e.includes('"Discord Helper"') && e.includes('"discord"'))).toBeTruthy();
    expect(errors.find((e) => e.includes('"clyde"') && e.includes('"clyde"'))).toBeTruthy();
    expect(errors.find((e) => e.includes('"long"') && e.includes('longer than 80'))).toBeTruthy();
    expect(errors.some((e) => e.includes('"writer"'))).toBe(false);
    expect(s.channel.warnings(chatOf(s), ['writer', 'helper']).join('\n')).toContain('Discord Helper');

    await s.channel.postAsAgent(chatOf(s), bad1, 'I can still help.');
    const [post] = s.fake.posts(s.chatId);
    expect(post!.author.username).toBe('Chorus');
    expect(post!.content).toBe('**Discord Helper:** I can still help.');
    // A reply to that post still addresses the agent.
    s.fake.humanSays(s.chatId, s.maya, 'how?', { replyTo: post!.id });
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.replyToAgentId).toBe('helper');
  });

  it('missing Manage Webhooks: the start-up message names the channel; system notices fall back to the bot', async () => {
    s = await setup({
      beforeStart: (fake, chatId) => fake.denyBot(chatId, Perm.ManageWebhooks),
      // Allow-listed, so start-up checks it.
      config: (_fake, chatId) => ({ channels: [chatId] }),
    });
    await s.channel.start(s.host);
    const errors = s.logger.lines.filter((l) => l.level === 'error').map((l) => String(l.msg ?? l.obj));
    const msg = errors.find((e) => e.includes('Manage Webhooks'));
    expect(msg).toContain(`#general (${s.chatId})`);
    expect(s.channel.warnings(chatOf(s), [])).toEqual([msg]);

    await expect(s.channel.postAsAgent(chatOf(s), WRITER, 'hello')).rejects.toThrow(/Manage Webhooks.*#general/);
    const notice = await s.channel.postAsSystem(chatOf(s), 'Chorus needs Manage Webhooks here.');
    expect(notice.ids).toHaveLength(1);
    const [post] = s.fake.posts(s.chatId);
    expect(post).toMatchObject({ content: 'Chorus needs Manage Webhooks here.', webhook_id: null });
    expect(post!.author.id).toBe(s.fake.bot.id);
    // The bot's own message is not echoed back to the router either.
    s.fake.humanSays(s.chatId, s.maya, 'ok');
    const got = await s.host.waitForReceived(1);
    expect(got.map((m) => m.text)).toEqual(['ok']);
  });
});
