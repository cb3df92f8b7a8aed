/**
 * People editing their messages on Telegram (`edited_message`): handed to the core, which changes
 * the entry and carries the edit to the room's other chats. Every agent bot that saw a message gets
 * its own copy of each edit; the copies of one edit (chat, message, edit_date) share one hand-over.
 *
 * Deletions cannot be followed: the Bot API sends bots no update when a message is deleted.
 */
import type { Message } from 'grammy/types';
import { BoundedMap } from '../../core/lib/BoundedMap.js';
import type { ChannelHost, Logger } from '../../core/ports.js';
import type { PlatformEdit } from '../../core/roomTypes.js';
import type { BasicGroupIds } from './basicIds.js';
import { dmChatId, isBasicGroupId, userName, type BotDirectory } from './normalize.js';
import { cleanDisplayName } from '../../core/text/displayName.js';

export interface InboundEditsDeps {
  log: Logger;
  host(): ChannelHost | undefined;
  basic: BasicGroupIds;
  directory: BotDirectory;
}

export class InboundEdits {
  /** `chat:message:edit_date` → the one hand-over every bot's copy of that edit shares. */
  private readonly handing = new BoundedMap<string, Promise<void>>(5_000);

  constructor(private readonly deps: InboundEditsDeps) {}

  /** Resolves once the core took the edit; rejects when it could not (the update is delivered again). */
  async received(agentId: string, msg: Message): Promise<void> {
    const host = this.deps.host();
    if (!host) return;
    const edit = this.normalize(agentId, msg);
    if ('skip' in edit) {
      this.deps.log.debug({ agent: agentId, messageId: msg.message_id, reason: edit.skip }, 'telegram: edit skipped');
      return;
    }
    const key = `${edit.chatId}:${edit.platformMessageId}:${msg.edit_date ?? 0}`;
    let p = this.handing.get(key);
    if (!p) {
      p = host.handle({ kind: 'edit', edit: edit }).catch((err: unknown) => {
        this.handing.delete(key); // a redelivered copy tries again
        throw err;
      });
      this.handing.set(key, p);
    }
    await p;
  }

  private normalize(agentId: string, msg: Message): PlatformEdit | { skip: string } {
    if (msg.chat.type === 'channel') return { skip: 'a channel post' };
    const from = msg.from;
    if (from?.is_bot && this.deps.directory.isOwnBot(from.id)) return { skip: "Chorus's own bot (an agent or the relay)" };
    if (from?.is_bot && msg.chat.type === 'private') return { skip: 'a bot in a private chat' };
    const author = msg.sender_chat
      ? { id: String(msg.sender_chat.id), name: cleanDisplayName('title' in msg.sender_chat ? (msg.sender_chat.title ?? '') : '') || 'Anonymous' }
      : from
        ? { id: String(from.id), name: userName(from) }
        : undefined;
    if (!author) return { skip: 'no author' };
    // Basic groups number messages per bot: the id Chorus knows it by was noted when this bot saw it.
    const platformMessageId = isBasicGroupId(msg.chat.id) ? this.deps.basic.nameOf(msg.chat.id, agentId, msg.message_id) : String(msg.message_id);
    if (platformMessageId === undefined) return { skip: 'a basic-group message this bot did not see since the start' };
    const chatId = msg.chat.type === 'private' ? dmChatId(agentId, msg.chat.id) : String(msg.chat.id);
    return { channel: 'telegram', chatId, platformMessageId, author, text: msg.text ?? msg.caption ?? '' };
  }
}
