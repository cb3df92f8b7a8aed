/**
 * `evolve`: the one function that changes a group's state. A record applies as its new entries,
 * then its delivery outcomes, then its changes, in order. GroupManager applies each change to the
 * group in memory the moment it is made (and writes it with the group's next record); a restart
 * folds the same records over the last checkpoint with the same functions. There is no second
 * copy of any transition, so the group rebuilt from its log is the group that was held live.
 *
 * Pure over the group object it is given: no clock (every time is in the change), no I/O.
 */
import type { DayUsage, DeliveryOutcome, EntryEdit, GroupChange, GroupCheckpoint, GroupDoc, GroupHead, GroupRecord, SessionDelta, SessionDoc, ToolCallRecord, UsageTotals } from '../records.js';
import type { GroupConfig, TranscriptEntry, Usage } from '../types.js';
import { applyEntryEdit } from './entryEdit.js';
import { applyOutcome } from './deliveryOutcome.js';
import { seenKey } from '../rooms/chats.js';
import { applyRoomChange, owesPost } from '../rooms/roomChanges.js';

export { owesPost } from '../rooms/roomChanges.js';

/**
 * Transcript entries kept in memory per group; older ones are read from the store on demand (a
 * long-silent agent's mailbox, history pages, SSE resumes). Sized for what a round reads — the
 * entries since the agents' cursors, which move every round — not for history: at ~700 bytes of
 * heap an entry, this tail is most of what an idle group costs in memory.
 */
export const TRANSCRIPT_TAIL = 64;
/** Trim the in-memory tail in batches rather than one entry at a time. */
const TRIM_BATCH = 32;
/** Dedupe memory is kept this long (a platform redelivering a message within a day is recognised)… */
const SEEN_TTL_MS = 24 * 60 * 60 * 1000;
/** …and never fewer than this many keys, however old. */
const SEEN_MIN = 1000;

/** Apply one record: its entries, its delivery outcomes, its edits, its changes. */
export function evolve(g: GroupDoc, rec: GroupRecord): void {
  for (const e of rec.entries ?? []) applyEntry(g, e);
  for (const d of rec.delivery ?? []) applyDelivery(g, d);
  for (const ed of rec.edits ?? []) applyEdit(g, ed);
  for (const c of rec.changes ?? []) applyChange(g, c);
}

/** A new transcript entry (seq assigned): the tail, the next seq, what is owed to the channel, dedupe. */
export function applyEntry(g: GroupDoc, e: TranscriptEntry): void {
  g.nextSeq = Math.max(g.nextSeq, e.seq + 1);
  g.transcript.push(e);
  if (owesPost(e)) g.undelivered.push(e);
  // Its platform id is dedupe memory from now on, as of the entry's time.
  if (e.kind === 'human' && e.platformMessageId) remember(g.seen, seenKey(e.origin, e.platformMessageId), e.ts);
  trimTail(g);
}

/** The channel posted (or gave up on) an entry recorded earlier: in its home chat, or one copy (`d.chat`). */
export function applyDelivery(g: GroupDoc, d: DeliveryOutcome): void {
  for (const e of new Set([entryAt(g.transcript, d.seq), g.undelivered.find((x) => x.seq === d.seq)])) {
    if (e) applyOutcome(e, d);
  }
  g.undelivered = g.undelivered.filter((x) => x.seq !== d.seq || owesPost(x));
}

/** The author edited or deleted an entry recorded earlier: the copies held in memory follow. */
export function applyEdit(g: GroupDoc, ed: EntryEdit): void {
  for (const e of [entryAt(g.transcript, ed.seq), g.undelivered.find((x) => x.seq === ed.seq)]) if (e) applyEntryEdit(e, ed);
}

