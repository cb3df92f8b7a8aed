/**
 * Which chats a room has and which of them each entry is owed to. Pure functions over the group:
 * evolve and the Recorder use them alike, so an entry's copies are decided once, when it is
 * recorded, and travel in its record.
 */
import type { GroupHead } from '../records.js';
import type { InboundMessage, TranscriptEntry } from '../types.js';
import { chatKeyOf, type ChatAddress, type ChatCopy } from '../roomTypes.js';

type Room = Pick<GroupHead, 'channel' | 'chatId' | 'links'>;

/** The group's own chat. */
export function homeOf(g: Room): ChatAddress {
  return { channel: g.channel, chatId: g.chatId };
}

/** Every chat of the room, its home first. */
export function roomChats(g: Room): ChatAddress[] {
  return [homeOf(g), ...(g.links ?? []).map((l) => ({ channel: l.channel, chatId: l.chatId }))];
}

export function sameChat(a: ChatAddress, b: ChatAddress): boolean {
  return a.channel === b.channel && a.chatId === b.chatId;
}

/** The chat a message came from, when it is not the group's home (an entry's `origin`). */
export function originOf(g: Room, msg: Pick<InboundMessage, 'channel' | 'chatId'>): ChatAddress | undefined {
  const from = { channel: msg.channel, chatId: msg.chatId };
  return sameChat(from, homeOf(g)) ? undefined : from;
}

/**
 * The key a message is remembered by for dedupe: its platform id in the home chat (as groups in
 * one chat always did), qualified by its chat in a linked one (two Telegram groups both have a
 * message 42).
 */
export function seenKey(origin: ChatAddress | undefined, platformMessageId: string): string {
  return origin ? `${chatKeyOf(origin)}:${platformMessageId}` : platformMessageId;
}

/** The dedupe key of an inbound message in this group. */
export function seenKeyOf(g: Room, msg: Pick<InboundMessage, 'channel' | 'chatId' | 'messageId'>): string {
  return seenKey(originOf(g, msg), msg.messageId);
}

/**
 * The copies an entry is owed in the room's other chats, decided when it is recorded; undefined
 * for a group in one chat (most groups: nothing changes for them). The web never gets a copy: the
 * page shows the transcript itself.
 * - A person's message (not a command) goes to every chat but the one it was written in.
 * - An agent's reply, a tool step or a notice the home chat gets (`delivery: 'pending'`) goes to
 *   every linked chat too.
 * - A notice that answers in one linked chat (a command's reply there: `origin`) goes there alone.
 */
export function copiesFor(g: Room, e: Pick<TranscriptEntry, 'kind' | 'hiddenFromAgents' | 'delivery' | 'origin'>): Record<string, ChatCopy> | undefined {
  if (!g.links?.length) return undefined;
  let to: ChatAddress[];
  if (e.kind === 'human') {
    if (e.hiddenFromAgents) return undefined;
    const from = e.origin ?? homeOf(g);
    to = roomChats(g).filter((c) => !sameChat(c, from));
  } else if (e.origin) {
    to = [e.origin];
  } else if (e.delivery === 'pending') {
    to = roomChats(g).slice(1);
  } else return undefined;
  const out: Record<string, ChatCopy> = {};
  for (const c of to) if (c.channel !== 'web') out[chatKeyOf(c)] = { delivery: 'pending' };
  return Object.keys(out).length ? out : undefined;
}
