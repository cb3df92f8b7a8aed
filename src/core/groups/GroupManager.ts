/**
 * The in-memory groups and sessions, and the only place that changes them — called only by the
 * task of the group's mailbox that holds it (see GroupMailbox; `onlyWriter`). Each change is a
 * `GroupChange` value, applied by `evolve` at once and kept as part of the group's pending record;
 * `commit` writes the pending record as one line of the log, so whatever must change together — a
 * reply, the agent's cursor and history, the round's progress — is durable together or not at
 * all. A restart applies the same records with the same `evolve`.
 *
 * Changes become visible to the outside (events, acks) only once their record is durable: the
 * live events of a record are made from it then (`projection.ts`). If a write fails, the group is
 * reloaded from the store as after a crash: what was not durable is gone without a trace.
 */
import { applyOutcome } from './deliveryOutcome.js';
import { chatKeyOf } from '../roomTypes.js';
import { newEntry, type Decision } from './decision.js';
import type { Logger, Store, StoredGroup } from '../ports.js';
import type { TranscriptPage } from '../readModels.js';
import type { DeliveryOutcome, GroupChange, GroupDoc, GroupRecord, RoundRecord, SessionDelta, SessionDoc } from '../records.js';
import type { AgentDef, ChannelKind, ChatTurn, GroupConfig, NewEntry, TranscriptEntry, Usage } from '../types.js';
import { UserError } from '../errors.js';
import { TRANSCRIPT_TAIL, emptyGroup, emptyUsage, entryAt, plus, pruneSeen, rebuild } from './evolve.js';
import { CHECKPOINT_EVERY, GroupWrites } from './groupWrites.js';
import { contextStart, mailboxOf, pageOfGroup } from './groupReads.js';
import { checkedParticipants, firstHead, freshGroupId, type NewGroup } from './newGroup.js';
import { ChatIndex } from './chatIndex.js';
import type { ChatAddress, LinkCode, LinkedChat } from '../roomTypes.js';

/** Transcript messages a newcomer is shown on `/group add`. */
const JOIN_CONTEXT = 20;

export class GroupManager {
  private readonly groups = new Map<string, GroupDoc>();
  /** Every chat of every live group: home chats and linked ones. */
  private readonly chats = new ChatIndex();
  /** Ids of groups whose data could not be read: never created over. */
  private readonly reserved = new Set<string>();
  /** Pending records, commits, and the write state of each group. */
  private readonly writes: GroupWrites;
  /** Rewrites an agent's turns as they are recorded (deleted texts a turn built earlier still holds). */
  turnFilter: (g: GroupDoc, turns: ChatTurn[]) => ChatTurn[] = (_g, turns) => turns;

  constructor(
    private readonly store: Store,
    private readonly agents: ReadonlyMap<string, AgentDef>,
    private readonly defaults: GroupConfig,
    private readonly now: () => number,
    private readonly logger: Logger,
    checkpointEvery = CHECKPOINT_EVERY,
  ) {
    this.writes = new GroupWrites(store, now, logger, checkpointEvery);
  }

  /** `broken`: once when a group's write fails (to reload it); `recorded`: each record as it becomes durable (live events). */
  listen(on: { broken: (g: GroupDoc, err: unknown) => void; recorded: (g: GroupDoc, rec: GroupRecord) => void }): void {
    this.writes.onBroken = on.broken;
    this.writes.onRecorded = on.recorded;
  }

  /** From now on every change must come from its group's writer (see GroupMailbox). */
  onlyWriter(holds: (groupId: string) => boolean): void {
    this.writes.onlyWriter(holds);
  }

  /** Open the store and rebuild every group from its checkpoint and log. */
  async load(): Promise<void> {
    const { groups, unreadable } = await this.store.open();
    for (const id of unreadable) this.reserved.add(id);
    for (const stored of groups) {
      const g = await this.build(stored);
      if (g) this.install(g);
    }
  }

  /** After a failed write: drop the group's in-memory state and read it back from the store. */
  async reload(id: string): Promise<GroupDoc | undefined> {
    const old = this.groups.get(id);
    if (old) this.writes.markStale(old);
    const loaded = await this.build(await this.store.reopen(id));
    if (old) this.chats.remove(old);
    if (!loaded) {
      this.groups.delete(id);
      return undefined;
    }
    return this.install(loaded);
  }

