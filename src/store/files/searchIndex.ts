/**
 * The file store's search index: per group, an inverted index in memory (folded token → the
 * messages that hold it), built the first time that group is searched by streaming its log once,
 * then kept up to date as its entries are appended. Indexes of groups not searched lately are
 * dropped once all of them together pass a memory bound, and rebuilt on their next search.
 *
 * A query looks at the vocabulary (tokens starting with each term) and the postings of the
 * tokens that match, never at the log; only the few entries it returns are read back, by seq,
 * through the segment index.
 */
import { afterCursor, newestFirst, searchTokens, type SearchPlace } from '../../core/text/search.js';

/** A searchable entry as it is appended (the text is only read to tokenise it). */
export interface IndexedEntry {
  seq: number;
  ts: number;
  text: string;
}

/** An entry's text changed (`text`) or it was deleted (`text` null). */
export interface IndexedEdit {
  seq: number;
  text: string | null;
}

/** Rough heap cost, for the bound: per message, per posting, per distinct token (plus its characters). */
const BYTES_PER_DOC = 64;
const BYTES_PER_POSTING = 8;
const BYTES_PER_TOKEN = 96;

export class GroupSearchIndex {
  private seqs: number[] = [];
  private tss: number[] = [];
  /** Token → the messages (index into seqs) holding it: a number for one, an array for more. */
  private readonly postings = new Map<string, number | number[]>();
  /** Deleted messages, never found. */
  private readonly dead = new Set<number>();
  /**
   * Edited messages → the tokens of their current text. Their new tokens are added to the
   * postings, their old ones stay there: a match of an edited message is checked against these.
   */
  private readonly current = new Map<number, string[]>();
  maxSeq = 0;
  bytes = 0;

  get size(): number {
    return this.seqs.length;
  }

  /** Entries come in seq order; one already indexed (seen twice while building) is skipped. */
  add(e: IndexedEntry): void {
    if (e.seq <= this.maxSeq) return;
    this.maxSeq = e.seq;
    const doc = this.seqs.length;
    this.seqs.push(e.seq);
    this.tss.push(e.ts);
    this.bytes += BYTES_PER_DOC;
    this.post(doc, searchTokens(e.text));
  }

  /** A message indexed earlier was edited or deleted (one never indexed, a notice, is skipped). */
  edit(ed: IndexedEdit): void {
    const doc = this.docOf(ed.seq);
    if (doc < 0) return;
    if (ed.text === null) {
      this.dead.add(doc);
      this.current.delete(doc);
      return;
    }
    const tokens = searchTokens(ed.text);
    this.current.set(doc, tokens);
    this.post(doc, tokens);
  }

  private post(doc: number, tokens: Iterable<string>): void {
    for (const t of tokens) {
      const p = this.postings.get(t);
      if (p === undefined) {
        this.postings.set(t, doc);
        this.bytes += BYTES_PER_TOKEN + t.length * 2;
      } else if (typeof p === 'number') {
        if (p !== doc) this.postings.set(t, [p, doc]);
      } else if (p.at(-1) !== doc) p.push(doc);
      this.bytes += BYTES_PER_POSTING;
    }
  }

