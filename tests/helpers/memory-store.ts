/**
 * A Store in memory with the file store's semantics: one append-only list of JSON lines per group
 * (so what a test reads back is exactly what would be on disk, no shared references), checkpoints
 * kept beside it, and a switch that makes writes fail like a full or read-only disk.
 */
import type { SearchFound, SearchRequest, Store, StoredGroup } from '../../src/core/ports.js';
import type { GroupCheckpoint, GroupDoc, GroupRecord, RoundRecord, SessionDoc } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import type { Attachment, StoredFile } from '../../src/core/fileTypes.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { checkFileToKeep } from '../../src/store/fileCheck.js';
import { emptyGroup, evolve, headOf } from '../../src/core/groups/evolve.js';
import { afterCursor, newestFirst, searchTokens, searchable, tokensMatch } from '../../src/core/text/search.js';
import { applyEntryEdit } from '../../src/core/groups/entryEdit.js';
import { applyOutcome } from '../../src/core/groups/deliveryOutcome.js';

/** A group as a replay of its whole log gives it: the full transcript, every session. */
export interface DurableGroup extends Omit<GroupDoc, 'seen' | 'transcript'> {
  transcript: TranscriptEntry[];
  seen: string[];
  rounds: RoundRecord[];
  sessions: Map<string, SessionDoc>;
}

export class MemoryStore implements Store {
  /** groupId → log lines (JSON). */
  readonly logs = new Map<string, string[]>();
  readonly checkpoints = new Map<string, string>();
  writes = 0;
  /** Set to make every append fail (what ENOSPC or a read-only data_dir does). */
  failWrites: string | null = null;
  private readonly failed = new Set<string>();
  private lastError: string | null = null;

  /** Kept files by id (the SHA-256 of their bytes); the first name stays. */
  readonly files = new Map<string, StoredFile>();

  async putFile(meta: Attachment, bytes: Uint8Array): Promise<void> {
    // As the real stores: bytes under an id that is not their SHA-256 are a caller's mistake.
    checkFileToKeep(meta, bytes);
    await Promise.resolve();
    if (this.failWrites) throw new StoreUnavailableError(`cannot keep file ${meta.id}: ${this.failWrites}`);
    if (!this.files.has(meta.id)) this.files.set(meta.id, { meta: { ...meta }, bytes: Uint8Array.from(bytes) });
  }

  async readFile(id: string): Promise<StoredFile | null> {
    const f = this.files.get(id);
    return f ? { meta: { ...f.meta }, bytes: Uint8Array.from(f.bytes) } : null;
  }

  async open() {
    return { groups: [...this.logs.keys()].map((id) => this.stored(id)), unreadable: [] };
  }

  append(groupId: string, record: GroupRecord): Promise<void> {
    // Serialised at once, as the port requires; stored after a tick, like a real write.
    return this.store(groupId, JSON.stringify(record));
  }

  private async store(groupId: string, line: string): Promise<void> {
    await Promise.resolve();
    if (this.failed.has(groupId)) throw new StoreUnavailableError(`group ${groupId} needs a reopen after a failed write`);
    if (this.failWrites) {
      this.failed.add(groupId);
      this.lastError = this.failWrites;
      throw new StoreUnavailableError(`cannot write group ${groupId}: ${this.failWrites}`);
    }
    this.writes++;
    this.lastError = null;
    let log = this.logs.get(groupId);
    if (!log) this.logs.set(groupId, (log = []));
    log.push(line);
  }

  async reopen(groupId: string): Promise<StoredGroup> {
    this.failed.delete(groupId);
    return this.stored(groupId);
  }

  async checkpoint(groupId: string, cp: GroupCheckpoint): Promise<void> {
    // Serialised at once, as the port says: the core hands over live objects.
    const text = JSON.stringify(cp);
    await Promise.resolve();
    // Like the file store: only once every record it covers is in the log, never after a failure.
    const last = this.logs.get(groupId)?.at(-1);
    const durableN = last ? (JSON.parse(last) as GroupRecord).n : 0;
    if (!this.failed.has(groupId) && durableN >= cp.n) this.checkpoints.set(groupId, text);
  }

  async readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    const all = this.entries(groupId);
    if (range.afterSeq !== undefined) return all.filter((e) => e.seq > range.afterSeq!).slice(0, range.limit);
    const before = range.beforeSeq ?? Infinity;
    return all.filter((e) => e.seq < before).slice(-range.limit);
  }

  /** Search by scanning every entry (the real stores keep an index; this store is for tests). */
  async searchEntries(req: SearchRequest): Promise<SearchFound[]> {
    const found = req.groupIds.flatMap((groupId) =>
      this.entries(groupId)
        .filter((e) => searchable(e) && tokensMatch(searchTokens(e.text), req.terms))
        .map((entry) => ({ groupId, seq: entry.seq, ts: entry.ts, entry })),
    );
    return found
      .filter((p) => afterCursor(p, req.before))
      .sort(newestFirst)
      .slice(0, req.limit)
      .map(({ groupId, entry }) => ({ groupId, entry }));
  }

  async checkWritable(): Promise<void> {
    if (this.failWrites) throw new StoreUnavailableError(this.failWrites);
  }

  health() {
    return { writable: this.lastError === null, error: this.lastError };
  }

  async flush() {}
  async close() {}

  /** Every record of a group, parsed. */
  records(groupId: string): GroupRecord[] {
    return (this.logs.get(groupId) ?? []).map((l) => JSON.parse(l) as GroupRecord);
  }

  /** Every entry of a group, with its latest delivery state and edits. */
  entries(groupId: string): TranscriptEntry[] {
    const out = new Map<number, TranscriptEntry>();
    for (const rec of this.records(groupId)) {
      for (const e of rec.entries ?? []) out.set(e.seq, e);
      for (const d of rec.delivery ?? []) {
        const e = out.get(d.seq);
        if (e) applyOutcome(e, d);
      }
      for (const ed of rec.edits ?? []) {
        const e = out.get(ed.seq);
        if (e) applyEntryEdit(e, ed);
      }
    }
    return [...out.values()].sort((a, b) => a.seq - b.seq);
  }

  /** The durable state of a group: a replay of its whole log. */
  group(id: string): DurableGroup {
    if (!this.logs.has(id)) throw new Error(`no stored group ${id}`);
    const g = emptyGroup(id);
    const records = this.records(id);
    for (const rec of records) evolve(g, rec);
    if (!records.some((rec) => rec.changes?.some((c) => c.t === 'head'))) throw new Error(`group ${id} has no head record`);
    return { ...headOf(g), transcript: this.entries(id), nextSeq: g.nextSeq, rounds: g.rounds, seen: [...g.seen.keys()], undelivered: g.undelivered, sessions: g.sessions };
  }

  session(groupId: string, agentId: string): SessionDoc {
    const s = this.group(groupId).sessions.get(agentId);
    if (!s) throw new Error(`no stored session ${groupId}/${agentId}`);
    return s;
  }

  private stored(id: string): StoredGroup {
    const cp = this.checkpoints.has(id) ? (JSON.parse(this.checkpoints.get(id)!) as GroupCheckpoint) : null;
    const lines = [...(this.logs.get(id) ?? [])];
    return {
      id,
      checkpoint: cp,
      async *records() {
        for (const l of lines) {
          const rec = JSON.parse(l) as GroupRecord;
          if (!cp || rec.n > cp.n) yield rec;
        }
      },
    };
  }
}
