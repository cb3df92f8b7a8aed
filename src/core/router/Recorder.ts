/**
 * The one path every transcript entry takes (human messages, agent replies, notices, decisions,
 * membership lines): **record** it (id and seq assigned), make it **durable** in one log record
 * together with whatever changed with it — its live event is made from that record as it lands
 * (groups/projection.ts) — then **deliver** it through its group's `Channel`, the web feed
 * included. Rounds, commands and group management call `record`; none of them saves or emits on
 * its own.
 */
import type { GroupDoc, RoundRecord } from '../records.js';
import type { AgentDef, DecisionType, NewEntry, TranscriptEntry } from '../types.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { Outbox, PostOutcome } from './Outbox.js';
import type { ChatAddress } from '../roomTypes.js';
import type { GroupMailbox } from '../groups/GroupMailbox.js';
import { roomChats } from '../rooms/chats.js';
import { chatRefIn, idIn } from '../rooms/roomPosts.js';

export type { NewEntry } from '../types.js';

/** What changes together with the entries of one record. */
export interface RecordChange {
  entries?: NewEntry[];
  /** A round added (`add`) or finished (`done`) with this record (its progress is written as it is made). */
  round?: { record: RoundRecord; add?: boolean; done?: boolean } | undefined;
  /** Platform message id to remember for dedupe (when no entry carries it). */
  seen?: string | undefined;
  /** Agent replies thread to this platform message. */
  replyTo?: string | undefined;
  /** Of `entries`, those kept in the chat they came from: not copied to the room's other chats. */
  uncopied?: NewEntry[] | undefined;
}

export class Recorder {
  constructor(
    private readonly groups: GroupManager,
    private readonly outbox: Outbox,
    /** Its callers hold the group (a task of its mailbox); the write is waited for outside it. */
    private readonly mailbox: Pick<GroupMailbox, 'outside'>,
  ) {}

  /**
   * Entries are posted here as they are recorded, in the group's one chat. A room of several chats
   * posts through its chats' own queues instead (rooms/ChatDelivery.ts), told as each record lands.
   */
  private postsHere(g: GroupDoc): boolean {
    return !g.links?.length;
  }

  /**
   * Record, persist, publish, deliver; called by the task holding the group. Throws
   * `StoreUnavailableError` when the change could not be made durable: then nothing of it is
   * published, delivered or kept.
   */
  async record(g: GroupDoc, change: RecordChange = {}): Promise<TranscriptEntry[]> {
    if (change.round?.done && !change.entries?.length && !change.seen) {
      // A finished round alone need not be waited for: after a crash it would only be found
      // with nothing left to do and finished again.
      this.groups.finishRound(g, change.round.record);
      this.groups.commitSoon(g);
      return [];
    }
    const copies = (e: NewEntry) => !change.uncopied?.includes(e);
    const added = (change.entries ?? []).map((e) => this.groups.append(g, e, { copies: copies(e) }));
    const r = change.round;
    if (r?.add) this.groups.addRound(g, r.record);
    else if (r?.done) this.groups.finishRound(g, r.record);
    if (change.seen) this.groups.markSeen(g, change.seen);
    const { entries, durable } = this.groups.commit(g);
    const toPost = this.postsHere(g) ? entries.filter((e) => e.delivery === 'pending' && added.includes(e)) : [];
    // Its live events are made from the record as it becomes durable (groups/projection.ts). The
    // write is waited for outside the group: the group's next task appends its record meanwhile,
    // and both share one batch and one sync, as records of different groups do. The next task's
    // record lands after this one, so nothing it delivers can be seen before this is durable.
    // The posts follow the write in the same step outside; their outcomes are noted back inside.
    if (toPost.length === 0) {
      await this.mailbox.outside(g.id, () => durable);
      return added;
    }
    const outcomes = await this.mailbox.outside(g.id, async () => {
      await durable;
      const out: PostOutcome[] = [];
      for (const e of toPost) out.push(await this.outbox.post(g, e, change.replyTo, undefined, { holder: false }));
      return out;
    });
    toPost.forEach((e, i) => this.delivered(g, e, outcomes[i]!));
    return added;
  }

