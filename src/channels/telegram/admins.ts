/**
 * Who may run admin commands in a Telegram chat: the chat's administrators as Telegram reports
 * them, cached briefly so a burst of commands costs one API call, or ids from `telegram.admins`.
 */
import type { Bot } from 'grammy';
import type { Logger } from '../../core/ports.js';
import { describeError } from './errors.js';

const TTL_MS = 60_000;

export class AdminCache {
  private readonly cache = new Map<number, { ids: Set<string>; at: number }>();

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

  private async fetch(chatId: number, bots: readonly Bot[]): Promise<Set<string> | undefined> {
    // Any bot in the chat can ask; try the next one if one is not (or no longer) a member.
    for (const bot of bots) {
      try {
        const admins = await bot.api.getChatAdministrators(chatId);
        const ids = new Set(admins.map((m) => String(m.user.id)));
        this.cache.set(chatId, { ids, at: this.now() });
        return ids;
      } catch (err) {
        this.log.warn({ chatId, err: describeError(err, [bot.token]) }, 'telegram: could not list chat administrators');
      }
    }
    return undefined;
  }
}
