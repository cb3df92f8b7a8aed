/**
 * What is read from a group without changing it: an agent's mailbox, history pages, the views the
 * API and the page show. Entries older than the in-memory tail come from the store.
 */
import type { Store } from '../ports.js';
import type { GroupSummary, GroupView, TranscriptPage } from '../readModels.js';
import type { GroupDoc, SessionDoc } from '../records.js';
import type { TranscriptEntry } from '../types.js';

/** Observations put in one prompt after a long silence; older ones are counted, not shown. */
export const MAILBOX_MAX = 300;
/** The largest history page one read returns (the web API's `limit` maximum). */
export const PAGE_MAX = 500;

/** Cursor that shows a newcomer the last `count` human and agent messages. */
export function contextStart(g: GroupDoc, count: number): number {
  const ctx = g.transcript.filter((e) => !e.hiddenFromAgents && (e.kind === 'human' || e.kind === 'agent')).slice(-count);
  return ctx.length > 0 ? ctx[0]!.seq - 1 : g.nextSeq - 1;
}

/** Entries an agent is shown: humans, agents, and system notices meant for agents. */
export function isObservable(e: TranscriptEntry): boolean {
  return !e.hiddenFromAgents && !e.deleted && (e.kind === 'human' || e.kind === 'agent' || e.kind === 'system' || e.kind === 'tool');
}

/**
 * Observations not yet shown to this agent, oldest first. After a long silence they are read
 * from the store; past MAILBOX_MAX only the newest are shown and `omitted` says how many not.
 */
export async function mailboxOf(store: Store, g: GroupDoc, s: SessionDoc): Promise<{ entries: TranscriptEntry[]; omitted: number }> {
  const mine = (e: TranscriptEntry) => e.agentId !== s.agentId && isObservable(e);
  const tailStart = g.transcript[0]?.seq ?? g.nextSeq;
  // The tail is in seq order: walk back only over what is newer than the cursor.
  let i = g.transcript.length;
  while (i > 0 && g.transcript[i - 1]!.seq > s.cursor) i--;
  let entries = g.transcript.slice(i).filter(mine);
  let omitted = 0;
  if (s.cursor + 1 < tailStart) {
    const older = (await store.readEntries(g.id, { beforeSeq: tailStart, limit: MAILBOX_MAX })).filter((e) => e.seq > s.cursor && mine(e));
    const first = older[0]?.seq ?? tailStart;
    // Entries between the cursor and the oldest one read were not shown: count the visible ones.
    if (first > s.cursor + 1 && older.length > 0) omitted = await countObservable(store, g, s, first);
    entries = [...older, ...entries];
  }
  if (entries.length > MAILBOX_MAX) {
    omitted += entries.length - MAILBOX_MAX;
    entries = entries.slice(-MAILBOX_MAX);
  }
  return { entries, omitted };
}

async function countObservable(store: Store, g: GroupDoc, s: SessionDoc, before: number): Promise<number> {
  let n = 0;
  for (let after = s.cursor; after < before - 1; ) {
    const page = await store.readEntries(g.id, { afterSeq: after, limit: 500 });
    const inRange = page.filter((e) => e.seq < before);
    n += inRange.filter((e) => e.agentId !== s.agentId && isObservable(e)).length;
    if (inRange.length < page.length || page.length === 0) break;
    after = page.at(-1)!.seq;
  }
  return n;
}

/**
 * Transcript page, oldest first: the tail from memory, older pages from the store. One entry
 * more than the page is read, so `hasMore` is exact also for the largest page (PAGE_MAX).
 */
export async function pageOfGroup(store: Store, g: GroupDoc, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage> {
  const limit = Math.max(1, Math.min(opts.limit, PAGE_MAX));
  const want = limit + 1;
  const before = opts.before ?? g.nextSeq;
  const fromTail = g.transcript.filter((e) => e.seq < before).slice(-want);
  const tailStart = g.transcript[0]?.seq ?? g.nextSeq;
  // The tail covers the page if it has enough entries or starts at the very beginning.
  if (fromTail.length >= want || tailStart <= 1) return pageOf(fromTail, limit);
  const older = await store.readEntries(g.id, { beforeSeq: Math.min(before, tailStart), limit: want - fromTail.length });
  return pageOf([...older, ...fromTail], limit);
}

export function viewOf(g: GroupDoc): GroupView {
  return {
    id: g.id,
    title: g.title,
    channel: g.channel,
    chatId: g.chatId,
    ...(g.links?.length ? { links: g.links.map((l) => ({ ...l })) } : {}),
    participants: [...g.participants],
    config: { ...g.config },
    archived: g.state.archived,
    createdAt: g.createdAt,
  };
}

export function summaryOf(g: GroupDoc): GroupSummary {
  const last = [...g.transcript].reverse().find((e) => (e.kind === 'human' || e.kind === 'agent') && !e.deleted);
  return {
    ...viewOf(g),
    messageCount: g.nextSeq - 1,
    lastMessage: last ? { authorName: last.authorName, text: last.text.slice(0, 140), ts: last.ts } : null,
    sticky: g.state.sticky,
    muted: [...g.state.muted],
  };
}

/** The newest `limit` of `entries` (up to `limit + 1`, oldest first), and whether older ones exist. */
export function pageOf(entries: TranscriptEntry[], limit: number): TranscriptPage {
  const hasMore = entries.length > limit;
  return { entries: hasMore ? entries.slice(entries.length - limit) : entries, hasMore };
}

