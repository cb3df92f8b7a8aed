/**
 * Which messages carry which kept files: what lets a file no message needs any more be collected
 * without ever touching one a message still names. Files are content-addressed, so equal bytes
 * sent twice are one file with two references, and a file goes only when its last one does.
 *
 * The references are not written anywhere of their own: the log is the truth, and this index is
 * recomputed from it at every start (every record of every group, read in the background) and
 * kept up to date by every append after. It only ever errs towards keeping:
 *
 * - A record's references count from the moment it is appended, before it is durable (a write
 *   that fails leaves a reference too many, never one too few).
 * - A deletion drops its message's references only once the deletion is durable.
 * - A keep holds its file from before the store is asked for it until a record carries it (the
 *   message it was kept for, still on its way): a deletion of another message with the same
 *   bytes in the meantime leaves it.
 * - Files a tool returned are never collected (the round that asked for them may still post them).
 * - Until the whole log has been read, and for good when some of it could not be (a group left
 *   out at open, a damaged record skipped, several instances writing one database), nothing is
 *   collected: a reference the index never saw may exist.
 */
import type { GroupRecord } from '../core/records.js';
import type { Attachment } from '../core/fileTypes.js';

/** A reference no deletion drops: a tool's result. */
const TOOL_REF = 'tool';

export class FileRefs {
  /** File id → the entries (`<group>.<seq>`) carrying it, and TOOL_REF. */
  private readonly byFile = new Map<string, Set<string>>();
  /** Entry → the files it carries. */
  private readonly byEntry = new Map<string, string[]>();
  /** Keeps of a file whose message has not been appended yet. */
  private readonly holds = new Map<string, number>();
  /** Files that lost their last reference while the index was still being read. */
  private readonly waiting = new Set<string>();
  private complete = false;
  /** Why nothing is collected in this run, once that is known. */
  private off: string | null = null;

  /** A file may be collected: the index is whole and nothing carries or holds it. */
  collectable(id: string): boolean {
    return this.complete && this.off === null && !this.byFile.get(id)?.size && !this.holds.get(id);
  }

  /** Whether a message (or a keep on its way) needs the file; undefined while that is not known. */
  referenced(id: string): boolean | undefined {
    if (this.byFile.get(id)?.size || this.holds.get(id)) return true;
    return this.complete && this.off === null ? false : undefined;
  }

  /** Collection is off for this run (logged by the caller). */
  disable(reason: string): void {
    this.off ??= reason;
  }

  get disabled(): string | null {
    return this.off;
  }

  /** The log has been read whole: returns the files that lost their last reference meanwhile. */
  completed(): string[] {
    this.complete = true;
    const out = [...this.waiting];
    this.waiting.clear();
    return out;
  }

  hold(id: string): void {
    this.holds.set(id, (this.holds.get(id) ?? 0) + 1);
  }

  /** A keep that failed: its hold goes (nothing was kept for a message). */
  release(id: string): void {
    const n = (this.holds.get(id) ?? 0) - 1;
    if (n > 0) this.holds.set(id, n);
    else this.holds.delete(id);
  }

  /**
   * A record is being appended (`live`) or was read from the log: its entries' files and its
   * tools' files are referenced. A live record also ends the hold of each file it carries.
   */
  added(groupId: string, record: GroupRecord, live: boolean): void {
    for (const e of record.entries ?? []) {
      const ids = [...new Set((e.attachments ?? []).map((a) => a.id))];
      if (ids.length === 0 || e.deleted) continue;
      const ref = `${groupId}.${e.seq}`;
      this.byEntry.set(ref, ids);
      for (const id of ids) {
        this.refer(id, ref);
        if (live) this.release(id);
      }
    }
    for (const id of toolFiles(record)) {
      this.refer(id, TOOL_REF);
      if (live) this.release(id);
    }
    // A record read back applies its deletions at once: they are durable already.
    if (!live) this.deleted(groupId, record);
  }

  /** A durable record's deletions drop their messages' references: the files left with none. */
  deleted(groupId: string, record: Deletions): string[] {
    const out: string[] = [];
    for (const ed of record.edits ?? []) {
      if (!ed.deleted) continue;
      const ref = `${groupId}.${ed.seq}`;
      const ids = this.byEntry.get(ref);
      if (!ids) continue;
      this.byEntry.delete(ref);
      for (const id of ids) {
        const refs = this.byFile.get(id);
        refs?.delete(ref);
        if (refs?.size) continue;
        this.byFile.delete(id);
        if (this.complete) out.push(id);
        else this.waiting.add(id);
      }
    }
    return out;
  }

  private refer(id: string, ref: string): void {
    let refs = this.byFile.get(id);
    if (!refs) this.byFile.set(id, (refs = new Set()));
    refs.add(ref);
  }
}

/** The files a record's tool calls returned. */
function toolFiles(record: GroupRecord): string[] {
  const out: string[] = [];
  const take = (list: readonly Attachment[] | undefined) => list?.forEach((a) => out.push(a.id));
  for (const c of record.changes ?? []) {
    if (c.t === 'tool-call') take(c.call.result?.attachments);
    else if (c.t === 'tool') take(c.set.result?.attachments);
  }
  return out;
}

/** What `deleted` needs of a record: the seqs it deletes. */
export interface Deletions {
  edits?: ReadonlyArray<{ seq: number; deleted?: true | undefined }> | undefined;
}

/** A record's deletions, copied (the caller may change the record once it is appended), or null. */
export function deletionsOf(record: GroupRecord): Deletions | null {
  const edits = (record.edits ?? []).filter((ed) => ed.deleted).map((ed) => ({ seq: ed.seq, deleted: true as const }));
  return edits.length > 0 ? { edits } : null;
}
