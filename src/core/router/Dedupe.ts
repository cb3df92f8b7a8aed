/**
 * The one answer to "was this inbound message taken before?". A message of a group is known by
 * its platform id in the group's durable memory (kept ≥ 24 h, written with the group's records);
 * a message handled in a chat that has no group (a command sent to several bots) is known by
 * chat and id in a bounded memory of recent ones.
 *
 * A group's memory counts only once it is durable: an id whose record is still being written
 * waits for that write, and a group object that is broken or replaced (a refused write, a lost
 * lease) may remember ids whose records never landed, so it proves nothing.
 */
import type { GroupDoc } from '../records.js';
import type { InboundMessage } from '../types.js';
import type { GroupManager } from '../groups/GroupManager.js';
import { BoundedSet } from '../lib/BoundedMap.js';
import { seenKeyOf } from '../rooms/chats.js';

/** How many messages of chats without a group are remembered. */
const CHATLESS_SEEN = 2000;

export class Dedupe {
  private readonly chatless = new BoundedSet<string>(CHATLESS_SEEN);

  constructor(private readonly groups: GroupManager) {}

  /**
   * Whether the message is remembered at all: in its chat before the chat had a group (even if
   * the group exists by now, e.g. the `/group create` that made it), or by its group. Synchronous
   * on purpose: a caller that records the message without awaiting anything in between is sure a
   * copy arriving meanwhile (another bot's) finds it remembered.
   */
  remembers(g: GroupDoc | undefined, msg: InboundMessage): boolean {
    return this.chatless.has(chatKey(msg)) || (!!g && this.groups.isSeen(g, seenKeyOf(g, msg)));
  }

  /** For a message it `remembers`: true once that memory is durable (the message was taken). */
  async confirmed(g: GroupDoc | undefined, msg: InboundMessage): Promise<boolean> {
    if (this.chatless.has(chatKey(msg))) return true;
    if (!g || !this.groups.usable(g)) return false;
    try {
      // Another copy (a second bot, a redelivery) may still be writing the original: the channel
      // confirms this copy as soon as we answer, so the original must be durable first.
      await this.groups.durable(g);
    } catch {
      return false;
    }
    return this.groups.usable(g) && this.groups.isSeen(g, seenKeyOf(g, msg));
  }

  /** Remember a message handled in a chat that has no group. */
  rememberChatless(msg: InboundMessage): void {
    this.chatless.add(chatKey(msg));
  }
}

function chatKey(msg: InboundMessage): string {
  return `${msg.channel}:${msg.chatId}:${msg.messageId}`;
}