  private async build(stored: StoredGroup): Promise<{ doc: GroupDoc; n: number } | null> {
    const { g, n, described, records } = await rebuild(stored.id, stored.checkpoint, stored.records());
    // A group whose first record never became durable never existed.
    if (!described && records === 0) return null;
    if (!described) {
      this.logger.error({ group: stored.id }, 'group log has no description of the group; left untouched');
      this.reserved.add(stored.id);
      return null;
    }
    pruneSeen(g.seen, this.now());
    // Config keys added in newer versions get their defaults; agents no longer configured leave.
    g.config = { ...this.defaults, ...g.config };
    g.participants = g.participants.filter((p) => this.agents.has(p));
    g.transcript = await this.store.readEntries(stored.id, { limit: TRANSCRIPT_TAIL });
    g.undelivered.sort((a, b) => a.seq - b.seq);
    for (const s of g.sessions.values()) s.groupId = g.id;
    return { doc: g, n };
  }

  private install(loaded: { doc: GroupDoc; n: number }, indexed = true): GroupDoc {
    const g = loaded.doc;
    this.groups.set(g.id, g);
    if (indexed) this.chats.add(g);
    this.writes.track(g, loaded.n);
    return g;
  }

  all(): GroupDoc[] {
    return [...this.groups.values()];
  }

  get(id: string): GroupDoc | undefined {
    return this.groups.get(id);
  }

  /** A live group or a 404 UserError. */
  require(id: string): GroupDoc {
    const g = this.groups.get(id);
    if (!g || g.state.archived) throw new UserError(`unknown group "${id}"`, 'not_found', 404);
    return g;
  }

  /** The live (not archived) group a chat belongs to: its home chat or one linked to its room. */
  find(channel: ChannelKind, chatId: string, dmAgentId?: string): GroupDoc | undefined {
    const id = this.chats.get(channel, chatId, dmAgentId);
    return id ? this.groups.get(id) : undefined;
  }

  /** A new group with a fresh session per participant; durable with its first commit. */
  create(input: NewGroup): GroupDoc {
    if (input.chatId && this.find(input.channel, input.chatId, input.dmAgentId)) throw new UserError('this chat already has a group; use /group add or /group dissolve', 'conflict', 409);
    const participants = checkedParticipants(input, this.agents);
    const id = input.id ?? freshGroupId(input, (x) => this.groups.has(x) || this.reserved.has(x));
    if (this.groups.has(id) || this.reserved.has(id)) {
      const archived = this.groups.get(id)?.state.archived;
      const why = this.reserved.has(id) ? ' (its data could not be read; it is kept untouched)' : archived ? ' (archived; its history is kept)' : '';
      throw new UserError(`a group with id "${id}" already exists${why}`, 'conflict', 409);
    }
    const g = this.install({ doc: emptyGroup(id), n: 0 }, false);
    // The first record describes the group whole.
    this.writes.change(g, { t: 'head', head: firstHead(input, id, participants, this.defaults, this.now()) });
    this.chats.add(g);
    for (const p of participants) this.join(g, p, false);
    return g;
  }

  /** Drop a group created in memory whose first record was never written (its id was taken). */
  forget(g: GroupDoc): void {
    if (this.groups.get(g.id) !== g) return;
    this.writes.markStale(g);
    this.groups.delete(g.id);
    this.chats.remove(g);
  }

  /** The group is dissolved: its rounds end, its chat is free for a new group, its history stays. */
  archive(g: GroupDoc): void {
    this.chats.remove(g);
    this.writes.change(g, { t: 'archive' });
  }

  /** The home chat (`from` absent) or the linked chat `from` moved to a new platform id. */
  rekey(g: GroupDoc, newChatId: string, from?: ChatAddress): void {
    this.chats.around(g, () => this.writes.change(g, { t: 'rekey', chatId: newChatId, ...(from ? { from: { channel: from.channel, chatId: from.chatId } } : {}) }));
  }

  /** Another chat joins the room (using link code `code`, which is gone from then on). */
  link(g: GroupDoc, chat: LinkedChat, code?: string): void {
    this.chats.around(g, () => this.writes.change(g, { t: 'link', chat: { ...chat }, ...(code ? { code } : {}) }));
  }

  /** A linked chat leaves the room. */
  unlink(g: GroupDoc, chat: ChatAddress): void {
    // What was still owed there is never posted: recorded as failed in the same record, so the
    // stores read the entries back as they are held.
    const key = chatKeyOf(chat);
    for (const e of [...g.undelivered]) if (e.copies?.[key]?.delivery === 'pending') this.markDelivered(g, e, 'failed', undefined, key);
    this.chats.around(g, () => this.writes.change(g, { t: 'unlink', channel: chat.channel, chatId: chat.chatId }));
  }

  /** A link code was made (expired ones go with it). */
  addLinkCode(g: GroupDoc, code: LinkCode): void {
    this.writes.change(g, { t: 'link-code', code: { ...code }, at: this.now() });
  }

  // ── The group's head: members, config and small state

  addParticipant(g: GroupDoc, agentId: string): void {
    if (!g.participants.includes(agentId)) this.writes.change(g, { t: 'join', agentId });
  }
  /** The agent leaves; it stops being sticky or the configured last speaker. Its memory stays. */
  removeParticipant(g: GroupDoc, agentId: string): void {
    this.writes.change(g, { t: 'leave', agentId });
  }

