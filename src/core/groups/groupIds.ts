/** How groups are named and found: ids made from chats and titles, and the key of the chat index. */
import type { ChannelKind } from '../types.js';

/**
 * The id a new group of this chat is given when it is free (else a `-2`, `-3`… is added). A
 * declared web room's id is its chat id instead.
 */
export function naturalGroupId(channel: ChannelKind, chatId: string, title: string): string {
  return (channel === 'web' ? slugify(title) || 'room' : `${channel === 'telegram' ? 'tg' : 'dc'}-${slugify(chatId) || 'chat'}`).slice(0, 60);
}

/** Private chats share one chat id across bots, so the agent is part of their key. */
export function chatKey(channel: ChannelKind, chatId: string, dmAgentId?: string): string {
  return dmAgentId ? `${channel}:${chatId}#${dmAgentId}` : `${channel}:${chatId}`;
}

/** Lower-case slug usable as a file name. */
function slugify(s: string): string {
  return s
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
}

