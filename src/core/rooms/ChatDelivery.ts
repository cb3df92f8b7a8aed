/**
 * Delivery in a room of several chats: one queue per chat, so a platform that is down (Discord
 * answering 500s for minutes) holds back nothing on the others. Each queue posts what its chat is
 * owed in transcript order — the home chat's posts and every copy there — and the outcome of each
 * post is recorded in the group's log with the chat it was for. A post that fails in passing is
 * tried again, with growing pauses, before anything after it in that chat; one the platform
 * refuses for good is recorded as failed and the queue goes on. After a restart the queues pick up
 * what is still owed; a post that may have been made just before the stop is looked for first
 * where the platform allows it (`PostOptions.resumedSince`).
 *
 * Groups in one chat do not come here: their posts are made as they are recorded (Recorder).
 */
import type { Clock, Logger } from '../ports.js';
import type { RunningGroups } from '../peers.js';
import type { GroupDoc, GroupRecord } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import type { GroupMailbox } from '../groups/GroupMailbox.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { PostedIndex } from './PostedIndex.js';
import { chatKeyOf, chatOfKey, type CarryItem } from '../roomTypes.js';
import { homeOf, sameChat } from './chats.js';
import { carryIn, postIn, reactOnCopy, type Attempt, type RoomPostDeps } from './roomPosts.js';

/** Pauses between attempts at a chat that keeps failing: 1 s doubling to 30 s. */
const FIRST_PAUSE_MS = 1000;
const MAX_PAUSE_MS = 30_000;

export interface ChatDeliveryDeps extends RoomPostDeps {
  groups: GroupManager;
  running: RunningGroups;
  posted: PostedIndex;
  clock: Clock;
  logger: Logger;
  shutdown: AbortSignal;
  /** Each group's one writer: a chat's queue runs outside it and sends each outcome to it. */
  mailbox: Pick<GroupMailbox, 'send' | 'detached'>;
}

type Job = { post: TranscriptEntry } | { carry: CarryItem };

export class ChatDelivery {
  /** `group|chat` → its queue, while it runs. */
  private readonly queues = new Map<string, Promise<void>>();
  /** Queues told of new work while they were running. */
  private readonly more = new Set<string>();
  /** Per group: when this process began delivering for it (owed from before: possibly posted already). */
  private readonly since = new Map<string, number>();
  /** Entries attempted in this process whose attempt failed without a clear answer. */
  private readonly unsure = new WeakSet<TranscriptEntry>();
  /**
   * Per group: the newest entry seq and edit time whose records are durable. Entries and edits
   * apply in memory before their record lands; nothing is posted or carried before it has.
   */
  private readonly landed = new Map<string, { seq: number; at: number }>();

  constructor(private readonly d: ChatDeliveryDeps) {}

  /**
   * A record of the group is durable (`rec` absent: everything held now is, as after loading):
   * make sure the queues of the chats owed something run.
   */
  kick(g: GroupDoc, rec?: GroupRecord): void {
    if (!g.links?.length) return;
    const was = this.landed.get(g.id) ?? { seq: 0, at: 0 };
    const seq = rec ? Math.max(was.seq, ...(rec.entries ?? []).map((e) => e.seq)) : g.nextSeq - 1;
    const at = rec ? Math.max(was.at, ...(rec.changes ?? []).flatMap((c) => (c.t === 'carry' ? c.items.map((i) => i.at) : []))) : this.d.clock.now();
    this.landed.set(g.id, { seq, at });
    if (this.d.shutdown.aborted || !this.d.running.runs(g.id)) return;
    if (!this.since.has(g.id)) this.since.set(g.id, this.d.clock.now());
    for (const chat of owedChats(g)) {
      const key = `${g.id}|${chat}`;
      if (this.queues.has(key)) {
        this.more.add(key);
        continue;
      }
      const run = this.d.mailbox.detached(() => this.run(g, chat, key)).catch((err: unknown) => this.d.logger.error({ group: g.id, chat, err: String(err) }, 'a chat delivery queue failed'));
      this.queues.set(key, run.finally(() => this.queues.delete(key)));
    }
  }

  /** Wait for every queue (shutdown: the signal ends their pauses; a post in flight finishes). */
  async settled(): Promise<void> {
    while (this.queues.size) await Promise.all([...this.queues.values()]);
  }

