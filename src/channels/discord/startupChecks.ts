/**
 * Start-up checks and the messages they produce. Each message says what is wrong *and* what the
 * user has to do about it, because most Discord set-up problems are fixed outside Chorus (the
 * Developer Portal, server roles) and a bare error code sends people searching.
 *
 * Nothing here ever includes the bot token.
 */
import type { AgentDef } from '../../core/types.js';
import { webhookUsernameProblem } from './identity.js';

export class DiscordStartupError extends Error {
  constructor(
    message: string,
    readonly reason: 'missing_token' | 'bad_token' | 'disallowed_intents' | 'connect_failed' | 'timeout',
  ) {
    super(message);
    this.name = 'DiscordStartupError';
  }
}

export const MISSING_TOKEN_MESSAGE =
  'Discord: channels.discord.token is empty. Create a bot in the Discord Developer Portal ' +
  '(https://discord.com/developers/applications → your app → Bot → Reset Token) and put the token in ' +
  'channels.discord.token (for example via ${DISCORD_BOT_TOKEN}).';

const BAD_TOKEN_MESSAGE =
  'Discord: the bot token was rejected (authentication failed). Check channels.discord.token; ' +
  'a token that was reset in the Developer Portal stops working at once.';

export const DISALLOWED_INTENTS_MESSAGE =
  'Discord refused the gateway connection (close code 4014: disallowed intents). Chorus needs the ' +
  'privileged Message Content intent to read the channel: open the Discord Developer Portal → ' +
  'Applications → your bot → Bot → Privileged Gateway Intents, enable "Message Content Intent", ' +
  'save, and restart Chorus.';

/** The message for a channel where the bot cannot manage webhooks, naming the channel. */
export function missingManageWebhooksMessage(channel: { id: string; name?: string | undefined }): string {
  const where = channel.name ? `#${channel.name} (${channel.id})` : `channel ${channel.id}`;
  return (
    `Discord: the bot lacks the Manage Webhooks permission in ${where}, so agents cannot post there ` +
    '(each agent speaks through a channel webhook). Grant "Manage Webhooks" to the bot\'s role in ' +
    'Server Settings → Roles, or in the channel\'s permission settings.'
  );
}

/** With `agent_reactions: bot`: the bot cannot show agents' reactions in this channel. */
export function missingReactionPermissionsMessage(channel: { id: string; name?: string | undefined }, missing: readonly string[]): string {
  const where = channel.name ? `#${channel.name} (${channel.id})` : `channel ${channel.id}`;
  return (
    `Discord: the bot lacks ${missing.join(' and ')} in ${where}, so it cannot show agents' reactions there ` +
    '(channels.discord.agent_reactions: bot; they are still recorded and shown on the web page). Grant ' +
    `${missing.map((m) => `"${m}"`).join(' and ')} to the bot's role, or set agent_reactions: off.`
  );
}

/** One problem per agent whose display name Discord will not accept as a webhook username. */
export function agentNameProblems(agents: readonly AgentDef[], webhookName: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of agents) {
    const why = webhookUsernameProblem(a.name);
    if (!why) continue;
    out.set(
      a.id,
      `Discord: agent "${a.id}" has the name "${a.name}", which cannot be a webhook username: ${why}. ` +
        'Webhook usernames must be 1–80 characters and may not contain "discord" or "clyde"; rename the agent. ' +
        `Until then its Discord posts go out as "${webhookName}" with "${a.name}:" at the start of the text.`,
    );
  }
  return out;
}

/**
 * Turn whatever `client.login` threw into a message a user can act on. `closeCode` is the last
 * gateway close code seen, which is the only reliable signal for 4014.
 */
export function loginFailure(err: unknown, closeCode: number | undefined): DiscordStartupError {
  const text = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const status = (err as { status?: unknown } | null)?.status;
  if (closeCode === 4014 || /disallowed intents/i.test(text)) return new DiscordStartupError(DISALLOWED_INTENTS_MESSAGE, 'disallowed_intents');
  if (closeCode === 4004 || code === 'TokenInvalid' || status === 401 || /authentication failed/i.test(text)) {
    return new DiscordStartupError(BAD_TOKEN_MESSAGE, 'bad_token');
  }
  return new DiscordStartupError(`Discord: could not connect to the gateway: ${text}`, 'connect_failed');
}
