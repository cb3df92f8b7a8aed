/**
 * Inbound: what reaches the router from a Discord channel, how replies to agents' webhook
 * messages address them, who is skipped (own posts, other bots, other channels), and who is an
 * admin.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DiscordChannel } from '../../../src/channels/discord/DiscordChannel.js';
import type { ChatRef } from '../../../src/core/types.js';
import { Perm } from '../../fakes/discord/model.js';
import { RecordingHost } from '../../helpers/recording-host.js';
import { silentLogger } from '../../helpers/logger.js';
import { ANALYST, CRITIC, WRITER, discordConfig, setup, type DiscordSetup } from './harness.js';

let s: DiscordSetup | undefined;
let extra: DiscordChannel | undefined;
afterEach(async () => {
  await extra?.stop();
  extra = undefined;
  await s?.close();
  s = undefined;
});

const chatOf = (x: DiscordSetup): ChatRef => ({ channel: 'discord', chatId: x.chatId });

describe('discord inbound', () => {
  it('hands a human message over as InboundMessage, commands as plain text', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const id = s.fake.humanSays(s.chatId, s.maya, '/group create analyst writer');
    const [msg] = await s.host.waitForReceived(1);
    expect(msg).toMatchObject({
      channel: 'discord',
      chatId: s.chatId,
      messageId: id,
      author: { id: s.maya.id, name: 'Maya' },
      text: '/group create analyst writer',
      chatTitle: '#general',
    });
    expect(msg!.replyToAgentId).toBeUndefined();
  });

  it('a reply to Writer\'s webhook message addresses Writer', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const posted = await s.channel.postAsAgent(chatOf(s), WRITER, 'A first draft.');
    await s.channel.postAsAgent(chatOf(s), ANALYST, 'Numbers look fine.');
    s.fake.humanSays(s.chatId, s.maya, 'can you shorten it?', { replyTo: posted.ids[0]! });
    const plain = s.fake.humanSays(s.chatId, s.maya, 'thanks all');
    const got = await s.host.waitForReceived(2);
    expect(got.map((m) => m.replyToAgentId)).toEqual(['writer', undefined]);
    expect(got[1]!.messageId).toBe(plain);
  });

  it('recognises replies to agents after a restart (map empty) by webhook and name, or asks the host', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const a = await s.channel.postAsAgent(chatOf(s), CRITIC, 'Too long.');
    await s.channel.stop();

    // A fresh adapter (as after a daemon restart) knows nothing of the earlier posts.
    const host = new RecordingHost([WRITER, ANALYST, CRITIC]);
    extra = new DiscordChannel({ config: discordConfig(s.fake), agents: [WRITER, ANALYST, CRITIC], logger: silentLogger });
    await extra.start(host);
    s.fake.humanSays(s.chatId, s.maya, 'which part?', { replyTo: a.ids[0]! });
    // A message the router remembers but whose referenced copy Discord did not include.
    const b = s.fake.humanSays(s.chatId, s.maya, 'some human line');
    host.notePosted(chatOf(s), b, 'analyst');
    s.fake.humanSays(s.chatId, s.maya, 'replying to a human-looking one', { replyTo: b });
    const got = await host.waitForReceived(3);
    expect(got.map((m) => m.replyToAgentId)).toEqual(['critic', undefined, 'analyst']);
  });

  it('replaces Discord mention markup with readable names', async () => {
    s = await setup();
    await s.channel.start(s.host);
    s.fake.humanSays(s.chatId, s.maya, `hey <@${s.fake.owner.id}> see <#${s.chatId}> and ask @writer`);
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.text).toBe('hey @Owner see #general and ask @writer');
  });

  it('ignores other bots by default and lets them in with allow_bots', async () => {
    s = await setup();
    const other = s.fake.addUser('OtherBot', { bot: true });
    await s.channel.start(s.host);
    s.fake.humanSays(s.chatId, other, 'beep from a bot');
    const human = s.fake.humanSays(s.chatId, s.maya, 'human after bot');
    const got = await s.host.waitForReceived(1);
    expect(got.map((m) => m.messageId)).toEqual([human]);
    expect(s.fake.dispatched.some((d) => d.content === 'beep from a bot')).toBe(true);
    await s.close();

    s = await setup({ config: { allow_bots: true } });
    const bot2 = s.fake.addUser('OtherBot', { bot: true });
    await s.channel.start(s.host);
    s.fake.humanSays(s.chatId, bot2, 'beep allowed');
    const [msg] = await s.host.waitForReceived(1);
    expect(msg).toMatchObject({ text: 'beep allowed', author: { id: bot2.id } });
  });

  it('honours the channel allow-list', async () => {
    let other = '';
    s = await setup({
      beforeStart: (fake) => {
        other = fake.addChannel('random');
      },
      config: (_fake, chatId) => ({ channels: [chatId] }),
    });
    await s.channel.start(s.host);
    s.fake.humanSays(other, s.maya, 'in #random');
    const ok = s.fake.humanSays(s.chatId, s.maya, 'in #general');
    const got = await s.host.waitForReceived(1);
    expect(got.map((m) => m.messageId)).toEqual([ok]);
    expect(s.fake.dispatched.some((d) => d.content === 'in #random')).toBe(true);
  });

  it('isAdmin: Manage Channels in the channel, the server owner, or an id in discord.admins', async () => {
    const ids: Record<string, string> = {};
    s = await setup({
      beforeStart: (fake) => {
        ids.mod = fake.addUser('Moderator', { roles: [fake.modRoleId] }).id;
        ids.listed = fake.addUser('Listed').id;
      },
      config: () => ({ admins: [ids.listed!] }),
    });
    await s.channel.start(s.host);
    const chat = chatOf(s);
    expect(await s.channel.isAdmin(chat, ids.mod!)).toBe(true);
    expect(await s.channel.isAdmin(chat, s.fake.owner.id)).toBe(true);
    expect(await s.channel.isAdmin(chat, ids.listed!)).toBe(true);
    expect(await s.channel.isAdmin(chat, s.maya.id)).toBe(false);
    expect(await s.channel.isAdmin(chat, '123456789')).toBe(false); // unknown member
    // Members were looked up over REST (no privileged member intent needed).
    expect(s.fake.requestsTo('GET', /^\/guilds\/\d+\/members\/\d+$/).length).toBeGreaterThan(0);
  });

  it('a channel overwrite that takes Manage Channels away removes admin rights there', async () => {
    let mod: { id: string } | undefined;
    s = await setup({
      beforeStart: (fake, chatId) => {
        mod = fake.addUser('Moderator', { roles: [fake.modRoleId] });
        fake.channel(chatId)!.overwrites.push({ id: fake.modRoleId, type: 0, allow: 0n, deny: Perm.ManageChannels });
      },
    });
    await s.channel.start(s.host);
    expect(await s.channel.isAdmin(chatOf(s), mod!.id)).toBe(false);
  });
});
