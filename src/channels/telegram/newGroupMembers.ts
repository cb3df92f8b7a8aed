/**
 * Bots added to a new group together (Telegram's "new group" with its members picked first) each
 * get their own `my_chat_member` update. The first one read forms the group; without asking who
 * else is already there, its greeting would name that bot alone and the others would join silently
 * a moment later.
 */
import type { Bot } from 'grammy';
import type { Logger } from '../../core/ports.js';
import type { AgentBot } from './bots.js';
import { describeError } from './errors.js';
import { botIdOf } from './rooms.js';

/** How long one getChatMember may take: past it, that bot joins by its own update instead. */
const ASK_TIMEOUT_MS = 10_000;

/**
 * The agents (other than `joined`'s) whose bots are members of `chatId` now, asked through the
 * bot that just joined. A bot Telegram does not answer for is left out: it joins by its own update.
 */
export async function alsoInChat(joined: AgentBot, bots: readonly AgentBot[], chatId: number, log: Logger): Promise<string[]> {
  const others = bots.filter((o) => o !== joined && o.status !== 'unauthorized');
  const found = await Promise.all(
    others.map(async (o) => {
      const id = o.me?.id ?? Number(botIdOf(o.token));
      if (!Number.isSafeInteger(id)) return undefined;
      try {
        const m = await joined.bot.api.getChatMember(chatId, id, AbortSignal.timeout(ASK_TIMEOUT_MS) as Parameters<Bot['api']['getChatMember']>[2]);
        const inChat = m.status === 'member' || m.status === 'administrator' || m.status === 'creator' || (m.status === 'restricted' && m.is_member);
        return inChat ? o.agent.id : undefined;
      } catch (err) {
        log.debug({ agent: o.agent.id, chatId, err: describeError(err, [joined.token]) }, 'telegram: could not tell whether a bot is in the new group; it joins by its own update');
        return undefined;
      }
    }),
  );
  return found.filter((id): id is string => id !== undefined);
}
