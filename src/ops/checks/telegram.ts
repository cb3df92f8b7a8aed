/**
 * Doctor checks of the Telegram bots, through grammY against `channels.telegram.api_root`: each
 * agent's token (getMe), its privacy mode, its webhook (getWebhookInfo: in webhook mode whether it
 * points at us and Telegram's last delivery error; in polling mode a stray webhook), and for each
 * group Chorus knows on Telegram whether the bot is in it and can read it, and whether it is an
 * admin there: Telegram sends people's reactions only to admin bots, so a group where none of the
 * agents' bots is one shows Chorus no reactions. Whether each bot can see other bots' messages
 * (Telegram's bot-to-bot mode: privacy mode off, an admin, and the mode switched on in @BotFather,
 * which getMe does not report), and whether the relay bot's token works. Read-only calls: nothing
 * is sent, no update is confirmed.
 */
import { Api, GrammyError } from 'grammy';
import type { ChorusConfig } from '../../config/schema.js';
import { describeError } from '../../channels/telegram/errors.js';
import { webhookEndpoint } from '../../channels/telegram/webhook.js';
import { fail, info, ok, warn, type Finding } from '../findings.js';

/** A group chat Chorus has (declared in the config or found in data_dir). */
export interface TelegramChat {
  chatId: string;
  title: string;
  participants: string[];
}

/** Groups checked per bot at most; a doctor run should stay short. */
const MAX_CHATS = 100;

/** A bot found in a group: whether it is an admin there (the only bots Telegram sends reactions to). */
interface Seat {
  agentId: string;
  bot: string;
  admin: boolean;
}

export async function checkTelegram(config: ChorusConfig, chats: readonly TelegramChat[]): Promise<Finding[]> {
  const tg = config.channels.telegram;
  if (!tg.enabled) return [];
  const apiRoot = tg.api_root.replace(/\/+$/, '');
  const seen = new Map<string, string>();
  const seats = new Map<string, Seat[]>();
  const perAgent = config.agents.map(async (agent, i): Promise<Finding[]> => {
    const subject = `telegram ${agent.id}`;
    const token = agent.telegram?.token.trim();
    if (!token) return [warn(subject, 'has no bot, so it cannot post in Telegram groups', `create a bot with @BotFather and set agents[${i}].telegram.token`)];
    const other = seen.get(token);
    if (other) return [fail(subject, `uses the same bot token as "${other}", so it is skipped`, `give agents[${i}] its own bot from @BotFather`)];
    seen.set(token, agent.id);
    return checkBot(new Api(token, { apiRoot }), token, agent.id, i, apiRoot, chats.filter((c) => c.participants.includes(agent.id)), expectedWebhook(tg, agent.id, token), seats);
  });
  const relay = tg.relay_token?.trim() ? checkRelay(new Api(tg.relay_token.trim(), { apiRoot }), tg.relay_token.trim(), apiRoot) : Promise.resolve([]);
  return [...(await Promise.all(perAgent)).flat(), ...(await relay), ...chats.flatMap((c) => reactionFindings(c, seats.get(c.chatId) ?? []))];
}

/** The relay bot (`channels.telegram.relay_token`): does Telegram take its token. */
async function checkRelay(api: Api, token: string, apiRoot: string): Promise<Finding[]> {
  try {
    const me = await api.getMe(AbortSignal.timeout(15_000) as Parameters<Api['getMe']>[0]);
    return [ok('telegram relay', `@${me.username} answers; people from the room's other chats are posted through it (add it to each linked Telegram group)`)];
  } catch (err) {
    const why = describeError(err, [token]);
    if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404)) {
      return [fail('telegram relay', `Telegram rejected the relay bot's token (${why}); relayed messages go through an agent's bot instead`, 'copy the token again from @BotFather into channels.telegram.relay_token')];
    }
    return [fail('telegram relay', `cannot reach the Bot API at ${apiRoot} (${why})`, 'check the network and channels.telegram.api_root')];
  }
}

/**
 * Can this bot see other bots' messages (a bot that is not Chorus's, in bot-to-bot mode)? Telegram
 * delivers them all only to a bot with privacy mode off that is an admin of the group and has
 * Bot-to-Bot Communication Mode on; getMe tells the first, getChatMember the second, nothing the third.
 */
