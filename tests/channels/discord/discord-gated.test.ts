/**
 * The Discord channel under a connection gate (several instances), against the fake
 * Discord through the real discord.js: without the gateway lease it opens no gateway session
 * but posts through the webhook, answers admin checks over REST and reports "posting"; given the
 * lease it logs in and reads messages; when the lease goes it logs out and goes on posting.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DISCORD_GATEWAY_KEY, DiscordChannel } from '../../../src/channels/discord/DiscordChannel.js';
import type { ConnectionGate } from '../../../src/core/ports.js';
import { FakeDiscord } from '../../fakes/discord/FakeDiscord.js';
import { CapturingLogger } from '../../helpers/logger.js';
import { RecordingHost } from '../../helpers/recording-host.js';
import { ANALYST, WRITER, discordConfig, until } from './harness.js';

/** A gate the test drives: it records the handlers and starts or stops them on demand. */
class ManualGate implements ConnectionGate {
  readonly held = new Map<string, { start(): void | Promise<void>; stop(): Promise<void> }>();
  hold(key: string, handlers: { start(): void | Promise<void>; stop(): Promise<void> }): void {
    this.held.set(key, handlers);
  }
}

let fake: FakeDiscord | undefined;
let channel: DiscordChannel | undefined;

afterEach(async () => {
  await channel?.stop();
  await fake?.close();
  channel = fake = undefined;
});

describe('Discord channel behind a connection gate', () => {
  it('posts without a gateway session, logs in with the lease, logs out without it', async () => {
    fake = await new FakeDiscord().start();
    const chatId = fake.addChannel('general');
    const maya = fake.addUser('Maya');
    const gate = new ManualGate();
    const agents = [WRITER, ANALYST];
    channel = new DiscordChannel({ config: discordConfig(fake), agents, logger: new CapturingLogger(), connections: gate });
    const host = new RecordingHost(agents);
    await channel.start(host);

    // Standby: no gateway session, registered with the gate, ready to post.
    expect(gate.held.has(DISCORD_GATEWAY_KEY)).toBe(true);
    expect(fake.connectedSessions).toBe(0);
    expect(channel.status()).toEqual({ ok: true, state: 'posting' });
    const chat = { channel: 'discord' as const, chatId };
    const sent = await channel.postAsAgent(chat, WRITER, 'posted by an instance without the gateway');
    expect(sent.ids).toHaveLength(1);
    const post = fake.posts(chatId).at(-1)!;
    expect(post.webhook_id).not.toBeNull();
    expect(post.author.username).toBe('Writer');
    // Admin checks need the guild, which only a gateway session caches: read over REST instead.
    expect(await channel.isAdmin(chat, fake.owner.id)).toBe(true);
    expect(await channel.isAdmin(chat, maya.id)).toBe(false);
    // Messages are read only by the lease holder.
    fake.humanSays(chatId, maya, 'nobody reads this here');
    await new Promise((r) => setTimeout(r, 100));
    expect(host.received).toHaveLength(0);

    // The lease: log in and read.
    await gate.held.get(DISCORD_GATEWAY_KEY)!.start();
    expect(fake.connectedSessions).toBe(1);
    expect(channel.status()).toMatchObject({ ok: true, state: 'ready' });
    fake.humanSays(chatId, maya, 'hello holder');
    await until(() => host.received.find((m) => m.text === 'hello holder'), 'message read by the holder');
    // The webhook the standby client made is reused (one per channel).
    await channel.postAsAgent(chat, ANALYST, 'from the holder');
    expect(new Set(fake.posts(chatId).filter((m) => m.webhook_id).map((m) => m.webhook_id)).size).toBe(1);

    // Lease lost: the session closes, posting goes on.
    await gate.held.get(DISCORD_GATEWAY_KEY)!.stop();
    await until(() => fake!.connectedSessions === 0 || undefined, 'the gateway session to close');
    expect(channel.status()).toEqual({ ok: true, state: 'posting' });
    await channel.postAsAgent(chat, WRITER, 'still posting');
    expect(fake.posts(chatId).at(-1)!.content).toBe('still posting');
    fake.humanSays(chatId, maya, 'not read any more');
    await new Promise((r) => setTimeout(r, 100));
    expect(host.received.map((m) => m.text)).toEqual(['hello holder']);
  });

  it('a failed login gives the lease back (the start rejects) and posting goes on', async () => {
    fake = await new FakeDiscord().start();
    const chatId = fake.addChannel('general');
    const gate = new ManualGate();
    channel = new DiscordChannel({ config: discordConfig(fake), agents: [WRITER], logger: new CapturingLogger(), connections: gate });
    await channel.start(new RecordingHost([WRITER]));
    fake.failNext(5, (method, path) => method === 'GET' && path === '/gateway/bot', { status: 401, code: 0, message: '401: Unauthorized' });
    await expect(gate.held.get(DISCORD_GATEWAY_KEY)!.start()).rejects.toThrow();
    expect(fake.connectedSessions).toBe(0);
    await channel.postAsAgent({ channel: 'discord', chatId }, WRITER, 'posting after a failed login');
    expect(fake.posts(chatId).at(-1)!.content).toBe('posting after a failed login');
  });
});
