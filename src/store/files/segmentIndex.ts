/**
 * The in-memory index of a log segment: the byte range of every line that carries entries,
 * delivery outcomes or edits, so reading a page of history is one positional read, never a scan of the
 * whole history. Indexes of segments other than the active ones are cached, a bounded number.
 */
import type { GroupRecord } from '../../core/records.js';

/**
 * Byte ranges of log lines with the seq range each covers, in columns of typed arrays: 24 bytes a
 * line instead of a few hundred for objects, because the active segment's table lives as long as
 * the group does and grows with every record until the segment rotates.
 */
export class LineTable {
  count = 0;
  private offset = new Uint32Array(16);
  private length = new Uint32Array(16);
  private lo = new Float64Array(16);
  private hi = new Float64Array(16);

  push(offset: number, length: number, lo: number, hi: number): void {
    if (this.count === this.offset.length) this.grow();
    const i = this.count++;
    this.offset[i] = offset;
    this.length[i] = length;
    this.lo[i] = lo;
    this.hi[i] = hi;
  }

  offsetAt(i: number): number {
    return this.offset[i]!;
  }
  endAt(i: number): number {
    return this.offset[i]! + this.length[i]!;
  }
  loAt(i: number): number {
    return this.lo[i]!;
  }
  hiAt(i: number): number {
    return this.hi[i]!;
  }

  /** First line whose range ends at or after `seq` (lines of entries are in seq order). */
  firstEndingFrom(seq: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.hi[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Number of lines whose range starts before `seq`. */
  countStartingBefore(seq: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.lo[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private grow(): void {
    const n = this.offset.length * 2;
    const copy = <T extends Uint32Array | Float64Array>(a: T, b: T): T => (b.set(a), b);
    this.offset = copy(this.offset, new Uint32Array(n));
    this.length = copy(this.length, new Uint32Array(n));
    this.lo = copy(this.lo, new Float64Array(n));
    this.hi = copy(this.hi, new Float64Array(n));
  }
}

/** What the store knows about one segment without keeping its text. */
export interface SegmentIndex {
  /** Lines that carry entries, in seq order. */
  entries: LineTable;
  /**
   * Lines that carry delivery outcomes, with the range of entry seqs they touch: read back only
   * when a page of entries overlapping them is read.
   */
  deliveries: LineTable;
  /**
   * Lines that carry edits or deletions, with the range of entry seqs they touch. An edit may come
   * long after its entry, so a read looks at these in its segment and in every later one.
   */
  edits: LineTable;
  /** Record numbers in this segment (0 when it has none). */
  firstN: number;
  lastN: number;
  size: number;
}

/**
 * What the index needs of a record: its number and the seq ranges of the entries it carries and
 * of the entries whose delivery it reports. Taken when the record is appended, so later changes
 * to the caller's objects cannot make the index disagree with the line written.
 */
export interface RecordSpan {
  n: number;
  entries: [number, number] | null;
  deliveries: [number, number] | null;
  edits: [number, number] | null;
}

export function spanOf(rec: GroupRecord): RecordSpan {
  // A record's entries are in seq order.
  const entries: [number, number] | null = rec.entries?.length ? [rec.entries[0]!.seq, rec.entries.at(-1)!.seq] : null;
  return { n: rec.n, entries, deliveries: seqRange(rec.delivery), edits: seqRange(rec.edits) };
}

/** The lowest and highest seq a list of outcomes or edits touches (null for none). */
function seqRange(items: ReadonlyArray<{ seq: number }> | undefined): [number, number] | null {
  if (!items?.length) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (const d of items) {
    lo = Math.min(lo, d.seq);
    hi = Math.max(hi, d.seq);
  }
  return [lo, hi];
}

export function emptyIndex(): SegmentIndex {
  return { entries: new LineTable(), deliveries: new LineTable(), edits: new LineTable(), firstN: 0, lastN: 0, size: 0 };
}

/** Note the line of one record, `length` bytes at `offset`, in a segment's index. */
export function noteRecord(idx: SegmentIndex, span: RecordSpan, offset: number, length: number): void {
  if (idx.firstN === 0) idx.firstN = span.n;
  idx.lastN = span.n;
  if (span.entries) idx.entries.push(offset, length, span.entries[0], span.entries[1]);
  if (span.deliveries) idx.deliveries.push(offset, length, span.deliveries[0], span.deliveries[1]);
  if (span.edits) idx.edits.push(offset, length, span.edits[0], span.edits[1]);
}

/** Indexes kept in memory across all groups (the active segments' are kept besides). */
const INDEX_CACHE = 256;
const indexCache = new Map<string, SegmentIndex>();

/** The cached index of the segment at `path`, now the most recently used. */
export function cachedIndex(path: string): SegmentIndex | undefined {
  const hit = indexCache.get(path);
  if (hit) {
    indexCache.delete(path);
    indexCache.set(path, hit);
  }
  return hit;
}

export function cacheIndex(path: string, idx: SegmentIndex): void {
  indexCache.set(path, idx);
  if (indexCache.size > INDEX_CACHE) indexCache.delete(indexCache.keys().next().value!);
}