export function applyChange(g: GroupDoc, c: GroupChange): void {
  switch (c.t) {
    case 'head':
      setHead(g, c.head);
      return;
    case 'join':
      if (!g.participants.includes(c.agentId)) g.participants = [...g.participants, c.agentId];
      return;
    case 'leave':
      g.participants = g.participants.filter((p) => p !== c.agentId);
      if (g.state.sticky === c.agentId) g.state.sticky = null;
      if (g.config.last_speaker === c.agentId) g.config = { ...g.config, last_speaker: null };
      return;
    case 'config':
      g.config = c.config;
      return;
    case 'mute':
      g.state.muted = [...g.state.muted.filter((m) => m !== c.agentId), ...(c.muted ? [c.agentId] : [])];
      return;
    case 'sticky':
      g.state.sticky = c.agentId;
      return;
    case 'rotation':
      g.state.rrIndex = c.next;
      return;
    case 'spoke':
      g.state.lastSpoke = { ...g.state.lastSpoke, [c.agentId]: c.at };
      // What the reply had seen: human messages up to here count as answered by it.
      if (c.seenUpTo !== undefined) g.state.repliedUpTo = { ...g.state.repliedUpTo, [c.agentId]: Math.max(c.seenUpTo, g.state.repliedUpTo?.[c.agentId] ?? 0) };
      return;
    case 'usage':
      g.state.usage = { ...g.state.usage, [c.key]: plus(g.state.usage[c.key] ?? emptyUsage(), c) };
      g.state.today = dayPlus(dayUsage(g, c.at), c);
      return;
    case 'budget-notice':
      g.state.today = { ...dayUsage(g, c.at), [c.which]: true };
      return;
    case 'archive':
      g.state.archived = true;
      g.rounds = [];
      delete g.state.tools;
      return;
    case 'rekey':
      if (!c.from) g.chatId = c.chatId;
      else g.links = g.links?.map((l) => (l.channel === c.from!.channel && l.chatId === c.from!.chatId ? { ...l, chatId: c.chatId } : l));
      return;
    case 'link':
    case 'unlink':
    case 'link-code':
    case 'carry':
    case 'carried':
      applyRoomChange(g, c);
      return;
    case 'round': {
      const r = g.rounds.find((x) => x.id === c.id);
      if (r) Object.assign(r, c.set);
      else g.rounds.push({ ...c.set, id: c.id } as GroupDoc['rounds'][number]);
      return;
    }
    case 'round-done':
      g.rounds = g.rounds.filter((r) => r.id !== c.id);
      keepTools(g, (call) => call.roundId !== c.id);
      return;
    case 'session':
      applySessionDelta(g.sessions, g.id, c);
      return;
    case 'seen':
      remember(g.seen, c.key, c.at);
      return;
    case 'tool-call':
      g.state.tools = [...(g.state.tools ?? []).filter((x) => x.id !== c.call.id), { ...c.call }];
      return;
    case 'tool':
      // A call whose round was stopped meanwhile is gone already: its late result changes nothing.
      if (g.state.tools) g.state.tools = g.state.tools.map((x) => (x.id === c.id ? { ...x, ...c.set } : x));
      return;
    case 'tools-done':
      keepTools(g, (call) => call.turn !== c.turn);
      return;
  }
}

/** Keep the recorded tool calls that pass `keep`; none left: the field goes (older state has none). */
function keepTools(g: GroupDoc, keep: (call: ToolCallRecord) => boolean): void {
  if (!g.state.tools) return;
  const left = g.state.tools.filter(keep);
  if (left.length > 0) g.state.tools = left;
  else delete g.state.tools;
}

/** Apply a session delta: start over (`reset`), drop folded turns, append new ones, set the rest. */
export function applySessionDelta(sessions: Map<string, SessionDoc>, groupId: string, d: SessionDelta): void {
  let s = sessions.get(d.agentId);
  if (!s) {
    s = { groupId, agentId: d.agentId, history: [], cursor: 0, summary: null, usage: emptyUsage() };
    sessions.set(d.agentId, s);
  } else if (d.reset) {
    // The same object starts over: whoever holds it sees the reset, not a stale copy.
    s.history = [];
  }
  if (d.drop) s.history = s.history.slice(d.drop);
  // Turns are never changed in place (a rewrite makes new ones), so the record and the session may share them.
  if (d.append) s.history.push(...d.append);
  s.cursor = d.cursor;
  s.summary = d.summary;
  s.usage = { ...d.usage };
}

