/**
 * An edit or a deletion of an entry, carried to its copies in the room's other chats: one item per
 * copy the platforms have (a copy still owed is posted with the text as it is by then).
 */
import type { EntryEdit, GroupDoc } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import type { CarryItem, PostedBy } from '../roomTypes.js';
import { relayedAuthor } from './roomPosts.js';

/** Who posted the copies of an entry: its agent, the relay (a person), or the system voice. */
export function postedByOf(g: GroupDoc, e: TranscriptEntry): PostedBy {
  if (e.kind === 'human') return { relayed: relayedAuthor(g, e) };
  return e.agentId ? { agentId: e.agentId } : { system: true };
}

/** The items that bring every posted copy of `e` to edit `ed`. */
export function carryFor(g: GroupDoc, e: TranscriptEntry, ed: EntryEdit): CarryItem[] {
  if (ed.text === undefined && !ed.deleted) return [];
  const by = postedByOf(g, e);
  const out: CarryItem[] = [];
  for (const chat in e.copies) {
    const copy = e.copies[chat]!;
    if (copy.delivery !== 'posted' || !copy.ids?.length) continue;
    const via = copy.via ? { via: copy.via } : {};
    out.push({ seq: e.seq, chat, ids: [...copy.ids], by, ...via, at: ed.at, ...(ed.deleted ? { deleted: true as const } : { text: ed.text }) });
  }
  return out;
}
