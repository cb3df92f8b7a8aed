/**
 * Reading far back in a group's history: search over every message, and the page around any
 * entry (a search hit, the message a reply refers to), so the page can jump to either.
 */
import type { SearchFound, Store } from '../ports.js';
import type { SearchCursor } from '../readModels.js';
import type { GroupDoc } from '../records.js';
import type { AroundPage, SearchPage, SearchResult, TranscriptPage } from '../readModels.js';
import type { TranscriptEntry } from '../types.js';
import { UserError } from '../errors.js';
import { searchSnippet, searchTerms } from '../text/search.js';
import type { GroupManager } from './GroupManager.js';
import { PAGE_MAX } from './groupReads.js';

/** Most results on one page of search. */
export const SEARCH_PAGE_MAX = 100;

export interface HistoryDeps {
  groups: GroupManager;
  store: Store;
  /** A page of the transcript, as `GatewayApi.messagePage` reads it. */
  page(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage>;
  /** Whether this instance writes the group (its newest entries are in memory then). */
  owns(id: string): boolean;
}

/**
 * Messages matching `q`, newest first. The stores' `searchEntries` is the one read behind every
 * search: it finds an edited message by its new text and never a deleted one.
 */
export async function searchHistory(d: HistoryDeps, opts: { groupId?: string | undefined; q: string; limit: number; before?: SearchCursor | undefined }): Promise<SearchPage> {
  if (!d.store.searchEntries) throw new UserError('this server\'s store cannot search', 'not_supported', 501);
  let groups: GroupDoc[];
  if (opts.groupId !== undefined) {
    const g = d.groups.get(opts.groupId);
    if (!g) throw new UserError(`unknown group "${opts.groupId}"`, 'not_found', 404);
    groups = [g];
  } else {
    // Across groups: the live ones, those the page lists (a dissolved group is searched by its id).
    groups = d.groups.all().filter((g) => !g.state.archived);
  }
  const terms = searchTerms(opts.q);
  const limit = Math.max(1, Math.min(opts.limit, SEARCH_PAGE_MAX));
  if (terms.length === 0 || groups.length === 0) return { results: [], next: null };
  // One more than the page says whether another page exists.
  const found = await d.store.searchEntries({ groupIds: groups.map((g) => g.id), terms, before: opts.before, limit: limit + 1 });
  const page = found.slice(0, limit);
  const titles = new Map(groups.map((g) => [g.id, g.title]));
  const last = page.at(-1);
  return {
    results: page.map((f) => resultOf(f, titles.get(f.groupId) ?? f.groupId, terms)),
    next: found.length > limit && last ? { ts: last.entry.ts, groupId: last.groupId, seq: last.entry.seq } : null,
  };
}

function resultOf(f: SearchFound, groupTitle: string, terms: readonly string[]): SearchResult {
  const e = f.entry;
  return {
    groupId: f.groupId,
    groupTitle,
    id: e.id,
    seq: e.seq,
    ts: e.ts,
    kind: e.kind,
    authorId: e.authorId,
    authorName: e.authorName,
    ...(e.agentId !== undefined ? { agentId: e.agentId } : {}),
    ...searchSnippet(e.text, terms),
  };
}

/**
 * The page around entry `around`: the newer half after it, the rest up to and including it (more
 * of the older side when there are few newer entries), oldest first.
 */
export async function pageAround(d: HistoryDeps, id: string, opts: { around: number; limit: number }): Promise<AroundPage> {
  const g = d.groups.get(id);
  if (!g) throw new UserError(`unknown group "${id}"`, 'not_found', 404);
  const limit = Math.max(1, Math.min(opts.limit, PAGE_MAX));
  const newerWanted = Math.floor(limit / 2);
  const bySeq = new Map<number, TranscriptEntry>();
  if (newerWanted > 0) {
    for (const e of await d.store.readEntries(id, { afterSeq: opts.around, limit: newerWanted + 1 })) bySeq.set(e.seq, e);
    // What is in memory is the freshest (delivery state, entries about to be durable).
    if (d.owns(id)) for (const e of g.transcript) if (e.seq > opts.around) bySeq.set(e.seq, e);
  }
  const newerAll = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  const newer = newerAll.slice(0, newerWanted);
  const older = await d.page(id, { before: opts.around + 1, limit: limit - newer.length });
  return { entries: [...older.entries, ...newer], hasMore: older.hasMore, hasNewer: newerWanted === 0 ? g.nextSeq - 1 > opts.around : newerAll.length > newerWanted };
}