  private async run(g: GroupDoc, chat: string, key: string): Promise<void> {
    const where = chatOfKey(chat);
    const home = sameChat(where, homeOf(g));
    let failures = 0;
    for (;;) {
      if (this.d.shutdown.aborted || !this.d.groups.usable(g) || !this.d.running.runs(g.id)) return;
      const job = nextJob(g, chat, home, this.landed.get(g.id) ?? { seq: 0, at: 0 });
      if (!job) {
        if (this.more.delete(key)) continue;
        return;
      }
      const attempt = 'post' in job ? await this.post(g, job.post, chat, home) : await carryIn(this.d, g, job.carry, where);
      if (attempt === 'later') return;
      if ('retry' in attempt) {
        if ('post' in job) this.unsure.add(job.post);
        failures++;
        const pause = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (failures - 1));
        if (failures === 1 || failures % 10 === 0) this.d.logger.warn({ group: g.id, chat, attempt: failures, err: attempt.retry }, 'a chat of the room is not taking posts; trying again, in order');
        try {
          await this.d.clock.sleep(pause, this.d.shutdown);
        } catch {
          return;
        }
        continue;
      }
      if (failures > 0) this.d.logger.info({ group: g.id, chat, attempts: failures + 1 }, 'the chat takes posts again; delivering its backlog');
      failures = 0;
      await this.settle(g, job, chat, home, attempt);
      // A person's message is posted only as a copy: the agents' reactions on it go with it.
      const copy = 'post' in job && job.post.kind === 'human' && attempt.ok ? attempt.ids[0] : undefined;
      if (copy !== undefined && 'post' in job) await reactOnCopy(this.d, g, job.post.seq, where, copy);
    }
  }

  private post(g: GroupDoc, e: TranscriptEntry, chat: string, home: boolean): Promise<Attempt> {
    // Owed from before this process ran the group, or tried already without a clear answer: the
    // platform may have it, so a channel that can look does before posting again.
    const maybePosted = e.ts < (this.since.get(g.id) ?? 0) || this.unsure.has(e);
    return postIn(this.d, g, e, home && e.delivery === 'pending' ? homeOf(g) : chatOfKey(chat), maybePosted ? e.ts : undefined);
  }

  /**
   * Record what became of a job, as a task of the group, and wait until it is durable before the
   * queue posts the next one: a kill then finds at most one post of the chat without its outcome
   * on disk — the one a platform that cannot be asked (Telegram) may be given again. The wait is
   * outside the group, and the write joins whatever else is being written.
   */
  private async settle(g: GroupDoc, job: Job, chat: string, home: boolean, attempt: Exclude<Attempt, 'later' | { retry: string }>): Promise<void> {
    // Handed back in a box: a promise returned by the task would be waited for inside it.
    const written = await this.d.mailbox.send(g.id, () => this.settleNow(g, job, chat, home, attempt));
    // A failed write leaves the group refused until it is reloaded (the loop then stops); the
    // post stays owed and is looked for or posted again after the reload.
    await written?.durable.catch(() => undefined);
  }

  private settleNow(g: GroupDoc, job: Job, chat: string, home: boolean, attempt: Exclude<Attempt, 'later' | { retry: string }>): { durable: Promise<void> } | undefined {
    if (!this.d.groups.usable(g)) return undefined;
    const ids = attempt.ok ? attempt.ids : undefined;
    if ('post' in job) {
      const e = job.post;
      // The home chat's own post of an entry, or a copy (in the home chat too: a relayed person).
      const copy = !(home && e.delivery === 'pending');
      this.d.groups.markDelivered(g, e, attempt.ok ? 'posted' : 'failed', ids, copy ? chat : undefined, attempt.ok ? attempt.via : undefined);
      for (const id of ids ?? []) this.d.posted.note(chatOfKey(chat), id, e);
    } else {
      this.d.groups.roomChange(g, { t: 'carried', seq: job.carry.seq, chat, at: job.carry.at });
    }
    return { durable: this.d.groups.commit(g).durable };
  }
}

/** The chats of a room that are owed a post, an edit or a removal. */
function owedChats(g: GroupDoc): Set<string> {
  // Cheap to over-count: a queue with nothing it may do yet ends at once.
  const out = new Set<string>();
  const home = chatKeyOf(homeOf(g));
  for (const e of g.undelivered) {
    if (e.delivery === 'pending') out.add(home);
    for (const k in e.copies) if (e.copies[k]!.delivery === 'pending') out.add(k);
  }
  for (const it of g.state.carry ?? []) out.add(it.chat);
  return out;
}

/** What the chat's queue does next: the oldest post it is owed, else the oldest edit to carry there. */
function nextJob(g: GroupDoc, chat: string, home: boolean, landed: { seq: number; at: number }): Job | undefined {
  for (const e of g.undelivered) {
    if (e.seq > landed.seq) break;
    if ((home && e.delivery === 'pending') || e.copies?.[chat]?.delivery === 'pending') return { post: e };
  }
  const carry = g.state.carry?.find((it) => it.chat === chat);
  return carry && carry.at <= landed.at ? { carry } : undefined;
}
