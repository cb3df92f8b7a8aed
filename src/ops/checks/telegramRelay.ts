/**
 * Doctor check of each Telegram chat of a room across chats: can the bot that posts people from
 * the room's other chats there post? That is the relay bot (`channels.telegram.relay_token`), or
 * when it is not set or cannot post there, the first participant's bot, which stands in for it
 * (the agents' own posts are checked per bot by the Telegram check). Read-only: getMe and
 * getChatMember, nothing is sent.
 */
import { Api, GrammyError } from 'grammy';
import type { ChorusConfig } from '../../config/schema.js';
import { describeError } from '../../channels/telegram/errors.js';
import { fail, ok, warn, type Finding } from '../findings.js';
import type { TelegramChat } from './telegram.js';

/** Chats checked at most; a doctor run should stay short. */
const MAX_CHATS = 100;

/** A bot's place in one chat: its @name and whether it may post there, or why not. */
interface Seat {
  bot: string;
  why: string | null;
}

export async function checkRelayIn(config: ChorusConfig, chats: readonly TelegramChat[]): Promise<Finding[]> {
  const tg = config.channels.telegram;
  if (!tg.enabled || chats.length === 0) return [];
  const apiRoot = tg.api_root.replace(/\/+$/, '');
  const relayToken = tg.relay_token?.trim() || undefined;
  const tokenOf = (agentId: string) => config.agents.find((a) => a.id === agentId)?.telegram?.token.trim() || undefined;
  const me = new Map<string, Promise<{ id: number; bot: string } | { why: string }>>();
  const identity = (token: string) => {
    let p = me.get(token);
    if (!p) me.set(token, (p = whoIs(new Api(token, { apiRoot }), token)));
    return p;
  };
  const seat = async (token: string, chatId: string): Promise<Seat> => {
    const who = await identity(token);
    if ('why' in who) return { bot: 'the bot', why: who.why };
    return { bot: who.bot, why: await cannotPost(new Api(token, { apiRoot }), token, chatId, who.id) };
  };
  const out: Finding[] = [];
  for (const chat of chats.slice(0, MAX_CHATS)) {
    const subject = `telegram relay in "${chat.title}" (${chat.chatId})`;
    const standIn = chat.participants.find((p) => tokenOf(p));
    const fallback = standIn ? await seat(tokenOf(standIn)!, chat.chatId) : undefined;
    const through = fallback && !fallback.why ? `${fallback.bot} (${standIn})` : undefined;
    const noStandIn = fallback ? `${fallback.bot} (${standIn}), which would stand in, ${fallback.why}` : 'no participant has a Telegram bot to stand in';
    if (relayToken) {
      const relay = await seat(relayToken, chat.chatId);
      if (!relay.why) out.push(ok(subject, `${relay.bot} is in the group and may post: people from the room's other chats are posted through it`));
      else if (through) out.push(warn(subject, `the relay bot ${relay.bot} ${relay.why}; people from the room's other chats are posted through ${through} instead`, `add ${relay.bot} to the group (it only posts)`));
      else out.push(fail(subject, `the relay bot ${relay.bot} ${relay.why}, and ${noStandIn}: people from the room's other chats are not shown there`, `add ${relay.bot} to the group (it only posts)`));
      continue;
    }
    if (through) out.push(ok(subject, `no relay bot (channels.telegram.relay_token); people from the room's other chats are posted through ${through}`));
    else out.push(fail(subject, `no relay bot (channels.telegram.relay_token), and ${noStandIn}: people from the room's other chats are not shown there`, fallback ? `add ${fallback.bot} to the group, or give the room a relay bot: set channels.telegram.relay_token and add that bot to the group` : 'give the room a relay bot: set channels.telegram.relay_token and add that bot to the group'));
  }
  if (chats.length > MAX_CHATS) out.push(warn('telegram relay', `the rooms have ${chats.length} Telegram chats; only the first ${MAX_CHATS} were checked`, 'nothing to do'));
  return out;
}

async function whoIs(api: Api, token: string): Promise<{ id: number; bot: string } | { why: string }> {
  try {
    const me = await api.getMe(AbortSignal.timeout(15_000) as Parameters<Api['getMe']>[0]);
    return { id: me.id, bot: `@${me.username}` };
  } catch (err) {
    const rejected = err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404);
    return { why: rejected ? `has a token Telegram rejects (${describeError(err, [token])})` : `could not be checked (${describeError(err, [token])})` };
  }
}

/** Why this bot cannot post in the chat, or null when it can. */
async function cannotPost(api: Api, token: string, chatId: string, botId: number): Promise<string | null> {
  try {
    const m = await api.getChatMember(chatId, botId, AbortSignal.timeout(15_000) as Parameters<Api['getChatMember']>[2]);
    if (m.status === 'left' || m.status === 'kicked') return `is not in the group (${m.status})`;
    if (m.status === 'restricted' && (!m.is_member || !m.can_send_messages)) return 'may not send messages there (restricted)';
    return null;
  } catch (err) {
    const code = err instanceof GrammyError ? err.error_code : undefined;
    const why = describeError(err, [token]);
    return code === 400 || code === 403 ? `is not in the group (${why})` : `could not be checked (${why})`;
  }
}
