/**
 * Who may run admin commands in a Telegram chat: the chat's administrators as Telegram reports
 * them, cached briefly so a burst of commands costs one API call, or ids from `telegram.admins`.
 *
 * The same list says which of the agents' bots are admins: Telegram sends reactions
 * (`message_reaction`) only to those. A bot's own promotion or demotion also comes as its
 * `my_chat_member` update; whichever Chorus heard last counts (`botIsAdmin`).
 */
import type { Bot } from 'grammy';
import type { ChatMember } from 'grammy/types';
import type { Logger } from '../../core/ports.js';
import { describeError } from './errors.js';

const TTL_MS = 60_000;

export class AdminCache {
  private readonly cache = new Map<number, { ids: Set<string>; at: number }>();
  /** `${chatId}|${bot user id}` → the bot's status from its own my_chat_member update. */
  private readonly noted = new Map<string, { admin: boolean; at: number }>();
  private readonly fetching = new Map<number, Promise<Set<string> | undefined>>();
  /** When `refresh` last asked, per chat: a chat whose list cannot be read is asked again a minute later, not at every message. */
  private readonly asked = new Map<number, number>();

  constructor(
    private readonly configured: readonly string[],
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Forget a chat's admins (membership changed, chat migrated). */
  invalidate(chatId: number): void {
    this.cache.delete(chatId);
  }

  async isAdmin(chatId: number, userId: string, bots: readonly Bot[]): Promise<boolean> {
    if (this.configured.includes(userId)) return true;
    const hit = this.cache.get(chatId);
    if (hit && this.now() - hit.at < TTL_MS) return hit.ids.has(userId);
    const ids = await this.fetch(chatId, bots);
    return ids?.has(userId) ?? false;
  }

  /** One of our bots' status changed in a chat (its my_chat_member update). */
  noteBot(chatId: number, member: ChatMember): void {
    const admin = member.status === 'administrator' || member.status === 'creator';
    this.noted.set(`${chatId}|${member.user.id}`, { admin, at: this.now() });
  }

  /** Is this bot an admin of the chat, as last heard (undefined: not known)? */
  botIsAdmin(chatId: number, botUserId: number): boolean | undefined {
    const noted = this.noted.get(`${chatId}|${botUserId}`);
    const list = this.cache.get(chatId);
    if (noted && (!list || noted.at >= list.at)) return noted.admin;
    return list ? list.ids.has(String(botUserId)) : undefined;
  }

  /** Read the chat's admins again when the list is older than `maxAgeMs` (or was never read); never throws. */
  refresh(chatId: number, bots: readonly Bot[], maxAgeMs = TTL_MS): void {
    const hit = this.cache.get(chatId);
    const now = this.now();
    if ((hit && now - hit.at < maxAgeMs) || now - (this.asked.get(chatId) ?? -Infinity) < TTL_MS) return;
    this.asked.set(chatId, now);
    void this.fetch(chatId, bots);
  }

  /** One request per chat at a time, however many callers ask. */
  private fetch(chatId: number, bots: readonly Bot[]): Promise<Set<string> | undefined> {
    let p = this.fetching.get(chatId);
    if (!p) {
      p = this.read(chatId, bots).finally(() => this.fetching.delete(chatId));
      this.fetching.set(chatId, p);
    }
    return p;
  }

  private async read(chatId: number, bots: readonly Bot[]): Promise<Set<string> | undefined> {
    // Any bot in the chat can ask; try the next one if one is not (or no longer) a member.
    for (const bot of bots) {
      // When it was asked, not answered: a promotion heard meanwhile is newer than this list.
      const at = this.now();
      try {
        const admins = await bot.api.getChatAdministrators(chatId);
        const ids = new Set(admins.map((m) => String(m.user.id)));
        this.cache.set(chatId, { ids, at });
        return ids;
      } catch (err) {
        this.log.warn({ chatId, err: describeError(err, [bot.token]) }, 'telegram: could not list chat administrators');
      }
    }
    return undefined;
  }
}
