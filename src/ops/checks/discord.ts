/**
 * Doctor checks of the Discord bot: a real gateway login with the intents the daemon asks for (the
 * only sure way to learn whether the Message Content intent is granted: Discord refuses the
 * session with close code 4014), then for each channel Chorus serves whether the bot can see it
 * and read its webhooks (Manage Webhooks, which agents post through). Nothing is created or sent;
 * the session is closed at the end.
 */
import { agentsFromConfig } from '../../app.js';
import type { ChorusConfig } from '../../config/schema.js';
import { agentNameProblems, loginFailure, missingManageWebhooksMessage, MISSING_TOKEN_MESSAGE } from '../../channels/discord/startupChecks.js';
import { isMissingPermission, sanitizeError } from '../../channels/discord/errors.js';
import { guildChannel } from '../../channels/discord/permissions.js';
import { fail, info, ok, warn, type Finding } from '../findings.js';

/** How long the login may take before the doctor gives up. */
const LOGIN_TIMEOUT_MS = 20_000;

export async function checkDiscord(config: ChorusConfig, knownChannelIds: readonly string[]): Promise<Finding[]> {
  const dc = config.channels.discord;
  if (!dc.enabled) return [];
  const subject = 'discord';
  const token = dc.token?.trim();
  if (!token) return [fail(subject, 'no bot token', MISSING_TOKEN_MESSAGE.replace(/^Discord: channels\.discord\.token is empty\. /, ''))];
  const out: Finding[] = [];
  for (const [agentId, problem] of agentNameProblems(agentsFromConfig(config), dc.webhook_name)) {
    out.push(warn(`discord ${agentId}`, problem.replace(/^Discord: /, ''), 'rename the agent (agents[].name)'));
  }

  // discord.js costs a second to load: only when Discord is enabled.
  const { Client, GatewayIntentBits, Routes } = await import('discord.js');
  const api = dc.api_base?.replace(/\/+$/, '') || undefined;
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent],
    ...(api ? { rest: { api } } : {}),
  });
  let closeCode: number | undefined;
  client.on('shardDisconnect', (ev) => (closeCode = ev.code));
  client.on('error', () => undefined);
  try {
    const ready = new Promise<void>((resolve) => client.once('clientReady', () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the gateway was not ready after ${LOGIN_TIMEOUT_MS / 1000} s`)), LOGIN_TIMEOUT_MS);
    });
    try {
      await Promise.race([client.login(token).then(() => ready), timeout]);
    } catch (err) {
      const failure = loginFailure(err, closeCode);
      const reason = failure.reason;
      if (reason === 'disallowed_intents') {
        out.push(fail(subject, 'Discord refused the Message Content intent (gateway close 4014)', 'Developer Portal → your app → Bot → Privileged Gateway Intents → enable "Message Content Intent", save'));
      } else if (reason === 'bad_token') {
        out.push(fail(subject, 'Discord rejected the bot token', 'copy a fresh token (Developer Portal → Bot → Reset Token) into channels.discord.token'));
      } else {
        out.push(fail(subject, failure.message.replace(/^Discord: /, ''), 'check the network and channels.discord.api_base'));
      }
      return out;
    } finally {
      clearTimeout(timer);
    }
    out.push(ok(subject, `logged in as ${client.user?.tag ?? 'the bot'}, in ${client.guilds.cache.size} server(s); the Message Content intent is granted`));
    if (client.guilds.cache.size === 0) {
      out.push(warn(subject, 'the bot is in no server', 'invite it: Developer Portal → OAuth2 → URL Generator, scope "bot", permissions View Channel, Send Messages, Manage Webhooks'));
    }

    const ids = [...new Set([...dc.channels, ...knownChannelIds])];
    if (ids.length === 0) out.push(info(subject, 'no channel list (channels.discord.channels): Chorus serves every channel the bot can see where a group is created'));
    for (const id of ids) {
      const channel = await guildChannel(client, id);
      if (!channel) {
        out.push(fail(`discord channel ${id}`, 'not visible to the bot (wrong id, or no View Channel permission there)', 'check the id (Developer Mode → right-click the channel → Copy Channel ID) and give the bot View Channel'));
        continue;
      }
      const s = `discord #${channel.name} (${id})`;
      try {
        await client.rest.get(Routes.channelWebhooks(id));
        out.push(ok(s, 'visible, and the bot can manage its webhooks (agents post through them)'));
      } catch (err) {
        if (isMissingPermission(err)) out.push(fail(s, 'the bot lacks Manage Webhooks here, so agents cannot post', missingManageWebhooksMessage({ id, name: channel.name }).replace(/^.*?Grant/, 'grant')));
        else out.push(fail(s, `could not check its webhooks (${sanitizeError(err, 'webhooks').message})`, "run doctor again; if it persists, check the bot's roles"));
      }
    }
  } finally {
    await client.destroy().catch(() => undefined);
  }
  return out;
}
