/**
 * What a person's edit or deletion of their message, and a person's or an agent's reaction, does
 * to a group: pure functions of the group as it is, the entry concerned (from the in-memory tail or
 * read back from the store) and the command, each returning the parts of the group's next record.
 * No clock (the time is in the command), no I/O, nothing changed in place.
 *
 * - An edit: the entry's whole edit state with the new text (the old text stays in the log), a
 *   note entry for the agents ("Maya edited their message: …"), each agent's memory brought to
 *   the new text, and in a room the copies in other chats carried along.
 * - A deletion: the entry and the notes about it deleted, every agent's memory without it, the
 *   copies carried along.
 * - A reaction: the entry's reactions list after it; adding one also leaves a note for the agents
 *   (while the message has fewer than MAX_NOTES). One per emoji per reactor; adding one that is
 *   there or taking back one that is not changes nothing.
 */
import { UserError } from '../errors.js';
import type { EntryEdit, GroupChange, GroupDoc, SessionDoc } from '../records.js';
import type { ChatTurn, Reaction, TranscriptEntry } from '../types.js';
import { newEntry, nothing, type Decision } from '../groups/decision.js';
import { edited, editNoteText, forgetEntry, rewriteMemory } from '../groups/entryEdit.js';
import { carryFor } from '../rooms/carry.js';
import { reactionNoteText } from '../session/reactionNotes.js';

/** Different emoji one message may carry: its list (written with every later change of it) stays small. */
export const MAX_EMOJI_PER_ENTRY = 20;
/** Notes about one message (its edits and reactions) past which a reaction adds none: the agents have heard. */
const MAX_NOTES = 100;

const CHORUS = { kind: 'system', authorId: 'system', authorName: 'Chorus' } as const;

/** The author changes the text of their message to `text` (checked: not empty, within the limit). */
export function decideEdit(g: GroupDoc, entry: TranscriptEntry, cmd: { text: string; at: number }): Decision<TranscriptEntry> {
  const { text, at } = cmd;
  if (entry.text === text) return nothing(entry);
  const note = newEntry(g, { ...CHORUS, text: editNoteText(entry.authorName, text), editOf: entry.id, ts: at });
  // The whole edit state: the new text, every note about the message, its reactions as they are.
  const ed: EntryEdit = { seq: entry.seq, text, at, notes: [...(entry.editNotes ?? []), note.seq], ...(entry.reactions?.length ? { reactions: entry.reactions } : {}) };
  const memory = memoryChanges(g, (s) => rewriteMemory(s.history, s.summary, entry, entry.text, text));
  return { entries: [note], edits: [ed], changes: [...carried(g, entry, ed), ...memory], result: edited(entry, ed) };
}

/** The author deletes their message. */
export function decideDeletion(g: GroupDoc, entry: TranscriptEntry, cmd: { at: number }): Decision<TranscriptEntry> {
  const { at } = cmd;
  const ed: EntryEdit = { seq: entry.seq, deleted: true, at, ...(entry.editNotes?.length ? { notes: entry.editNotes } : {}) };
  const notes = (entry.editNotes ?? []).map((seq): EntryEdit => ({ seq, deleted: true, at }));
  const memory = memoryChanges(g, (s) => forgetEntry(s.history, s.summary, entry));
  return { entries: [], edits: [ed, ...notes], changes: [...carried(g, entry, ed), ...memory], result: edited(entry, ed) };
}

/** Who reacts: `key` tells reactors apart (a browser, a platform account, `agent:<id>`). */
export interface ReactionCommand {
  emoji: string;
  on: boolean;
  by: { key: string; name: string; agentId?: string | undefined };
  at: number;
}

/**
 * A reaction added or taken back; `changed` false when it was already so. UserError 409
 * `not_reactable` (deleted, a note, a decision line, hidden from agents) or `too_many_reactions`.
 */
export function decideReaction(g: GroupDoc, entry: TranscriptEntry, cmd: ReactionCommand): Decision<{ entry: TranscriptEntry; changed: boolean }> {
  const why = notReactable(entry);
  if (why) throw new UserError(why, 'not_reactable', 409);
  const { emoji, on, by, at } = cmd;
  const list = entry.reactions ?? [];
  const mine = (x: Reaction) => x.byKey === by.key && x.emoji === emoji;
  if (list.some(mine) === on) return nothing({ entry: { ...entry }, changed: false });
  if (on && !list.some((x) => x.emoji === emoji) && new Set(list.map((x) => x.emoji)).size >= MAX_EMOJI_PER_ENTRY) {
    throw new UserError(`a message takes at most ${MAX_EMOJI_PER_ENTRY} different emoji`, 'too_many_reactions', 409);
  }
  const reactions = on ? [...list, { emoji, by: by.name, byKey: by.key, at }] : list.filter((x) => !mine(x));
  let notes = entry.editNotes ?? [];
  const entries: TranscriptEntry[] = [];
  if (on && notes.length < MAX_NOTES) {
    const reactionOf = { id: entry.id, emoji, by: by.name };
    const note = newEntry(g, { ...CHORUS, ...(by.agentId ? { agentId: by.agentId } : {}), text: reactionNoteText(by.name, emoji, entry.authorName, entry.text), reactionOf, ts: at });
    entries.push(note);
    notes = [...notes, note.seq];
  }
  // The whole edit state: an edited message's text and time stay as they are.
  const ed: EntryEdit = {
    seq: entry.seq,
    at,
    ...(entry.editedAt !== undefined ? { text: entry.text, editedAt: entry.editedAt } : {}),
    ...(notes.length ? { notes } : {}),
    reactions,
  };
  return { entries, edits: [ed], changes: [], result: { entry: edited(entry, ed), changed: true } };
}

/** Why an entry takes no reactions, or null when it does. */
export function notReactable(e: TranscriptEntry): string | null {
  if (e.deleted) return 'this message was deleted';
  if (e.editOf || e.reactionOf) return 'a note about another message takes no reactions';
  if (e.kind === 'decision') return 'a decision line takes no reactions';
  if (e.hiddenFromAgents) return 'a command or its answer takes no reactions';
  return null;
}

/** In a room of several chats the copies of the message follow (carried by their chats' queues). */
function carried(g: GroupDoc, entry: TranscriptEntry, ed: EntryEdit): GroupChange[] {
  const items = carryFor(g, entry, ed);
  return items.length ? [{ t: 'carry', items }] : [];
}

/** Each agent's history and summary as `rewrite` leaves them (null: unchanged). */
function memoryChanges(g: GroupDoc, rewrite: (s: SessionDoc) => { history: ChatTurn[]; summary: string | null } | null): GroupChange[] {
  const out: GroupChange[] = [];
  for (const s of g.sessions.values()) {
    const r = rewrite(s);
    if (r) out.push({ t: 'session', agentId: s.agentId, reset: true, append: r.history, cursor: s.cursor, summary: r.summary, usage: { ...s.usage } });
  }
  return out;
}