  /** The message with this seq (messages are indexed in seq order), or -1. */
  private docOf(seq: number): number {
    let lo = 0;
    let hi = this.seqs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = this.seqs[mid]!;
      if (at === seq) return mid;
      if (at < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The newest `limit` messages holding every term (as a word start), after `before` in the order. */
  match(terms: readonly string[], groupId: string, before: SearchPlace | undefined, limit: number): SearchPlace[] {
    const n = this.seqs.length;
    if (n === 0 || terms.length === 0) return [];
    // count[d] = how many of the terms so far message d has matched (each counted once).
    const count = new Uint8Array(n);
    for (let i = 0; i < terms.length; i++) {
      const term = terms[i]!;
      let any = false;
      for (const [token, p] of this.postings) {
        if (!token.startsWith(term)) continue;
        if (typeof p === 'number') {
          if (count[p] === i) count[p] = i + 1;
        } else for (const d of p) if (count[d] === i) count[d] = i + 1;
        any = true;
      }
      if (!any) return [];
    }
    const out: SearchPlace[] = [];
    const want = terms.length;
    for (let d = 0; d < n; d++) {
      if (count[d] !== want || this.dead.has(d)) continue;
      const now = this.current.get(d);
      if (now && !terms.every((term) => now.some((t) => t.startsWith(term)))) continue;
      const place = { ts: this.tss[d]!, groupId, seq: this.seqs[d]! };
      if (afterCursor(place, before)) out.push(place);
    }
    out.sort(newestFirst);
    return out.slice(0, limit);
  }
}

interface Slot {
  index: GroupSearchIndex;
  /** Set while the log is being read; entries appended meanwhile wait in `pending`. */
  building: Promise<GroupSearchIndex> | null;
  pending: Array<{ entry: IndexedEntry } | { edit: IndexedEdit }>;
}

export class SearchIndexes {
  /** In order of last use (a Map keeps insertion order): the first is dropped first. */
  private readonly slots = new Map<string, Slot>();
  /** Logs read to build an index, and the entries indexed from them (for tests and benchmarks). */
  readonly stats = { builds: 0, indexed: 0 };

  constructor(private readonly maxBytes: number) {}

  /** The group's index, built from `read` (which streams its log once) when there is none. */
  async index(groupId: string, read: (add: (e: IndexedEntry) => void, edit: (ed: IndexedEdit) => void) => Promise<void>): Promise<GroupSearchIndex> {
    let slot = this.slots.get(groupId);
    if (slot) {
      this.slots.delete(groupId);
      this.slots.set(groupId, slot);
      return slot.building ?? slot.index;
    }
    const index = new GroupSearchIndex();
    const fresh: Slot = { index, building: null, pending: [] };
    slot = fresh;
    this.slots.set(groupId, fresh);
    this.stats.builds++;
    fresh.building = (async () => {
      try {
        await read(
          (e) => {
            index.add(e);
            this.stats.indexed++;
          },
          (ed) => index.edit(ed),
        );
      } catch (err) {
        if (this.slots.get(groupId) === fresh) this.slots.delete(groupId);
        throw err;
      }
      for (const p of fresh.pending) {
        if ('entry' in p) index.add(p.entry);
        else index.edit(p.edit);
      }
      fresh.pending = [];
      fresh.building = null;
      this.evict(groupId);
      return index;
    })();
    return fresh.building;
  }

  /** Durable entries and edits of a group: applied to its index when it has one (none is built for them). */
  appended(groupId: string, entries: readonly IndexedEntry[], edits: readonly IndexedEdit[] = []): void {
    const slot = this.slots.get(groupId);
    if (!slot || entries.length + edits.length === 0) return;
    if (slot.building) slot.pending.push(...entries.map((entry) => ({ entry })), ...edits.map((edit) => ({ edit })));
    else {
      for (const e of entries) slot.index.add(e);
      for (const ed of edits) slot.index.edit(ed);
    }
  }

  /** Forget a group's index (its log was read again from disk, or a write of it failed). */
  drop(groupId: string): void {
    this.slots.delete(groupId);
  }

  /** Heap the indexes take, roughly. */
  get bytes(): number {
    let sum = 0;
    for (const s of this.slots.values()) sum += s.index.bytes;
    return sum;
  }

  /** Drop the least recently searched indexes while over the bound (never `keep`, nor one being built). */
  private evict(keep: string): void {
    let total = this.bytes;
    for (const [id, slot] of this.slots) {
      if (total <= this.maxBytes) return;
      if (id === keep || slot.building) continue;
      this.slots.delete(id);
      total -= slot.index.bytes;
    }
  }
}
