/**
 * Where a post goes on Telegram: a Chorus chat id (a DM names its agent: `dm:<agent>:<user>`) as
 * the Telegram chat id to call, following group → supergroup upgrades, the forum topic, and a
 * reply target in the sending bot's own numbering (basic groups number messages per bot).
 */
import type { ChatRef } from '../../core/types.js';
import type { BasicGroupIds } from './basicIds.js';
import { isBasicGroupId, parseChatId } from './normalize.js';

export class ChatAddresses {
  /** old chat id → new chat id after group → supergroup upgrades. */
  readonly migrations = new Map<number, number>();

  constructor(private readonly basic: BasicGroupIds) {}

  /** Telegram chat id to send to, following known migrations. */
  target(chat: ChatRef): { tgId: number; threadId: number | undefined; dmAgentId: string | undefined } {
    const parsed = parseChatId(chat.chatId);
    let tgId = parsed.tgId;
    for (let i = 0; i < 3 && this.migrations.has(tgId); i++) tgId = this.migrations.get(tgId)!;
    const threadId = chat.threadId !== undefined && /^\d+$/.test(chat.threadId) ? Number(chat.threadId) : undefined;
    return { tgId, threadId, dmAgentId: parsed.dmAgentId };
  }

  /** The reply target in the numbering of `poster`'s bot (an agent's, or the relay's), when we know it. */
  replyId(chat: ChatRef, tgId: number, poster: string, replyTo: string | undefined): number | undefined {
    if (replyTo === undefined) return undefined;
    if (/^\d+$/.test(replyTo)) return isBasicGroupId(tgId) ? undefined : Number(replyTo);
    return this.basic.ownIdOfKey(parseChatId(chat.chatId).tgId, poster, replyTo);
  }
}