  setConfig(g: GroupDoc, config: GroupConfig): void {
    this.writes.change(g, { t: 'config', config });
  }
  setMuted(g: GroupDoc, agentId: string, muted: boolean): void {
    this.writes.change(g, { t: 'mute', agentId, muted });
  }
  /** A tool call is recorded, decided, begun or answered, or its turn's calls are done (see router/toolTurn.ts). */
  toolChange(g: GroupDoc, c: Extract<GroupChange, { t: 'tool-call' | 'tool' | 'tools-done' }>): void {
    this.writes.change(g, c);
  }

  setSticky(g: GroupDoc, agentId: string | null): void {
    if (g.state.sticky !== agentId) this.writes.change(g, { t: 'sticky', agentId });
  }
  /** The next agent in round-robin order among `eligible`. */
  nextInRotation(g: GroupDoc, eligible: string[]): string {
    const next = eligible[g.state.rrIndex % eligible.length]!;
    this.writes.change(g, { t: 'rotation', next: (g.state.rrIndex + 1) % eligible.length });
    return next;
  }

  /** A reply was delivered: cooldowns and "last spoke" count from now. */
  noteSpoke(g: GroupDoc, agentId: string, seenUpTo?: number): void {
    this.writes.change(g, { t: 'spoke', agentId, at: this.now(), seenUpTo });
  }

  /** A model call's cost, counted for the group under `key` (an agent, or "(selector)") and for today's budget. */
  addGroupUsage(g: GroupDoc, key: string, res: { usage: Usage; costUsd?: number | null | undefined }): void {
    this.writes.change(g, { t: 'usage', key, at: this.now(), usage: { ...res.usage }, costUsd: res.costUsd });
  }

  /** A budget notice was posted today (written with the notice). */
  markBudgetNotice(g: GroupDoc, which: 'warned' | 'refused'): void {
    this.writes.change(g, { t: 'budget-notice', which, at: this.now() });
  }

  // ── Sessions

  session(g: GroupDoc, agentId: string): SessionDoc {
    // Normally made when the agent joins; this fallback shows it the recent context.
    if (!g.sessions.has(agentId)) this.setSession(g, { agentId, reset: true, append: [], cursor: contextStart(g, JOIN_CONTEXT), summary: null, usage: emptyUsage() });
    return g.sessions.get(agentId)!;
  }

  /** An agent joins now: a fresh session (or its old memory) that is shown the recent context. */
  join(g: GroupDoc, agentId: string, withContext: boolean): SessionDoc {
    const cursor = withContext ? contextStart(g, JOIN_CONTEXT) : g.nextSeq - 1;
    const old = g.sessions.get(agentId);
    // A returning member keeps its memory but is brought up to date through its mailbox.
    if (old) this.setSession(g, { agentId, cursor: Math.min(old.cursor, cursor), summary: old.summary, usage: { ...old.usage } });
    else this.setSession(g, { agentId, reset: true, append: [], cursor, summary: null, usage: emptyUsage() });
    return g.sessions.get(agentId)!;
  }

  /** One turn of the agent: its history grows and its mailbox is drained up to `seenUpTo`. */
  recordTurn(g: GroupDoc, agentId: string, turns: ChatTurn[], seenUpTo: number, res: { usage: Usage; costUsd?: number | null | undefined }): void {
    const s = this.session(g, agentId);
    this.setSession(g, { agentId, append: this.turnFilter(g, turns), cursor: Math.max(s.cursor, seenUpTo), summary: s.summary, usage: plus(s.usage, res) });
  }

  /** Old turns were folded into the summary (or cut when summarising keeps failing). */
  foldHistory(g: GroupDoc, agentId: string, drop: number, summary: string | null, res?: { usage: Usage; costUsd?: number | null | undefined }): void {
    const s = this.session(g, agentId);
    this.setSession(g, { agentId, drop, cursor: s.cursor, summary, usage: res ? plus(s.usage, res) : { ...s.usage } });
  }

  /** `/group reset`: the agent forgets this group and starts listening from now. */
  resetSession(g: GroupDoc, agentId: string): void {
    const s = this.session(g, agentId);
    this.setSession(g, { agentId, reset: true, append: [], cursor: g.nextSeq - 1, summary: null, usage: { ...s.usage } });
  }


  private setSession(g: GroupDoc, delta: SessionDelta): void {
    this.writes.change(g, { t: 'session', ...delta });
  }

  /**
   * Observations not yet shown to this agent, oldest first (read from the store after a long
   * silence; past MAILBOX_MAX only the newest, with how many were left out).
   */
  mailbox(g: GroupDoc, s: SessionDoc): Promise<{ entries: TranscriptEntry[]; omitted: number }> {
    return mailboxOf(this.store, g, s);
  }

