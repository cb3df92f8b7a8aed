/**
 * Basic groups number messages per account: one message has another id for every bot, so the id
 * a bot sees (a reply target, a reacted message) says nothing to the other bots. Chorus knows a
 * person's message there by its shared key (`messageKey`, normalize.ts) and an agent's post by the
 * ids its own bot got. This keeps, for the recent messages, each bot's own id of them both ways.
 * Supergroups and private chats have shared ids and need none of it.
 */
import type { Message } from 'grammy/types';
import { BoundedMap } from '../../core/lib/BoundedMap.js';
import { messageKey } from './normalize.js';

const KEPT = 2000;

export class BasicGroupIds {
  /** `${chatId}|${messageKey}` → agent → that bot's own id of the message. */
  private readonly seen = new BoundedMap<string, Map<string, number>>(KEPT);
  /** `${chatId}|${agentId}|${its own id}` → the id Chorus knows the message by. */
  private readonly names = new BoundedMap<string, string>(KEPT * 4);

  /** `agentId`'s bot received a person's message in a basic group. */
  noteSeen(msg: Message, agentId: string): void {
    const key = messageKey(msg);
    const k = `${msg.chat.id}|${key}`;
    let m = this.seen.get(k);
    if (!m) this.seen.set(k, (m = new Map()));
    m.set(agentId, msg.message_id);
    this.names.set(`${msg.chat.id}|${agentId}|${msg.message_id}`, key);
  }

  /** `agentId`'s bot posted these messages in a basic group (Chorus keeps them by these ids). */
  notePosted(chatId: number, agentId: string, ids: readonly number[]): void {
    for (const id of ids) this.names.set(`${chatId}|${agentId}|${id}`, String(id));
  }

  /** `agentId`'s own id of a person's message known by its key, when its bot received it. */
  ownIdOfKey(chatId: number, agentId: string, key: string): number | undefined {
    return this.seen.get(`${chatId}|${key}`)?.get(agentId);
  }

  /**
   * `agentId`'s own id of the message Chorus knows as `platformId`: a person's message by its key,
   * the bot's own post by its id. Another bot's post has an id in that bot's numbering: unknown.
   */
  ownId(chatId: number, agentId: string, platformId: string): number | undefined {
    if (!/^\d+$/.test(platformId)) return this.ownIdOfKey(chatId, agentId, platformId);
    return this.names.get(`${chatId}|${agentId}|${platformId}`) === platformId ? Number(platformId) : undefined;
  }

  /** The id Chorus knows the message by that `agentId`'s bot numbers `ownId`, when known. */
  nameOf(chatId: number, agentId: string, ownId: number): string | undefined {
    return this.names.get(`${chatId}|${agentId}|${ownId}`);
  }
}