/** The head fields of a group, set whole (a new group, or a record of an older log). */
function setHead(g: GroupDoc, h: GroupHead): void {
  const copy = structuredClone(h);
  g.id = copy.id;
  g.title = copy.title;
  g.channel = copy.channel;
  g.chatId = copy.chatId;
  if (copy.dmAgentId) g.dmAgentId = copy.dmAgentId;
  else delete g.dmAgentId;
  if (copy.links?.length) g.links = copy.links;
  else delete g.links;
  g.participants = copy.participants;
  g.config = copy.config;
  g.createdAt = copy.createdAt;
  g.state = copy.state;
}

/** A group before its first record: what replay starts from without a checkpoint. */
export function emptyGroup(id: string): GroupDoc {
  return {
    id,
    title: '',
    channel: 'web',
    chatId: id,
    participants: [],
    config: {} as GroupConfig,
    createdAt: 0,
    state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} },
    transcript: [],
    nextSeq: 1,
    rounds: [],
    seen: new Map(),
    undelivered: [],
    sessions: new Map(),
  };
}

/**
 * A group rebuilt from its newest checkpoint (if any) and the records after it, in order.
 * `described`: a checkpoint or some record described the group (a log without either holds no
 * group); `records`: how many records were applied; `n`: the last record applied.
 */
export async function rebuild(id: string, checkpoint: GroupCheckpoint | null, records: AsyncIterable<GroupRecord> | Iterable<GroupRecord>): Promise<{ g: GroupDoc; n: number; described: boolean; records: number }> {
  const g = checkpoint ? fromCheckpoint(checkpoint) : emptyGroup(id);
  let n = checkpoint?.n ?? 0;
  let described = !!checkpoint;
  let applied = 0;
  for await (const rec of records) {
    // Records at or below the checkpoint were applied before it was taken.
    if (rec.n <= n) continue;
    evolve(g, rec);
    n = rec.n;
    applied++;
    if (rec.changes?.some((c) => c.t === 'head')) described = true;
  }
  return { g, n, described, records: applied };
}

/** The group as a checkpoint left it (a copy: the group evolves from here). */
export function fromCheckpoint(cp: GroupCheckpoint): GroupDoc {
  const g = emptyGroup(cp.head.id);
  setHead(g, cp.head);
  g.nextSeq = cp.nextSeq;
  g.rounds = structuredClone(cp.rounds);
  g.seen = new Map(cp.seen);
  g.undelivered = structuredClone(cp.undelivered);
  g.sessions = new Map(cp.sessions.map((s) => [s.agentId, { ...structuredClone(s), groupId: cp.head.id }]));
  return g;
}

/** The group's state after its last record, for a checkpoint. Not a copy: the store serialises it at once. */
export function checkpointOf(g: GroupDoc, n: number): GroupCheckpoint {
  return { version: 2 as const, n, head: headOf(g), nextSeq: g.nextSeq, rounds: g.rounds, sessions: [...g.sessions.values()], seen: [...g.seen], undelivered: g.undelivered };
}

/** The small part of a group that describes it (members, config, small state). */
export function headOf(g: GroupDoc): GroupHead {
  return {
    id: g.id,
    title: g.title,
    channel: g.channel,
    chatId: g.chatId,
    ...(g.dmAgentId ? { dmAgentId: g.dmAgentId } : {}),
    ...(g.links?.length ? { links: g.links } : {}),
    participants: g.participants,
    config: g.config,
    createdAt: g.createdAt,
    state: g.state,
  };
}

