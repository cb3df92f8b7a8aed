/**
 * Rooms across chats: a group that lives in several chats (a Telegram group, a Discord channel,
 * the web room). Its posts go through one delivery queue per chat (ChatDelivery); a person's edit
 * or deletion on a platform changes their entry, and from there every copy of it.
 */
import type { Logger, Store } from '../ports.js';
import type { RunningGroups } from '../peers.js';
import type { GroupDoc, GroupRecord } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { PlatformEdit } from '../roomTypes.js';
import { UserError } from '../errors.js';
import { ChatDelivery, type ChatDeliveryDeps } from './ChatDelivery.js';
import { homeOf, sameChat } from './chats.js';
import { entryAt, seqOfId } from '../groups/evolve.js';

export interface RoomsDeps extends ChatDeliveryDeps {
  store: Store;
  /** Change a person's message as its author did on a platform (the message editor; see MessageEditor). */
  editEntry(groupId: string, entryId: string, change: { text: string } | { deleted: true }): Promise<unknown>;
  maxChars: number;
}

export class Rooms {
  readonly delivery: ChatDelivery;
  private readonly log: Logger;

  constructor(private readonly d: RoomsDeps & { running: RunningGroups; groups: GroupManager }) {
    this.delivery = new ChatDelivery(d);
    this.log = d.logger;
  }

  /** A record of the group is durable (absent: the group was loaded): post what its chats are owed. */
  landed(g: GroupDoc, rec?: GroupRecord): void {
    // Its messages' platform ids: a reply or an edit on any platform finds them.
    if (g.links?.length) for (const e of rec?.entries ?? []) this.d.posted.learn(g, e);
    this.delivery.kick(g, rec);
  }

  /**
   * A person edited or deleted a message on a platform. Only their own message changes (a
   * deletion the platform reports is taken whoever made it: the message is gone there); one
   * Chorus does not know is left alone.
   */
  async edited(e: PlatformEdit): Promise<void> {
    const g = this.d.groups.find(e.channel, e.chatId);
    if (!g || g.state.archived) return;
    const entry = await this.personsMessage(g, e);
    if (!entry || entry.deleted) return;
    if (!e.deleted && entry.authorId !== `${e.channel}:${e.author.id}`) {
      this.log.info({ group: g.id, entry: entry.id }, 'an edit by someone other than the author was ignored');
      return;
    }
    const text = e.text?.trim() ?? '';
    // An edit that empties the message (a caption removed from a photo) keeps the text it had.
    if (!e.deleted && (!text || text === entry.text)) return;
    try {
      await this.d.editEntry(g.id, entry.id, e.deleted ? { deleted: true } : { text: text.slice(0, this.d.maxChars) });
    } catch (err) {
      // A message deleted meanwhile, or not a person's: nothing to change.
      if (!(err instanceof UserError)) throw err;
    }
  }

  async settled(): Promise<void> {
    await this.delivery.settled();
  }

  /** The person's message a platform message is (where it was written, not a copy). */
  private async personsMessage(g: GroupDoc, e: PlatformEdit): Promise<TranscriptEntry | undefined> {
    const chat = { channel: e.channel, chatId: e.chatId };
    const isOriginal = (x: TranscriptEntry | undefined) => x?.kind === 'human' && x.platformMessageId === e.platformMessageId && sameChat(x.origin ?? homeOf(g), chat);
    const known = this.d.posted.find(chat, e.platformMessageId);
    if (known) {
      const seq = seqOfId(known.entryId);
      const x = entryAt(g.transcript, seq) ?? (await this.d.store.readEntries(g.id, { afterSeq: seq - 1, limit: 1 }))[0];
      return isOriginal(x) ? x : undefined;
    }
    return g.transcript.find(isOriginal);
  }
}
