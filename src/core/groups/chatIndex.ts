/**
 * Which live group each chat belongs to: its home chat and every chat linked to its room. A web
 * link's chat id is the group's id, so the web room of a Telegram-home group is found as
 * `('web', g.id)`. Rebuilt from the groups' heads at start; kept right by GroupManager as links,
 * archives and re-keys change them.
 */
import type { GroupDoc } from '../records.js';
import type { ChannelKind } from '../types.js';
import { chatKey } from './groupIds.js';

export class ChatIndex {
  private readonly byChat = new Map<string, string>();

  /** The id of the live group the chat belongs to. */
  get(channel: ChannelKind, chatId: string, dmAgentId?: string): string | undefined {
    return this.byChat.get(chatKey(channel, chatId, dmAgentId));
  }

  /** Index every chat of a live group (an archived group holds no chat). */
  add(g: GroupDoc): void {
    if (g.state.archived) return;
    for (const k of keysOf(g)) this.byChat.set(k, g.id);
  }

  /** Forget the chats of a group (only where they still point at it). */
  remove(g: GroupDoc): void {
    for (const k of keysOf(g)) if (this.byChat.get(k) === g.id) this.byChat.delete(k);
  }

  /** Apply `change` to the group with its chats indexed again afterwards (links, re-keys). */
  around(g: GroupDoc, change: () => void): void {
    this.remove(g);
    change();
    this.add(g);
  }
}

function keysOf(g: GroupDoc): string[] {
  const keys = [chatKey(g.channel, g.chatId, g.dmAgentId)];
  for (const l of g.links ?? []) keys.push(chatKey(l.channel, l.chatId));
  return keys;
}