/** A transcript entry of the in-memory tail by seq (binary search: the tail is in seq order). */
export function entryAt(t: readonly TranscriptEntry[], seq: number): TranscriptEntry | undefined {
  // The tail's seqs are usually consecutive: try the place that assumes it first.
  const guess = t[seq - (t[0]?.seq ?? 0)];
  if (guess?.seq === seq) return guess;
  let lo = 0;
  let hi = t.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = t[mid]!.seq;
    if (at === seq) return t[mid];
    if (at < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/** The seq inside a transcript id (`<group>.<seq>`). */
export function seqOfId(id: string): number {
  return Number(id.slice(id.lastIndexOf('.') + 1));
}

/** Keep the in-memory tail short; the log keeps everything. */
export function trimTail(g: GroupDoc): void {
  if (g.transcript.length <= TRANSCRIPT_TAIL + TRIM_BATCH) return;
  // Rounds still waiting refer to their human messages: keep them in memory.
  const firstTrigger = Math.min(...g.rounds.flatMap((r) => r.triggerIds.map(seqOfId)));
  let cut = g.transcript.length - TRANSCRIPT_TAIL;
  const stop = g.transcript.findIndex((e) => e.seq >= firstTrigger);
  if (stop >= 0) cut = Math.min(cut, stop);
  if (cut > 0) g.transcript.splice(0, cut);
}

/** Remember a dedupe key as of `at`, forgetting keys older than the window (oldest first in the map). */
function remember(seen: Map<string, number>, key: string, at: number): void {
  if (seen.has(key)) return;
  seen.set(key, at);
  pruneSeen(seen, at);
}

/** Forget dedupe keys older than the window, keeping at least SEEN_MIN. */
export function pruneSeen(seen: Map<string, number>, now: number): void {
  for (const [key, ts] of seen) {
    if (seen.size <= SEEN_MIN || ts >= now - SEEN_TTL_MS) break;
    seen.delete(key);
  }
}

export function emptyUsage(): UsageTotals {
  return { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
}

/** Running totals plus one call's figures (a new object). */
export function plus(totals: UsageTotals, res: { usage: Usage; costUsd?: number | null | undefined }): UsageTotals {
  const out: UsageTotals = {
    calls: totals.calls + 1,
    inputTokens: totals.inputTokens + res.usage.inputTokens,
    outputTokens: totals.outputTokens + res.usage.outputTokens,
    cacheReadTokens: totals.cacheReadTokens + res.usage.cacheReadTokens,
    cacheWriteTokens: totals.cacheWriteTokens + res.usage.cacheWriteTokens,
    costUsd: totals.costUsd + (res.costUsd ?? 0),
  };
  // A model without a price costs "unknown", not $0: counted so the total can say so.
  const unpriced = (totals.unpricedCalls ?? 0) + (typeof res.costUsd === 'number' ? 0 : 1);
  if (unpriced > 0) out.unpricedCalls = unpriced;
  return out;
}

/** YYYY-MM-DD of an epoch-ms time, in UTC. */
export function utcDay(ms: number): string {
  // Asked on every model call: the day's string is kept until the day changes.
  if (ms < dayCache.from || ms >= dayCache.to) {
    const from = Math.floor(ms / DAY_MS) * DAY_MS;
    dayCache = { from, to: from + DAY_MS, day: new Date(from).toISOString().slice(0, 10) };
  }
  return dayCache.day;
}
const DAY_MS = 86_400_000;
let dayCache = { from: 0, to: 0, day: '' };

/** The group's usage on the UTC day of `at` (a fresh, zero day when the stored one is from an earlier day). */
export function dayUsage(g: GroupDoc, at: number): DayUsage {
  const day = utcDay(at);
  const t = g.state.today;
  return t && t.day === day ? t : { day, tokens: 0, costUsd: 0, costUnknown: false, warned: false, refused: false };
}

function dayPlus(t: DayUsage, res: { usage: Usage; costUsd?: number | null | undefined }): DayUsage {
  const u = res.usage;
  const out = { ...t, tokens: t.tokens + u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens };
  if (typeof res.costUsd === 'number') out.costUsd += res.costUsd;
  else out.costUnknown = true;
  return out;
}