  /**
   * Entries appended to the group outside `record` (a reply `/stop` cut short joins the stop's own
   * record, see stoppedReply.ts): once durable they are handed to the channel like any recorded entry.
   */
  async deliverAppended(g: GroupDoc, appended: TranscriptEntry[], replyTo: string | undefined): Promise<void> {
    const { durable } = this.groups.commit(g);
    await this.mailbox.outside(g.id, () => durable);
    if (!this.postsHere(g)) return;
    for (const e of appended) if (e.delivery === 'pending' && g.undelivered.includes(e) && this.groups.usable(g)) await this.deliver(g, e, replyTo);
  }

  /**
   * A system-voice line in the chat: recorded, posted, never shown to agents. `origin`: an answer
   * for one linked chat of a room (a command typed there), posted there alone.
   */
  async notice(g: GroupDoc, text: string, opts: { decision?: DecisionType; agentId?: string; viaAgentId?: string; threadId?: string; round?: RoundRecord; seen?: string; toolDecision?: TranscriptEntry['toolDecision']; origin?: ChatAddress | undefined } = {}): Promise<TranscriptEntry> {
    const [entry] = await this.record(g, {
      entries: [
        {
          kind: 'system',
          authorId: 'system',
          authorName: 'Chorus',
          text,
          hiddenFromAgents: true,
          delivery: opts.origin ? undefined : 'pending',
          ...(opts.origin ? { origin: opts.origin } : {}),
          threadId: opts.threadId,
          roundId: opts.round?.id,
          viaAgentId: opts.viaAgentId,
          decision: opts.decision ? { type: opts.decision, agentId: opts.agentId, detail: text } : undefined,
          toolDecision: opts.toolDecision,
        },
      ],
      seen: opts.seen,
    });
    return entry!;
  }

  /**
   * Show a recorded reaction of `agent` on `entry` (its record is the entry's edit, already
   * durable) in every chat of the room that has the message: the one it was written in — in a
   * room not always the home chat, whose channel knows nothing of another platform's id — and
   * each chat its copy was posted to. True when some channel shows it natively; false when none
   * can (the web page shows it from the transcript) or the message is on no platform.
   */
  async showReaction(g: GroupDoc, agent: AgentDef, entry: TranscriptEntry, emoji: string): Promise<boolean> {
    let shown = false;
    for (const chat of roomChats(g)) {
      const id = idIn(g, entry, chat);
      if (id && (await this.outbox.react(g, agent, chatRefIn(g, chat, entry), id, emoji))) shown = true;
    }
    return shown;
  }

  /**
   * Post entries a crash or an outage left undelivered, oldest first (a room's chats' queues do
   * this for a room). Each may have been posted just before the stop: a channel that can look first.
   */
  async redeliver(g: GroupDoc): Promise<void> {
    if (!this.postsHere(g)) return;
    for (const e of [...g.undelivered]) {
      if (!this.groups.usable(g)) return;
      if (e.delivery === 'pending') await this.deliver(g, e, undefined, e.ts);
    }
  }

  /** Hand one recorded entry to its channel; the outcome rides on the group's next record. */
  private async deliver(g: GroupDoc, entry: TranscriptEntry, replyTo: string | undefined, resumedSince?: number): Promise<void> {
    this.delivered(g, entry, await this.outbox.post(g, entry, replyTo, resumedSince));
  }

  /** The outcome of posting a recorded entry. */
  private delivered(g: GroupDoc, entry: TranscriptEntry, outcome: PostOutcome): void {
    if (outcome === 'later' || !this.groups.usable(g)) return;
    this.groups.markDelivered(g, entry, outcome.ok ? 'posted' : 'failed', outcome.ok ? outcome.ids : undefined);
    // Not awaited: a lost outcome only means the entry is offered to the channel again after a
    // restart (the channels check for their own earlier post where the platform allows it).
    this.groups.commitSoon(g);
  }
}
