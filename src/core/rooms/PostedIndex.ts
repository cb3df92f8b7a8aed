/**
 * Which entry a platform message is, in any chat: a person's own message, an agent's post in the
 * home chat, a copy in a linked chat. A reply on Telegram to a relayed copy then threads to the
 * same entry on Discord and the web, and a reply to an agent's message (any of its copies)
 * addresses that agent. Bounded: the oldest ids are forgotten (a reply to a very old message
 * is then an ordinary message).
 */
import type { GroupHead } from '../records.js';
import type { InboundMessage, TranscriptEntry } from '../types.js';
import { BoundedMap } from '../lib/BoundedMap.js';
import { chatKeyOf, chatOfKey, type ChatAddress } from '../roomTypes.js';
import { homeOf } from './chats.js';

/** Platform ids remembered; older ones are forgotten. */
const POSTED_MAX = 50_000;

export interface PostedEntry {
  entryId: string;
  /** The agent that wrote it, when it is an agent's reply. */
  agentId?: string | undefined;
}

export class PostedIndex {
  /** `chat:platformId` → `entryId` or `entryId agentId`: one string each, as most deployments hold tens of thousands. */
  private readonly map = new BoundedMap<string, string>(POSTED_MAX);

  note(chat: ChatAddress, platformId: string, entry: Pick<TranscriptEntry, 'id' | 'agentId'>): void {
    this.map.set(`${chatKeyOf(chat)}:${platformId}`, entry.agentId ? `${entry.id} ${entry.agentId}` : entry.id);
  }

  find(chat: ChatAddress, platformId: string): PostedEntry | undefined {
    const v = this.map.get(`${chatKeyOf(chat)}:${platformId}`);
    if (v === undefined) return undefined;
    const space = v.indexOf(' ');
    return space < 0 ? { entryId: v } : { entryId: v.slice(0, space), agentId: v.slice(space + 1) };
  }

  /** Learn every platform id an entry has: its home posts, its copies, a person's own message. */
  learn(g: Pick<GroupHead, 'channel' | 'chatId' | 'links'>, e: TranscriptEntry): void {
    const home = homeOf(g);
    // A group in one chat needs only its agents' posts (a reply to one addresses that agent).
    const room = !!g.links?.length;
    if (room && e.kind === 'human' && e.platformMessageId) this.note(e.origin ?? home, e.platformMessageId, e);
    if (room || e.agentId) for (const id of e.postedIds ?? []) this.note(home, id, e);
    for (const key in e.copies) for (const id of e.copies[key]!.ids ?? []) this.note(chatOfKey(key), id, e);
  }
}

/**
 * In a room of several chats, a message that replies to a platform message (`replyToPlatformId`)
 * replies to the entry that message is — whichever chat's copy it was — and addresses its agent.
 */
export function withReplyResolved(g: Pick<GroupHead, 'links'>, msg: InboundMessage, index: PostedIndex): InboundMessage {
  if (!g.links?.length || !msg.replyToPlatformId || msg.replyToEntryId) return msg;
  const found = index.find({ channel: msg.channel, chatId: msg.chatId }, msg.replyToPlatformId);
  if (!found) return msg;
  return { ...msg, replyToEntryId: found.entryId, replyToAgentId: msg.replyToAgentId ?? found.agentId };
}
