/**
 * One group's append-only log on disk: JSON Lines segments named after the first entry seq they
 * may hold (`000000000001.jsonl`), rotated by size. Each segment gets a small in-memory index (the
 * byte range of every line that carries entries or delivery outcomes) the first time it is
 * read, and the active segment's index grows with every append, so reading a page of history is
 * one positional read, never a scan of the whole history.
 */
import { open, readdir, readFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../core/ports.js';
import type { GroupRecord } from '../../core/records.js';
import type { TranscriptEntry } from '../../core/types.js';
import { parseRecord } from '../logSchema.js';
import { applyEntryEdit } from '../../core/groups/entryEdit.js';
import { applyOutcome } from '../../core/groups/deliveryOutcome.js';
import { SEGMENT_FILE, segmentName } from './format.js';
import { cacheIndex, cachedIndex, emptyIndex, noteRecord, spanOf, type LineTable, type RecordSpan, type SegmentIndex } from './segmentIndex.js';
import { cutTornTail } from './tornTail.js';

export class GroupLog {
  /** Start seqs of the segments, ascending. */
  segments: number[] = [];
  /** Highest entry seq written so far. */
  maxSeq = 0;
  fh: FileHandle | null = null;
  size = 0;
  /** Where the last acknowledged write ended (the active segment and its length then). */
  acked: { path: string; size: number } | null = null;
  /** Damaged lines met while reading (each skipped; what they held is unknown). */
  damagedLines = 0;
  /** The active segment's index, maintained as lines are appended. */
  private activeIndex: SegmentIndex | null = null;

  constructor(
    readonly id: string,
    readonly dir: string,
    private readonly logger: Logger,
  ) {}

  get logDir(): string {
    return join(this.dir, 'log');
  }

  path(start: number): string {
    return join(this.logDir, segmentName(start));
  }

  get activePath(): string | null {
    const start = this.segments.at(-1);
    return start === undefined ? null : this.path(start);
  }

  /**
   * List segments, cut a torn tail of the last one, index it. Throws when the group is unreadable.
   * `acked`: where the last acknowledged write ended, when this process knows it (a reopen).
   */
  async scan(acked?: { path: string; size: number }): Promise<void> {
    let names: string[] = [];
    try {
      names = (await readdir(this.logDir)).filter((n) => SEGMENT_FILE.test(n));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    this.segments = names.map((n) => Number(n.slice(0, 12))).sort((a, b) => a - b);
    const last = this.activePath;
    if (!last) return;
    await cutTornTail(last, this.logger, acked?.path === last ? acked.size : undefined);
    const idx = await this.index(this.segments.at(-1)!);
    this.activeIndex = idx;
    this.size = idx.size;
    this.acked = { path: last, size: idx.size };
    this.maxSeq = Math.max(this.segments.at(-1)! - 1, idx.entries.count ? idx.entries.hiAt(idx.entries.count - 1) : 0);
  }

  /** The number of the last record in the log (0 when it holds none). */
  async lastN(): Promise<number> {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const n = (await this.index(this.segments[i]!)).lastN;
      if (n > 0) return n;
    }
    return 0;
  }

  /** Open the active segment for appending, creating the first one. */
  async openActive(): Promise<{ created: boolean }> {
    if (this.fh) return { created: false };
    let created = false;
    if (this.segments.length === 0) {
      this.segments.push(1);
      created = true;
    }
    this.fh = await open(this.activePath!, 'a');
    if (!this.activeIndex) this.activeIndex = emptyIndex();
    if (created) this.acked = { path: this.activePath!, size: 0 };
    return { created };
  }

  /** Start a new segment once the active one is full (named after the next entry seq). */
  async rotateIfFull(segmentBytes: number): Promise<boolean> {
    const next = this.maxSeq + 1;
    if (this.size < segmentBytes || next <= (this.segments.at(-1) ?? 0)) return false;
    await this.fh?.close();
    this.fh = null;
    if (this.activeIndex) cacheIndex(this.activePath!, this.activeIndex);
    this.segments.push(next);
    this.activeIndex = emptyIndex();
    this.size = 0;
    this.acked = { path: this.activePath!, size: 0 };
    this.fh = await open(this.activePath!, 'a');
    return true;
  }

  /** Note appended lines in the active index (after they were written). */
  noted(records: ReadonlyArray<{ span: RecordSpan; bytes: number }>): void {
    const idx = this.activeIndex!;
    let offset = this.size;
    for (const { span, bytes } of records) {
      noteRecord(idx, span, offset, bytes);
      offset += bytes;
      if (span.entries) this.maxSeq = Math.max(this.maxSeq, span.entries[1]);
    }
    this.size = offset;
    idx.size = offset;
  }

  async close(): Promise<void> {
    await this.fh?.close().catch(() => undefined);
    this.fh = null;
  }

  /** The index of one segment: the active one from memory, others read once and cached. */
  async index(start: number): Promise<SegmentIndex> {
    const path = this.path(start);
    if (start === this.segments.at(-1) && this.activeIndex) return this.activeIndex;
    const hit = cachedIndex(path);
    if (hit) return hit;
    const idx = emptyIndex();
    const buf = await readFile(path);
    let offset = 0;
    let line = 0;
    while (offset < buf.length) {
      const nl = buf.indexOf(0x0a, offset);
      const end = nl < 0 ? buf.length : nl + 1;
      line++;
      const rec = this.parse(buf.subarray(offset, end), path, line);
      if (rec) noteRecord(idx, spanOf(rec), offset, end - offset);
      offset = end;
    }
    idx.size = buf.length;
    if (start !== this.segments.at(-1)) cacheIndex(path, idx);
    return idx;
  }

  /** Every record after `afterN`, in order, streamed segment by segment. */
  async *records(afterN: number): AsyncGenerator<GroupRecord> {
    for (let i = 0; i < this.segments.length; i++) {
      const idx = await this.index(this.segments[i]!);
      if (idx.lastN !== 0 && idx.lastN <= afterN) continue; // everything here is in the checkpoint
      const path = this.path(this.segments[i]!);
      const buf = await readFile(path);
      let offset = 0;
      let line = 0;
      while (offset < buf.length) {
        const nl = buf.indexOf(0x0a, offset);
        const end = nl < 0 ? buf.length : nl + 1;
        line++;
        const rec = this.parse(buf.subarray(offset, end), path, line, false);
        offset = end;
        if (rec && rec.n > afterN) yield rec;
      }
    }
  }

  /** Entries (with the delivery outcomes of their home post and copies, and edits, applied) of a seq range, oldest first. */
  async entries(range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    if (this.segments.length === 0 || range.limit <= 0) return [];
    const out: TranscriptEntry[] = [];
    const used: number[] = [];
    if (range.afterSeq !== undefined) {
      const from = range.afterSeq + 1;
      for (let i = Math.max(0, this.segmentOf(from)); i < this.segments.length && out.length < range.limit; i++) {
        const idx = await this.index(this.segments[i]!);
        const first = idx.entries.firstEndingFrom(from);
        const lines = Math.min(idx.entries.count, first + range.limit - out.length);
        const got = (await this.readLines(i, idx.entries, first, lines)).flatMap((r) => r.entries ?? []).filter((e) => e.seq >= from);
        out.push(...got.slice(0, range.limit - out.length));
        used.push(i);
      }
    } else {
      const before = range.beforeSeq ?? Infinity;
      for (let i = this.segmentOf(before - 1); i >= 0 && out.length < range.limit; i--) {
        const idx = await this.index(this.segments[i]!);
        const end = idx.entries.countStartingBefore(before);
        const got = (await this.readLines(i, idx.entries, Math.max(0, end - (range.limit - out.length)), end)).flatMap((r) => r.entries ?? []).filter((e) => e.seq < before);
        out.unshift(...got.slice(-(range.limit - out.length)));
        used.push(i);
      }
    }
    if (out.length === 0) return out;
    // Delivery outcomes and edits may come any time later (a chat down for days gets its posts
    // when it returns): every segment from the first one read to the last. Outcomes and edits
    // change different fields, so each kind is applied in its own order.
    const lo = out[0]!.seq;
    const hi = out.at(-1)!.seq;
    const bySeq = new Map(out.map((e) => [e.seq, e]));
    for (let i = Math.min(...used); i < this.segments.length; i++) {
      for (const rec of await this.overlapping(i, 'deliveries', lo, hi)) {
        for (const d of rec.delivery ?? []) {
          const e = bySeq.get(d.seq);
          if (e) applyOutcome(e, d);
        }
      }
      for (const rec of await this.overlapping(i, 'edits', lo, hi)) {
        for (const ed of rec.edits ?? []) {
          const e = bySeq.get(ed.seq);
          if (e) applyEntryEdit(e, ed);
        }
      }
    }
    return out;
  }

  /** The records of segment `i` listed in its `table` that touch a seq in [lo, hi], in order. */
  private async overlapping(i: number, table: 'deliveries' | 'edits', lo: number, hi: number): Promise<GroupRecord[]> {
    const d = (await this.index(this.segments[i]!))[table];
    let first = -1;
    let last = -1;
    for (let k = 0; k < d.count; k++) {
      if (d.hiAt(k) < lo || d.loAt(k) > hi) continue;
      if (first < 0) first = k;
      last = k;
    }
    return first < 0 ? [] : (await this.readLines(i, d, first, last + 1)).filter((r) => (table === 'edits' ? r.edits : r.delivery)?.length);
  }

  /** Index of the segment that holds `seq` (-1 when it is before the first). */
  private segmentOf(seq: number): number {
    let lo = 0;
    let hi = this.segments.length - 1;
    let ans = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.segments[mid]! <= seq) {
        ans = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return ans;
  }

  /**
   * Read lines `from` (inclusive) to `to` (exclusive) of `table` in segment `i` with one
   * positional read of the span they cover, and parse them in order (lines in between that the
   * table does not list are skipped).
   */
  private async readLines(i: number, table: LineTable, from: number, to: number): Promise<GroupRecord[]> {
    if (to <= from) return [];
    const start = this.segments[i]!;
    const base = table.offsetAt(from);
    const buf = Buffer.alloc(table.endAt(to - 1) - base);
    const path = this.path(start);
    const fh = await open(path, 'r');
    try {
      await fh.read(buf, 0, buf.length, base);
    } finally {
      await fh.close();
    }
    const out: GroupRecord[] = [];
    for (let k = from; k < to; k++) {
      const rec = this.parse(buf.subarray(table.offsetAt(k) - base, table.endAt(k) - base), path, 0, false);
      if (rec) out.push(rec);
    }
    return out;
  }

  /** Parse one line; a damaged one is reported (once, when indexing) and skipped. */
  private parse(line: Buffer, path: string, lineNo: number, report = true): GroupRecord | null {
    let json: unknown;
    try {
      json = JSON.parse(line.toString('utf8'));
    } catch {
      const problem = line.includes(0) ? 'not valid JSON (it holds NUL bytes)' : 'not valid JSON';
      this.damagedLines++;
      if (report) this.logger.error({ path, line: lineNo, problem }, 'log line is damaged; skipped');
      return null;
    }
    const res = parseRecord(json, `${path} line ${lineNo}`);
    if ('problem' in res) {
      this.damagedLines++;
      if (report) this.logger.error({ path, line: lineNo, problem: res.problem }, 'log line is damaged; skipped');
      return null;
    }
    return res.record;
  }
}