function botToBotFinding(agentId: string, bot: string, privacy: boolean, groups: number, adminIn: number): Finding {
  const s = `telegram ${agentId} bot-to-bot`;
  const mode = "Bot-to-Bot Communication Mode on in @BotFather (the Bot API does not report this switch, so it is not checked)";
  if (privacy) return info(s, `${bot} sees other bots' messages only when they address it (a /command@${bot.slice(1)} or a reply): privacy mode is on; to see them all it needs privacy mode off, admin rights in the group and ${mode}`);
  if (groups === 0) return info(s, `${bot} has privacy mode off; in a group it sees other bots' messages when it is an admin there and has ${mode}`);
  if (adminIn === groups) return info(s, `${bot} can see other bots' messages in its ${groups} group(s) (privacy mode off, an admin in each) if it has ${mode}`);
  return info(s, `${bot} can see other bots' messages only in the ${adminIn} of its ${groups} group(s) where it is an admin, and only with ${mode}; make it an admin where it should see them`);
}

/** Per group: the bots in it that are not admins, and whether reactions reach Chorus at all there. */
function reactionFindings(chat: TelegramChat, seats: readonly Seat[]): Finding[] {
  const sorted = [...seats].sort((a, b) => a.agentId.localeCompare(b.agentId));
  const admins = sorted.filter((s) => s.admin).map((s) => s.bot);
  return sorted
    .filter((s) => !s.admin)
    .map((s) => {
      const subject = `telegram ${s.agentId} in "${chat.title}" (${chat.chatId})`;
      return admins.length
        ? info(subject, `${s.bot} is not an admin, so Telegram sends it no reactions; Chorus sees them through ${admins.join(', ')}`)
        : warn(subject, `${s.bot} is not an admin, and no other agent's bot in this group is: Telegram sends people's reactions only to admin bots, so Chorus sees none here`, `make ${s.bot} an admin to see reactions (one admin bot per group is enough)`);
    });
}

/** The webhook URL Chorus sets for this bot in webhook mode (null in polling mode). */
function expectedWebhook(tg: ChorusConfig['channels']['telegram'], agentId: string, token: string): string | null {
  const wh = tg.webhook;
  if (tg.mode !== 'webhook' || !wh.url || !wh.secret_token) return null;
  return webhookEndpoint({ url: wh.url, path: wh.path, secretToken: wh.secret_token }, agentId, token).url;
}

async function checkBot(
  api: Api,
  token: string,
  agentId: string,
  index: number,
  apiRoot: string,
  chats: readonly TelegramChat[],
  webhookUrl: string | null,
  seats: Map<string, Seat[]>,
): Promise<Finding[]> {
  const subject = `telegram ${agentId}`;
  let me;
  try {
    me = await api.getMe(AbortSignal.timeout(15_000) as Parameters<Api['getMe']>[0]);
  } catch (err) {
    const why = describeError(err, [token]);
    if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404)) {
      return [fail(subject, `Telegram rejected the bot token (${why})`, `copy the token again from @BotFather (/mybots → the bot → API Token) into agents[${index}].telegram.token`)];
    }
    return [fail(subject, `cannot reach the Bot API at ${apiRoot} (${why})`, 'check the network and channels.telegram.api_root')];
  }
  const bot = `@${me.username}`;
  const out: Finding[] = [];
  const privacy = !me.can_read_all_group_messages;
  if (privacy) {
    out.push(
      warn(
        subject,
        `${bot} has privacy mode on: in groups it sees only commands, replies to it and @mentions, so it never joins in on its own`,
        `in @BotFather send /setprivacy, choose ${bot}, pick Disable, then remove and re-add the bot to each group (or make it a group admin)`,
      ),
    );
  } else out.push(ok(subject, `${bot} answers; privacy mode is off, it reads every group message`));
  out.push(...(await checkWebhook(api, token, subject, bot, webhookUrl)));

  for (const chat of chats.slice(0, MAX_CHATS)) {
    const where = `"${chat.title}" (${chat.chatId})`;
    const s = `telegram ${agentId} in ${where}`;
    try {
      const member = await api.getChatMember(chat.chatId, me.id, AbortSignal.timeout(15_000) as Parameters<Api['getChatMember']>[2]);
      const present = member.status !== 'left' && member.status !== 'kicked' && !(member.status === 'restricted' && !member.is_member);
      if (present) seats.set(chat.chatId, [...(seats.get(chat.chatId) ?? []), { agentId, bot, admin: member.status === 'administrator' || member.status === 'creator' }]);
      if (member.status === 'left' || member.status === 'kicked') {
        out.push(fail(s, `${bot} is not in the group (${member.status})`, `add ${bot} to the group again, or remove ${agentId} from it with /group remove ${agentId}`));
      } else if (member.status === 'restricted' && !member.can_send_messages) {
        out.push(fail(s, `${bot} may not send messages there`, 'lift the restriction in the group settings'));
      } else if (member.status === 'administrator' || member.status === 'creator') {
        out.push(ok(s, `${bot} is an admin and reads every message`));
      } else if (privacy) {
        out.push(warn(s, `${bot} is a member with privacy mode on: it sees only commands, replies and @mentions`, `disable privacy mode (see above) and re-add ${bot}, or make it an admin`));
      } else {
        out.push(ok(s, `${bot} is a member and reads every message`));
      }
    } catch (err) {
      const why = describeError(err, [token]);
      const code = err instanceof GrammyError ? err.error_code : undefined;
      if (code === 400 || code === 403) {
        out.push(fail(s, `${bot} cannot see this chat (${why}): it was removed, or the group was upgraded to a supergroup`, `add ${bot} to the group; if the group was upgraded, Chorus follows the new id once a bot sees a message there`));
      } else {
        out.push(fail(s, `could not check (${why})`, 'run doctor again; if it persists, check the network'));
      }
    }
  }
  const checked = chats.slice(0, MAX_CHATS).map((c) => seats.get(c.chatId)?.find((x) => x.agentId === agentId)).filter((x) => x !== undefined);
  out.push(botToBotFinding(agentId, bot, privacy, checked.length, checked.filter((x) => x.admin).length));
  if (chats.length > MAX_CHATS) out.push(warn(subject, `is in ${chats.length} groups; only the first ${MAX_CHATS} were checked`, 'nothing to do; run with fewer groups to check the rest'));
  return out;
}

