/**
 * Shared set-up for the Discord adapter tests: a fake Discord with one channel and a few people,
 * a DiscordChannel pointed at it, and a RecordingHost in place of the router.
 */
import { DiscordChannel } from '../../../src/channels/discord/DiscordChannel.js';
import type { DiscordConfig } from '../../../src/channels/discord/config.js';
import type { AgentDef } from '../../../src/core/types.js';
import { FakeDiscord, type FakeDiscordOptions } from '../../fakes/discord/FakeDiscord.js';
import type { FakeUser } from '../../fakes/discord/model.js';
import { CapturingLogger } from '../../helpers/logger.js';
import { RecordingHost } from '../../helpers/recording-host.js';

export function agent(id: string, name: string, avatar: string | null, extra: Partial<AgentDef> = {}): AgentDef {
  return { id, name, persona: `You are ${name}.`, model: null, avatar, color: null, aliases: [], talkativeness: 0.5, ...extra };
}

export const WRITER = agent('writer', 'Writer', 'https://cdn.example.test/writer.png');
export const ANALYST = agent('analyst', 'Analyst', '📈');
export const CRITIC = agent('critic', 'Critic', null, { discord: { avatar_url: 'https://cdn.example.test/critic.png' } });

export function discordConfig(fake: FakeDiscord, over: Partial<DiscordConfig> = {}): DiscordConfig {
  return {
    enabled: true,
    token: fake.token,
    api_base: fake.apiBase,
    channels: [],
    admins: [],
    allow_bots: false,
    webhook_name: 'Chorus',
    emoji_avatar_base: null,
    agent_reactions: 'off',
    ...over,
  };
}

export interface DiscordSetup {
  fake: FakeDiscord;
  channel: DiscordChannel;
  host: RecordingHost;
  logger: CapturingLogger;
  chatId: string;
  maya: FakeUser;
  close(): Promise<void>;
}

export async function setup(
  opts: {
    agents?: AgentDef[];
    /** Config overrides; a function sees the fake world after `beforeStart` (ids of users, channels). */
    config?: Partial<DiscordConfig> | ((fake: FakeDiscord, chatId: string) => Partial<DiscordConfig>);
    fake?: FakeDiscordOptions;
    beforeStart?: (fake: FakeDiscord, chatId: string) => void;
  } = {},
): Promise<DiscordSetup> {
  const fake = await new FakeDiscord(opts.fake).start();
  const chatId = fake.addChannel('general');
  const maya = fake.addUser('Maya');
  opts.beforeStart?.(fake, chatId);
  const agents = opts.agents ?? [WRITER, ANALYST, CRITIC];
  const logger = new CapturingLogger();
  const over = typeof opts.config === 'function' ? opts.config(fake, chatId) : opts.config;
  const channel = new DiscordChannel({ config: discordConfig(fake, over), agents, logger });
  const host = new RecordingHost(agents);
  return {
    fake,
    channel,
    host,
    logger,
    chatId,
    maya,
    async close() {
      await channel.stop();
      await fake.close();
    },
  };
}

/** Poll until `check` returns a truthy value; generous deadline, no fixed sleeps. */
export async function until<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
