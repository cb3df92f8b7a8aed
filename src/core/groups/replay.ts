/**
 * Rebuilding a group from its log. A checkpoint is only a shortcut: the records after it
 * are applied in order, exactly as they were applied in memory when they were written, so the
 * state after a restart is the state that was durable — no more, no less. Pure functions, shared
 * by every Store implementation and by the tests that inspect a data directory.
 */
import type { GroupCheckpoint, GroupHead, GroupRecord, RoundRecord, SessionDelta, SessionDoc, UsageTotals } from '../ports.js';
import type { TranscriptEntry } from '../types.js';

/** Dedupe memory is kept this long (a platform redelivering a message within a day is recognised)… */
const SEEN_TTL_MS = 24 * 60 * 60 * 1000;
/** …and never fewer than this many keys, however old. */
const SEEN_MIN = 1000;

/** A group's durable state while it is being replayed. */
export interface ReplayedGroup {
  n: number;
  head: GroupHead | null;
  nextSeq: number;
  rounds: RoundRecord[];
  sessions: Map<string, SessionDoc>;
  seen: Map<string, number>;
  undelivered: Map<number, TranscriptEntry>;
  /** How many entries the log holds after the checkpoint (for the migration/loading log line). */
  entriesSeen: number;
}

export function fromCheckpoint(cp: GroupCheckpoint | null): ReplayedGroup {
  return {
    n: cp?.n ?? 0,
    head: cp ? structuredClone(cp.head) : null,
    nextSeq: cp?.nextSeq ?? 1,
    rounds: cp ? structuredClone(cp.rounds) : [],
    sessions: new Map((cp?.sessions ?? []).map((s) => [s.agentId, structuredClone(s)])),
    seen: new Map(cp?.seen ?? []),
    undelivered: new Map((cp?.undelivered ?? []).map((e) => [e.seq, structuredClone(e)])),
    entriesSeen: 0,
  };
}

/** Apply one record. Records at or below the state's `n` were already applied and are ignored. */
export function applyRecord(g: ReplayedGroup, rec: GroupRecord): void {
  if (rec.n <= g.n) return;
  g.n = rec.n;
  if (rec.head) g.head = structuredClone(rec.head);
  for (const e of rec.entries ?? []) {
    g.entriesSeen++;
    g.nextSeq = Math.max(g.nextSeq, e.seq + 1);
    if (e.kind === 'human' && e.platformMessageId) g.seen.set(e.platformMessageId, rec.ts);
    if (e.delivery === 'pending') g.undelivered.set(e.seq, structuredClone(e));
  }
  for (const key of rec.seen ?? []) g.seen.set(key, rec.ts);
  for (const d of rec.delivery ?? []) g.undelivered.delete(d.seq);
  for (const r of rec.rounds ?? []) {
    const i = g.rounds.findIndex((x) => x.id === r.id);
    if (i >= 0) g.rounds[i] = structuredClone(r);
    else g.rounds.push(structuredClone(r));
  }
  if (rec.roundsDone?.length) {
    const done = new Set(rec.roundsDone);
    g.rounds = g.rounds.filter((r) => !done.has(r.id));
  }
  for (const d of rec.sessions ?? []) applySessionDelta(g.sessions, g.head?.id ?? '', d);
}

/** Apply a session delta to a map of sessions (agentId → session). */
export function applySessionDelta(sessions: Map<string, SessionDoc>, groupId: string, d: SessionDelta): void {
  let s = sessions.get(d.agentId);
  if (!s || d.reset) {
    s = { groupId, agentId: d.agentId, history: [], cursor: 0, summary: null, usage: emptyUsage() };
    sessions.set(d.agentId, s);
  }
  if (d.drop) s.history = s.history.slice(d.drop);
  if (d.append) s.history.push(...structuredClone(d.append));
  s.cursor = d.cursor;
  s.summary = d.summary;
  s.usage = { ...d.usage };
}

/** Forget dedupe keys older than the window, keeping at least SEEN_MIN (oldest first in the map). */
export function pruneSeen(seen: Map<string, number>, now: number): void {
  for (const [key, ts] of seen) {
    if (seen.size <= SEEN_MIN || ts >= now - SEEN_TTL_MS) break;
    seen.delete(key);
  }
}

export function emptyUsage(): UsageTotals {
  return { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
}