/**
 * Webhook mode: is the webhook set to the URL Chorus uses, how many updates wait, and what went
 * wrong last time Telegram tried to deliver one. Polling mode: a webhook left set makes polling
 * fail with 409 until Chorus deletes it at start.
 */
async function checkWebhook(api: Api, token: string, subject: string, bot: string, expected: string | null): Promise<Finding[]> {
  let info;
  try {
    info = await api.getWebhookInfo(AbortSignal.timeout(15_000) as Parameters<Api['getWebhookInfo']>[0]);
  } catch (err) {
    return [warn(`${subject} webhook`, `could not read the webhook state (${describeError(err, [token])})`, 'run doctor again; if it persists, check the network')];
  }
  const s = `${subject} webhook`;
  const pending = `${info.pending_update_count} update(s) waiting`;
  if (expected === null) {
    return info.url
      ? [warn(s, `${bot} has a webhook set (${info.url}, ${pending}) while Chorus is configured to poll`, 'nothing to do if Chorus starts in polling mode: it deletes the webhook (keeping pending updates); if another program uses this bot, give Chorus its own bot')]
      : [];
  }
  const out: Finding[] = [];
  if (!info.url) out.push(warn(s, `${bot} has no webhook set (${pending})`, 'start Chorus: it sets the webhook at start'));
  else if (info.url !== expected) {
    const sameBase = info.url.split('?')[0] === expected.split('?')[0];
    out.push(
      warn(
        s,
        sameBase ? `${bot}'s webhook was set with another secret_token (${pending})` : `${bot}'s webhook points to ${info.url}, not ${expected.split('?')[0]} (${pending})`,
        'restart Chorus: it sets the webhook from channels.telegram.webhook at start',
      ),
    );
  } else out.push(ok(s, `${bot}'s webhook is set to ${expected.split('?')[0]} (${pending})`));
  if (info.last_error_message) {
    const when = info.last_error_date ? new Date(info.last_error_date * 1000).toISOString() : 'at an unknown time';
    out.push(
      warn(
        s,
        `Telegram's last delivery to ${bot}'s webhook failed ${when}: ${info.last_error_message}`,
        /401/.test(info.last_error_message)
          ? 'the secret token Chorus checks differs from the one Telegram sends: restart Chorus so it sets the webhook again'
          : 'check that the public URL reaches Chorus through the reverse proxy (https, valid certificate, path forwarded unchanged) and that Chorus is running; Telegram retries on its own',
      ),
    );
  }
  return out;
}
