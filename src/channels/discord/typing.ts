/**
 * The typing indicator while an agent writes. Webhooks cannot type, so the indicator shows the
 * bot, which is the closest Discord offers; it lasts about 10 seconds, so it is sent again every
 * TYPING_REFRESH_MS until the reply is posted.
 */
import { Routes, type Client } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { ChatRef } from '../../core/types.js';
import { TYPING_REFRESH_MS } from './config.js';
import { sanitizeError } from './errors.js';

export class TypingIndicators {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly log: Logger) {}

  /** Show the bot typing in `chat` until the returned function is called (once is enough). */
  start(client: Client, chat: ChatRef): () => void {
    const target = chat.threadId ?? chat.chatId;
    const ping = () => {
      client.rest.post(Routes.channelTyping(target)).catch((err: unknown) => {
        this.log.debug({ chatId: chat.chatId, reason: sanitizeError(err, 'typing').message }, 'discord: typing indicator failed');
      });
    };
    ping();
    const timer = setInterval(ping, TYPING_REFRESH_MS);
    timer.unref();
    this.timers.add(timer);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      this.timers.delete(timer);
    };
  }

  /** Stop every indicator (the channel stops). */
  stopAll(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
  }
}
