/**
 * Rooms across chats: a group that lives in several chats. Posts every entry's copies in the
 * room's other chats (one queue per chat, so a chat that is down holds back nothing elsewhere),
 * carries edits and deletions to them, and takes people's edits from the platforms.
 */
import type { Clock, Logger } from '../ports.js';
import type { RunningGroups } from '../peers.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { Outbox } from '../router/Outbox.js';
import type { PlatformEdit } from '../roomTypes.js';

export interface RoomsDeps {
  groups: GroupManager;
  outbox: Outbox;
  running: RunningGroups;
  clock: Clock;
  logger: Logger;
  shutdown: AbortSignal;
}

export class Rooms {
  constructor(private readonly d: RoomsDeps) {}

  /** A person edited or deleted a message on a platform. */
  async edited(e: PlatformEdit): Promise<void> {
    this.d.logger.debug({ channel: e.channel, chat: e.chatId }, 'platform edit ignored');
  }
}
