/**
 * The in-memory groups and sessions, and the only place that changes them. Each change is a
 * `GroupChange` value, applied by `evolve` at once and kept as part of the group's pending record;
 * `commit` writes the pending record as one line of the log, so whatever must change together — a
 * reply, the agent's cursor and history, the round's progress — is durable together or not at
 * all. A restart applies the same records with the same `evolve`.
 *
 * Changes become visible to the outside (events, acks) only once their record is durable: the
 * live events of a record are made from it then (`projection.ts`). If a write fails, the group is
 * reloaded from the store as after a crash: what was not durable is gone without a trace.
 */
import type { TranscriptPage, GroupSummary, GroupView, Logger, Store, StoredGroup } from '../ports.js';
import type { DeliveryOutcome, EntryEdit, GroupChange, GroupDoc, GroupRecord, RoundRecord, SessionDelta, SessionDoc } from '../records.js';
import type { AgentDef, ChannelKind, ChatTurn, GroupConfig, TranscriptEntry, Usage } from '../types.js';
import { StoreUnavailableError, UserError, describeError } from '../errors.js';
import { TRANSCRIPT_TAIL, applyChange, applyDelivery, applyEdit, applyEntry, checkpointOf, emptyGroup, emptyUsage, entryAt, evolve, fromCheckpoint, plus, pruneSeen, trimTail } from './evolve.js';

export { TRANSCRIPT_TAIL, emptyUsage, seqOfId } from './evolve.js';

/** Transcript messages a newcomer is shown on `/group add`. */
const JOIN_CONTEXT = 20;
/** Observations put in one prompt after a long silence; older ones are counted, not shown. */
export const MAILBOX_MAX = 300;
/** The largest history page one read returns (the web API's `limit` maximum). */
export const PAGE_MAX = 500;
/** Records between checkpoints: bounds replay at start; its cost is spread over this many writes. */
export const CHECKPOINT_EVERY = 256;
/**
 * A checkpoint carries the dedupe memory (every client id of the last 24 hours), the one part of
 * it that grows with traffic. Spacing checkpoints at least `seen / SEEN_PER_RECORD` records apart
 * keeps what they add per record flat (a few dozen bytes per remembered id, spread over 4 records
 * each); replay at start grows with it, to one record per 4 ids remembered.
 */
const SEEN_PER_RECORD = 4;

/** Records between two checkpoints of a group that remembers `seen` client ids. */
export function checkpointInterval(seen: number, every = CHECKPOINT_EVERY): number {
  return Math.max(every, Math.ceil(seen / SEEN_PER_RECORD));
}

/** Entries an agent is shown: humans, agents, and system notices meant for agents. */
export function isObservable(e: TranscriptEntry): boolean {
  return !e.hiddenFromAgents && !e.deleted && (e.kind === 'human' || e.kind === 'agent' || e.kind === 'system');
}

/** What a group has changed since its last record (already applied in memory), in order. */
interface Pending {
  entries: TranscriptEntry[];
  delivery: DeliveryOutcome[];
  edits: EntryEdit[];
  changes: GroupChange[];
}

/** Bookkeeping of one loaded group (never persisted). */
interface Runtime {
  n: number;
  pending: Pending;
  lastWrite: Promise<void>;
  sinceCheckpoint: number;
  /** A write failed: refuse everything until the group is reloaded. */
  broken: boolean;
  /** Replaced by a reload: whoever still holds this object must stop. */
  stale: boolean;
  /** A commitSoon is scheduled. */
  soon: boolean;
}

function emptyPending(): Pending {
  return { entries: [], delivery: [], edits: [], changes: [] };
}

export class GroupManager {
  private readonly groups = new Map<string, GroupDoc>();
  private readonly byChat = new Map<string, string>();
  private readonly runtime = new WeakMap<GroupDoc, Runtime>();
  /** Ids of groups whose data could not be read: never created over. */
  private readonly reserved = new Set<string>();
  /** Called once when a group's write fails (the router schedules its reload). */
  onBroken: (g: GroupDoc, err: unknown) => void = () => undefined;
  /** Called with each record once it is durable, before whoever waits for it goes on (live events). */
  onRecorded: (g: GroupDoc, rec: GroupRecord) => void = () => undefined;
  /** Rewrites an agent's turns as they are recorded (deleted texts a turn built earlier still holds). */
  turnFilter: (g: GroupDoc, turns: ChatTurn[]) => ChatTurn[] = (_g, turns) => turns;

