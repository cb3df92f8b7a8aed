/**
 * The relay bot (`channels.telegram.relay_token`): a bot of its own that posts what people wrote
 * in the room's other chats, under their names. It only sends: it never polls and takes no
 * updates (the agents' bots read the chats), so it needs no webhook and no lease. Its identity
 * (getMe) is read at start so that its own posts, seen by agent bots in bot-to-bot mode, are
 * known as Chorus's and never taken as input.
 */
import { autoRetry } from '@grammyjs/auto-retry';
import { Bot } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import type { Logger } from '../../core/ports.js';
import type { ChannelPartStatus } from '../../core/readModels.js';
import { apiErrorCode, describeError } from './errors.js';

export class RelayBot {
  readonly bot: Bot;
  me: UserFromGetMe | undefined;
  /** Telegram refused the token (401/404): relayed messages go through an agent's bot instead. */
  rejected = false;
  problem: string | null = null;

  constructor(token: string, apiRoot: string, private readonly log: Logger) {
    this.bot = new Bot(token, { client: { apiRoot } });
    // As for the agents' bots, a 429 is waited out, so posts to one chat keep their order. A 5xx
    // is not: the core tries a relayed post again later, in order, and this chat's queue (agents'
    // posts too) is not held by a backoff that can run for many minutes.
    this.bot.api.config.use(autoRetry({ maxRetryAttempts: 10, maxDelaySeconds: 600, rethrowHttpErrors: true, rethrowInternalServerErrors: true }));
  }

  get token(): string {
    return this.bot.token;
  }

  /** Ready to post: Telegram accepted its token. */
  get ready(): boolean {
    return this.me !== undefined && !this.rejected;
  }

  /** getMe; 'retry' when Telegram could not be reached (the caller tries again later). Never throws. */
  async bringUp(): Promise<'ok' | 'fatal' | 'retry'> {
    try {
      this.me = await this.bot.api.getMe();
      this.problem = null;
      this.log.info({ bot: this.me.username }, 'telegram: relay bot is up; people from the room\'s other chats are posted through it');
      return 'ok';
    } catch (err) {
      this.problem = describeError(err, [this.token]);
      const code = apiErrorCode(err);
      if (code === 401 || code === 404) {
        this.rejected = true;
        this.log.error({ code }, 'telegram: Telegram rejected channels.telegram.relay_token; relayed messages go through an agent\'s bot instead — copy the token again from @BotFather');
        return 'fatal';
      }
      this.log.warn({ err: this.problem }, 'telegram: cannot reach the Bot API for the relay bot; will retry (meanwhile an agent\'s bot relays)');
      return 'retry';
    }
  }

  health(): ChannelPartStatus {
    const name = this.me ? `@${this.me.username}` : undefined;
    if (this.rejected) return { ok: false, state: 'unauthorized', name, error: `${this.problem ?? 'token rejected'} — check channels.telegram.relay_token` };
    if (!this.me) return this.problem ? { ok: false, state: 'unreachable', name, error: `cannot reach the Bot API: ${this.problem}; retrying` } : { ok: false, state: 'starting', name };
    return { ok: true, state: 'ready', name, note: 'relay bot: posts people from the room\'s other chats' };
  }
}
