/**
 * What a decider returns: the parts of a group's next record — new entries (each with the seq it
 * will have), edits of entries, changes — in the order `evolve` applies a record, and what the
 * caller is answered. A decider is a pure function of the group as it is and a command; the
 * group's mailbox task applies its decision (`GroupManager.apply`) and commits once.
 */
import type { EntryEdit, GroupChange, GroupDoc } from '../records.js';
import type { NewEntry, TranscriptEntry } from '../types.js';
import { copiesFor } from '../rooms/chats.js';

export interface Decision<R> {
  entries: TranscriptEntry[];
  edits: EntryEdit[];
  changes: GroupChange[];
  result: R;
}

/** A decision that changes nothing. */
export function nothing<R>(result: R): Decision<R> {
  return { entries: [], edits: [], changes: [], result };
}

/**
 * The entry `entry` becomes when added to the group now, `before` entries after the ones decided
 * with it: its id and seq, and (unless `copies: false`) the copies owed in the room's other chats.
 */
export function newEntry(g: GroupDoc, entry: NewEntry & { ts: number }, o: { copies?: boolean; before?: number } = {}): TranscriptEntry {
  const seq = g.nextSeq + (o.before ?? 0);
  const full: TranscriptEntry = { ...entry, id: `${g.id}.${seq}`, seq };
  const copies = o.copies === false ? undefined : copiesFor(g, full);
  if (copies) full.copies = copies;
  return full;
}