  /** A transcript entry still in memory, by seq. */
  entryAt(g: GroupDoc, seq: number): TranscriptEntry | undefined {
    return entryAt(g.transcript, seq);
  }

  // ── Transcript, rounds, dedupe

  /** Add a transcript entry (id and seq assigned); durable with the next commit. */
  append(g: GroupDoc, entry: NewEntry, o: { copies?: boolean } = {}): TranscriptEntry {
    const full = newEntry(g, { ...entry, ts: entry.ts ?? this.now() }, o);
    this.writes.entry(g, full);
    return full;
  }

  /**
   * Apply a decider's decision to the group (each part with `evolve`, at once) and leave it for
   * the group's next record; the task that decided commits it. Its entries must come next.
   */
  apply<R>(g: GroupDoc, d: Decision<R>): R {
    for (const e of d.entries) {
      if (e.seq !== g.nextSeq) throw new Error(`group ${g.id}: a decision's entry ${e.seq} is not the next (${g.nextSeq}): decided on another state`);
      this.writes.entry(g, e);
    }
    for (const ed of d.edits) this.writes.edit(g, ed);
    for (const c of d.changes) this.writes.change(g, c);
    return d.result;
  }

  /** The channel posted (or gave up on) an entry: in the home chat, or its copy in the room's chat `chat`. */
  markDelivered(g: GroupDoc, e: TranscriptEntry, outcome: 'posted' | 'failed', postedIds?: string[], chat?: string, via?: string): void {
    const d = { seq: e.seq, delivery: outcome, postedIds, ...(chat ? { chat } : {}), ...(chat && via ? { via } : {}) };
    this.writes.delivery(g, d);
    // The caller's copy too, when it is not the one in memory (an entry read back from the store).
    applyOutcome(e, d);
  }

  /** Edits to carry to copies in a room's other chats, and those carried. */
  roomChange(g: GroupDoc, c: Extract<GroupChange, { t: 'carry' | 'carried' }>): void {
    this.writes.change(g, c);
  }

  /** A new round (its object is the group's from now on: change it only through `updateRound`). */
  addRound(g: GroupDoc, round: RoundRecord): void {
    this.writes.change(g, { t: 'round', id: round.id, set: round });
  }

  /** The round's progress: what changed, written with the group's next record. */
  updateRound(g: GroupDoc, round: RoundRecord, set: Partial<Omit<RoundRecord, 'id'>>): void {
    if (g.rounds.includes(round)) this.writes.change(g, { t: 'round', id: round.id, set: { ...set } });
    // A round no longer (or not yet) in the group is only the caller's.
    else Object.assign(round, set);
  }

  finishRound(g: GroupDoc, round: RoundRecord): void {
    if (g.rounds.some((r) => r.id === round.id)) this.writes.change(g, { t: 'round-done', id: round.id });
  }

  isSeen(g: GroupDoc, key: string): boolean {
    return g.seen.has(key);
  }
  /** Remember a platform message id (dedupe, ≥ 24 h); false if it was seen before. */
  markSeen(g: GroupDoc, key: string): boolean {
    if (g.seen.has(key)) return false;
    this.writes.change(g, { t: 'seen', key, at: this.now() });
    return true;
  }

  // ── Durability (see groupWrites.ts)

  /** False once the group's object was replaced by a reload or a write failed. */
  usable(g: GroupDoc): boolean {
    return this.writes.usable(g);
  }

  /**
   * Write everything the group changed since its last record as one record. Resolves once it
   * (and every record before it) is durable; returns the entries the record carried.
   */
  commit(g: GroupDoc): { entries: TranscriptEntry[]; durable: Promise<void> } {
    return this.writes.commit(g);
  }

  /** Commit on the next tick, nobody waiting (a delivery outcome, a finished round). */
  commitSoon(g: GroupDoc): void {
    this.writes.commitSoon(g);
  }

  /** Wait until no deferred commit is scheduled and every record written so far is settled. */
  settle(): Promise<void> {
    return this.writes.settle(() => this.all());
  }

  /** Wait until everything recorded for this group so far is durable. */
  durable(g: GroupDoc): Promise<void> {
    return this.writes.durable(g);
  }

  /** Commit what is pending everywhere and checkpoint every group changed since its last one. */
  checkpointAll(): Promise<void> {
    return this.writes.checkpointAll(this.all());
  }

  // ── Read models (see groupReads.ts)

  /** History page, oldest first, with an exact `hasMore`. */
  page(g: GroupDoc, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage> {
    return pageOfGroup(this.store, g, opts);
  }

  /** Ids of groups whose data could not be read: left untouched, not loaded, never created over. */
  unreadable(): string[] {
    return [...this.reserved];
  }
}