  constructor(
    private readonly store: Store,
    private readonly agents: ReadonlyMap<string, AgentDef>,
    private readonly defaults: GroupConfig,
    private readonly now: () => number,
    private readonly logger: Logger,
    private readonly checkpointEvery = CHECKPOINT_EVERY,
  ) {}

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
    if (old) this.rt(old).stale = true;
    const loaded = await this.build(await this.store.reopen(id));
    if (old) this.byChat.delete(chatKey(old.channel, old.chatId, old.dmAgentId));
    if (!loaded) {
      this.groups.delete(id);
      return undefined;
    }
    return this.install(loaded);
  }

  private async build(stored: StoredGroup): Promise<{ doc: GroupDoc; n: number } | null> {
    const g = stored.checkpoint ? fromCheckpoint(stored.checkpoint) : emptyGroup(stored.id);
    let n = stored.checkpoint?.n ?? 0;
    let described = !!stored.checkpoint;
    let records = 0;
    for await (const rec of stored.records()) {
      // Records at or below the checkpoint were applied before it was taken.
      if (rec.n <= n) continue;
      evolve(g, rec);
      n = rec.n;
      records++;
      if (rec.changes?.some((c) => c.t === 'head')) described = true;
    }
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
    if (indexed && !g.state.archived) this.byChat.set(chatKey(g.channel, g.chatId, g.dmAgentId), g.id);
    this.runtime.set(g, { n: loaded.n, pending: emptyPending(), lastWrite: Promise.resolve(), sinceCheckpoint: 0, broken: false, stale: false, soon: false });
    return g;
  }

  /** Apply a change to the group now; it is written with the group's next record. */
  private change(g: GroupDoc, c: GroupChange): void {
    const rt = this.rt(g);
    applyChange(g, c);
    rt.pending.changes.push(c);
  }

  private rt(g: GroupDoc): Runtime {
    const rt = this.runtime.get(g);
    if (!rt) throw new Error(`group ${g.id} is not managed`);
    return rt;
  }

  /** False once the group's object was replaced by a reload or a write failed. */
  usable(g: GroupDoc): boolean {
    const rt = this.runtime.get(g);
    return !!rt && !rt.stale && !rt.broken;
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

  /** The live (not archived) group bound to a chat. */
  find(channel: ChannelKind, chatId: string, dmAgentId?: string): GroupDoc | undefined {
    const id = this.byChat.get(chatKey(channel, chatId, dmAgentId));
    return id ? this.groups.get(id) : undefined;
  }

  /** A new group with a fresh session per participant; durable with its first commit. */
  create(input: {
    channel: ChannelKind;
    chatId: string;
    title: string;
    participants: string[];
    id?: string | undefined;
    config?: Partial<GroupConfig> | undefined;
    dmAgentId?: string | undefined;
  }): GroupDoc {
    if (input.chatId && this.find(input.channel, input.chatId, input.dmAgentId)) throw new UserError('this chat already has a group; use /group add or /group dissolve', 'conflict', 409);
    const participants = [...new Set(input.participants)];
    const unknown = participants.filter((p) => !this.agents.has(p));
    if (unknown.length) throw new UserError(`unknown agent(s): ${unknown.join(', ')}; known: ${[...this.agents.keys()].join(', ')}`, 'unknown_agent', 400);
    if (participants.length === 0) throw new UserError('a group needs at least one agent', 'bad_request', 400);
    const id = input.id ?? this.freshId(input.channel, input.dmAgentId ? `${input.chatId}-${input.dmAgentId}` : input.chatId, input.title);
    if (this.groups.has(id) || this.reserved.has(id)) {
      const archived = this.groups.get(id)?.state.archived;
      const why = this.reserved.has(id) ? ' (its data could not be read; it is kept untouched)' : archived ? ' (archived; its history is kept)' : '';
      throw new UserError(`a group with id "${id}" already exists${why}`, 'conflict', 409);
    }
    const g = this.install({ doc: emptyGroup(id), n: 0 }, false);
    // The first record describes the group whole.
    this.change(g, {
      t: 'head',
      head: {
        id,
        title: input.title.trim() || id,
        channel: input.channel,
        chatId: input.chatId || id,
        ...(input.dmAgentId ? { dmAgentId: input.dmAgentId } : {}),
        participants,
        config: { ...this.defaults, ...input.config },
        createdAt: this.now(),
        state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} },
      },
    });
    this.byChat.set(chatKey(g.channel, g.chatId, g.dmAgentId), g.id);
    for (const p of participants) this.join(g, p, false);
    return g;
  }

  /**
   * A read-only copy of a group another instance runs: that instance recorded `entry`. Shown in
   * the copy's summary (last message, count) without reading the whole group again.
   */
  noteRemoteEntry(g: GroupDoc, entry: TranscriptEntry): void {
    if (entry.seq < g.nextSeq) return;
    g.transcript.push(entry);
    g.nextSeq = entry.seq + 1;
    trimTail(g);
  }

  /** Drop a group created in memory whose first record was never written (its id was taken). */
  forget(g: GroupDoc): void {
    if (this.groups.get(g.id) !== g) return;
    this.rt(g).stale = true;
    this.groups.delete(g.id);
    this.byChat.delete(chatKey(g.channel, g.chatId, g.dmAgentId));
  }

  /** The group is dissolved: its rounds end, its chat is free for a new group, its history stays. */
  archive(g: GroupDoc): void {
    this.change(g, { t: 'archive' });
    this.byChat.delete(chatKey(g.channel, g.chatId, g.dmAgentId));
  }

  rekey(g: GroupDoc, newChatId: string): void {
    this.byChat.delete(chatKey(g.channel, g.chatId, g.dmAgentId));
    this.change(g, { t: 'rekey', chatId: newChatId });
    this.byChat.set(chatKey(g.channel, g.chatId, g.dmAgentId), g.id);
  }

  // -------------------------------------------------------------------------------------------
  // The group's head: members, config and small state

  addParticipant(g: GroupDoc, agentId: string): void {
    if (!g.participants.includes(agentId)) this.change(g, { t: 'join', agentId });
  }

  /** The agent leaves; it stops being sticky or the configured last speaker. Its memory stays. */
  removeParticipant(g: GroupDoc, agentId: string): void {
    this.change(g, { t: 'leave', agentId });
  }

  setConfig(g: GroupDoc, config: GroupConfig): void {
    this.change(g, { t: 'config', config });
  }

  setMuted(g: GroupDoc, agentId: string, muted: boolean): void {
    this.change(g, { t: 'mute', agentId, muted });
  }

  setSticky(g: GroupDoc, agentId: string | null): void {
    if (g.state.sticky !== agentId) this.change(g, { t: 'sticky', agentId });
  }

  /** The next agent in round-robin order among `eligible`. */
  nextInRotation(g: GroupDoc, eligible: string[]): string {
    const next = eligible[g.state.rrIndex % eligible.length]!;
    this.change(g, { t: 'rotation', next: (g.state.rrIndex + 1) % eligible.length });
    return next;
  }

  /** A reply was delivered: cooldowns and "last spoke" count from now. */
  noteSpoke(g: GroupDoc, agentId: string, seenUpTo?: number): void {
    this.change(g, { t: 'spoke', agentId, at: this.now(), seenUpTo });
  }

  /** A model call's cost, counted for the group under `key` (an agent, or "(selector)") and for today's budget. */
  addGroupUsage(g: GroupDoc, key: string, res: { usage: Usage; costUsd?: number | null | undefined }): void {
    this.change(g, { t: 'usage', key, at: this.now(), usage: { ...res.usage }, costUsd: res.costUsd });
  }

  /** A budget notice was posted today (written with the notice). */
  markBudgetNotice(g: GroupDoc, which: 'warned' | 'refused'): void {
    this.change(g, { t: 'budget-notice', which, at: this.now() });
  }

  // -------------------------------------------------------------------------------------------
  // Sessions

  session(g: GroupDoc, agentId: string): SessionDoc {
    // Normally made when the agent joins; this fallback shows it the recent context.
    if (!g.sessions.has(agentId)) this.setSession(g, { agentId, reset: true, append: [], cursor: this.contextStart(g), summary: null, usage: emptyUsage() });
    return g.sessions.get(agentId)!;
  }

  /** An agent joins now: a fresh session (or its old memory) that is shown the recent context. */
  join(g: GroupDoc, agentId: string, withContext: boolean): SessionDoc {
    const cursor = withContext ? this.contextStart(g) : g.nextSeq - 1;
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

  /** The agent's memory of this group rewritten (an edited or deleted message in it). */
  rewriteMemory(g: GroupDoc, agentId: string, history: ChatTurn[], summary: string | null): void {
    const s = this.session(g, agentId);
    this.setSession(g, { agentId, reset: true, append: history, cursor: s.cursor, summary, usage: { ...s.usage } });
  }

  private setSession(g: GroupDoc, delta: SessionDelta): void {
    this.change(g, { t: 'session', ...delta });
  }

  /** Cursor that shows the last JOIN_CONTEXT human/agent messages. */
  private contextStart(g: GroupDoc): number {
    const ctx = g.transcript.filter((e) => !e.hiddenFromAgents && (e.kind === 'human' || e.kind === 'agent')).slice(-JOIN_CONTEXT);
    return ctx.length > 0 ? ctx[0]!.seq - 1 : g.nextSeq - 1;
  }

  /**
   * Observations not yet shown to this agent, oldest first. After a long silence they are read
   * from the store; past MAILBOX_MAX only the newest are shown and `omitted` says how many not.
   */
  async mailbox(g: GroupDoc, s: SessionDoc): Promise<{ entries: TranscriptEntry[]; omitted: number }> {
    const mine = (e: TranscriptEntry) => e.agentId !== s.agentId && isObservable(e);
    const tailStart = g.transcript[0]?.seq ?? g.nextSeq;
    // The tail is in seq order: walk back only over what is newer than the cursor.
    let i = g.transcript.length;
    while (i > 0 && g.transcript[i - 1]!.seq > s.cursor) i--;
    let entries = g.transcript.slice(i).filter(mine);
    let omitted = 0;
    if (s.cursor + 1 < tailStart) {
      const older = (await this.store.readEntries(g.id, { beforeSeq: tailStart, limit: MAILBOX_MAX })).filter((e) => e.seq > s.cursor && mine(e));
      const first = older[0]?.seq ?? tailStart;
      // Entries between the cursor and the oldest one read were not shown: count the visible ones.
      if (first > s.cursor + 1 && older.length > 0) omitted = await this.countObservable(g, s, first);
      entries = [...older, ...entries];
    }
    if (entries.length > MAILBOX_MAX) {
      omitted += entries.length - MAILBOX_MAX;
      entries = entries.slice(-MAILBOX_MAX);
    }
    return { entries, omitted };
  }

  /** A transcript entry still in memory, by seq. */
  entryAt(g: GroupDoc, seq: number): TranscriptEntry | undefined {
    return entryAt(g.transcript, seq);
  }

  private async countObservable(g: GroupDoc, s: SessionDoc, before: number): Promise<number> {
    let n = 0;
    for (let after = s.cursor; after < before - 1; ) {
      const page = await this.store.readEntries(g.id, { afterSeq: after, limit: 500 });
      const inRange = page.filter((e) => e.seq < before);
      n += inRange.filter((e) => e.agentId !== s.agentId && isObservable(e)).length;
      if (inRange.length < page.length || page.length === 0) break;
      after = page.at(-1)!.seq;
    }
    return n;
  }

  // -------------------------------------------------------------------------------------------
  // Transcript, rounds, dedupe

  /** Add a transcript entry (id and seq assigned); durable with the next commit. */
  append(g: GroupDoc, entry: Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> & { ts?: number }): TranscriptEntry {
    const seq = g.nextSeq;
    const full: TranscriptEntry = { ...entry, id: `${g.id}.${seq}`, seq, ts: entry.ts ?? this.now() };
    applyEntry(g, full);
    this.rt(g).pending.entries.push(full);
    return full;
  }

  /** The channel posted (or gave up on) an entry. */
  markDelivered(g: GroupDoc, e: TranscriptEntry, outcome: 'posted' | 'failed', postedIds?: string[]): void {
    const d: DeliveryOutcome = { seq: e.seq, delivery: outcome, postedIds };
    applyDelivery(g, d);
    // The caller's copy too, when it is not the one in memory (an entry read back from the store).
    e.delivery = outcome;
    if (postedIds) e.postedIds = postedIds;
    this.rt(g).pending.delivery.push(d);
  }

  /** The author edited or deleted an entry: applied now, written with the next record. */
  edit(g: GroupDoc, ed: EntryEdit): void {
    applyEdit(g, ed);
    this.rt(g).pending.edits.push(ed);
  }

  /** A new round (its object is the group's from now on: change it only through `updateRound`). */
  addRound(g: GroupDoc, round: RoundRecord): void {
    this.change(g, { t: 'round', id: round.id, set: round });
  }

  /** The round's progress: what changed, written with the group's next record. */
  updateRound(g: GroupDoc, round: RoundRecord, set: Partial<Omit<RoundRecord, 'id'>>): void {
    if (g.rounds.includes(round)) this.change(g, { t: 'round', id: round.id, set });
    // A round no longer (or not yet) in the group is only the caller's.
    else Object.assign(round, set);
  }

  finishRound(g: GroupDoc, round: RoundRecord): void {
    if (g.rounds.some((r) => r.id === round.id)) this.change(g, { t: 'round-done', id: round.id });
  }

  isSeen(g: GroupDoc, key: string): boolean {
    return g.seen.has(key);
  }

  /** Remember a platform message id (dedupe, ≥ 24 h); false if it was seen before. */
  markSeen(g: GroupDoc, key: string): boolean {
    if (g.seen.has(key)) return false;
    this.change(g, { t: 'seen', key, at: this.now() });
    return true;
  }

  // -------------------------------------------------------------------------------------------
  // Durability

  /**
   * Write everything the group changed since its last record as one record. Resolves once it
   * (and every record before it) is durable; with nothing pending, waits for earlier records.
   * Returns the entries the record carried.
   */
  commit(g: GroupDoc): { entries: TranscriptEntry[]; durable: Promise<void> } {
    const rt = this.rt(g);
    if (rt.stale || rt.broken) return { entries: [], durable: Promise.reject(new StoreUnavailableError(`group ${g.id} is being reloaded after a failed write`)) };
    const p = rt.pending;
    if (p.entries.length === 0 && p.delivery.length === 0 && p.edits.length === 0 && p.changes.length === 0) return { entries: [], durable: rt.lastWrite };
    // No copy needed: the store serialises the record before `append` returns.
    const rec: GroupRecord = {
      v: 2 as const,
      n: ++rt.n,
      ts: this.now(),
      ...(p.entries.length ? { entries: p.entries } : {}),
      ...(p.delivery.length ? { delivery: p.delivery } : {}),
      ...(p.edits.length ? { edits: p.edits } : {}),
      ...(p.changes.length ? { changes: p.changes } : {}),
    };
    const entries = p.entries;
    rt.pending = emptyPending();
    const durable = this.store.append(g.id, rec).then(
      () => this.onRecorded(g, rec),
      (err: unknown) => {
        if (!rt.broken && !rt.stale) {
          rt.broken = true;
          this.logger.error({ group: g.id, err: describeError(err) }, 'could not write to the store; the group is refused until it is reloaded');
          this.onBroken(g, err);
        }
        throw err instanceof StoreUnavailableError ? err : new StoreUnavailableError(`could not record: ${describeError(err)}`, { cause: err });
      },
    );
    rt.lastWrite = durable;
    durable.catch(() => undefined); // callers see the error; this copy only orders later waits
    if (++rt.sinceCheckpoint >= checkpointInterval(g.seen.size, this.checkpointEvery)) {
      rt.sinceCheckpoint = 0;
      // Taken now, as of this record; the store serialises it at once and writes it only once
      // every record up to it is durable (never, if one of them fails).
      void this.store.checkpoint(g.id, checkpointOf(g, rt.n)).catch(() => undefined);
    }
    return { entries, durable };
  }

  /**
   * Commit on the next tick whatever is pending then, without anyone waiting for it: for changes
   * a crash may lose harmlessly (a delivery outcome, a finished round), so that several of them
   * share one record and one sync.
   */
  commitSoon(g: GroupDoc): void {
    const rt = this.rt(g);
    if (rt.soon) return;
    rt.soon = true;
    setImmediate(() => {
      rt.soon = false;
      if (rt.broken || rt.stale) return;
      this.commit(g).durable.catch((err: unknown) => this.logger.warn({ group: g.id, err: describeError(err) }, 'could not record a delivery or a finished round'));
    });
  }

  /** Wait until no deferred commit is scheduled and every record written so far is settled. */
  async settle(): Promise<void> {
    for (;;) {
      const rts = this.all().map((g) => this.rt(g));
      if (rts.some((rt) => rt.soon)) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      await Promise.allSettled(rts.map((rt) => rt.lastWrite));
      if (!this.all().some((g) => this.rt(g).soon)) return;
    }
  }

  /** Wait until everything recorded for this group so far is durable. */
  durable(g: GroupDoc): Promise<void> {
    return this.rt(g).lastWrite;
  }

  /** Commit what is pending everywhere and checkpoint every group changed since its last one. */
  async checkpointAll(): Promise<void> {
    await Promise.all(
      this.all().map(async (g) => {
        const rt = this.rt(g);
        if (rt.broken || rt.stale) return;
        this.commit(g).durable.catch(() => undefined);
        if (rt.sinceCheckpoint === 0) return;
        rt.sinceCheckpoint = 0;
        await this.store.checkpoint(g.id, checkpointOf(g, rt.n));
      }),
    );
  }

  // -------------------------------------------------------------------------------------------
  // Read models

  /**
   * Transcript page, oldest first: the tail from memory, older pages from the store. One entry
   * more than the page is read, so `hasMore` is exact also for the largest page (PAGE_MAX).
   */
  async page(g: GroupDoc, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage> {
    const limit = Math.max(1, Math.min(opts.limit, PAGE_MAX));
    const want = limit + 1;
    const before = opts.before ?? g.nextSeq;
    const fromTail = g.transcript.filter((e) => e.seq < before).slice(-want);
    const tailStart = g.transcript[0]?.seq ?? g.nextSeq;
    // The tail covers the page if it has enough entries or starts at the very beginning.
    if (fromTail.length >= want || tailStart <= 1) return pageOf(fromTail, limit);
    const older = await this.store.readEntries(g.id, { beforeSeq: Math.min(before, tailStart), limit: want - fromTail.length });
    return pageOf([...older, ...fromTail], limit);
  }

  view(g: GroupDoc): GroupView {
    return {
      id: g.id,
      title: g.title,
      channel: g.channel,
      chatId: g.chatId,
      participants: [...g.participants],
      config: { ...g.config },
      archived: g.state.archived,
      createdAt: g.createdAt,
    };
  }

  summary(g: GroupDoc): GroupSummary {
    const last = [...g.transcript].reverse().find((e) => (e.kind === 'human' || e.kind === 'agent') && !e.deleted);
    return {
      ...this.view(g),
      messageCount: g.nextSeq - 1,
      lastMessage: last ? { authorName: last.authorName, text: last.text.slice(0, 140), ts: last.ts } : null,
      sticky: g.state.sticky,
      muted: [...g.state.muted],
    };
  }

  /** Ids of groups whose data could not be read: left untouched, not loaded, never created over. */
  unreadable(): string[] {
    return [...this.reserved];
  }

  private freshId(channel: ChannelKind, chatId: string, title: string): string {
    const base = naturalGroupId(channel, chatId, title);
    let id = base;
    // Archived and unreadable ids stay taken: their data keeps the old history.
    for (let n = 2; this.groups.has(id) || this.reserved.has(id); n++) id = `${base.slice(0, 56)}-${n}`;
    return id;
  }
}

/** The newest `limit` of `entries` (up to `limit + 1`, oldest first), and whether older ones exist. */
export function pageOf(entries: TranscriptEntry[], limit: number): TranscriptPage {
  const hasMore = entries.length > limit;
  return { entries: hasMore ? entries.slice(entries.length - limit) : entries, hasMore };
}

/**
 * The id a new group of this chat is given when it is free (else a `-2`, `-3`… is added). A
 * declared web room's id is its chat id instead.
 */
export function naturalGroupId(channel: ChannelKind, chatId: string, title: string): string {
  return (channel === 'web' ? slugify(title) || 'room' : `${channel === 'telegram' ? 'tg' : 'dc'}-${slugify(chatId) || 'chat'}`).slice(0, 60);
}

/** Private chats share one chat id across bots, so the agent is part of their key. */
function chatKey(channel: ChannelKind, chatId: string, dmAgentId?: string): string {
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

