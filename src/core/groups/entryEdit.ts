/**
 * What an edit or a deletion does to the entries it touches and to what the agents remember.
 * Shared by the core (the in-memory tail, through `evolve`) and the stores (the entries they read
 * back), so every reader sees a message the same way after it changed.
 */
import type { ChatTurn, TranscriptEntry } from '../types.js';
import { textWithFiles } from '../session/promptFiles.js';
import type { EntryEdit } from '../records.js';
import { observationLine } from '../session/prompt.js';
import { reactedPhrase } from '../session/reactionNotes.js';

/** What a deleted message reads as wherever its text was. */
export const DELETED_TEXT = '(message deleted)';
/** Texts at least this long are also replaced where they appear outside their own message block. */
const LOOSE_MATCH_MIN = 16;

/**
 * The entry as of an edit. The latest edit of an entry describes its whole edit state, so every
 * field it governs is set from the edit alone (applying all of an entry's edits in order gives
 * what applying the latest gives): the text (the original when the edit has none), when it was
 * edited or deleted, the notes about it, its reactions.
 */
export function applyEntryEdit(e: TranscriptEntry, ed: EntryEdit): void {
  if (ed.deleted) {
    e.text = '';
    e.deleted = true;
    e.deletedAt = ed.at;
    // Its files go with its words: no reader lists them, no prompt sends them again.
    delete e.attachments;
  } else if (ed.text !== undefined) e.text = ed.text;
  const editedAt = ed.deleted ? undefined : (ed.editedAt ?? (ed.text !== undefined ? ed.at : undefined));
  if (editedAt !== undefined) e.editedAt = editedAt;
  else delete e.editedAt;
  if (ed.notes?.length) e.editNotes = [...ed.notes];
  if (ed.reactions?.length) e.reactions = ed.reactions.map((r) => ({ ...r }));
  else delete e.reactions;
}

/** A copy of the entry as the edit left it (the caller's copy may be one read from the store). */
export function edited(entry: TranscriptEntry, ed: EntryEdit): TranscriptEntry {
  const out = { ...entry };
  applyEntryEdit(out, ed);
  return out;
}

/** The edit changes the text (or deletes it): what search indexes must follow. A reaction does not. */
export function changesText(ed: EntryEdit): boolean {
  return !!ed.deleted || (ed.text !== undefined && (ed.editedAt ?? ed.at) === ed.at);
}

/** The note an edit leaves in the transcript for the agents (the page draws no line for it). */
export function editNoteText(authorName: string, text: string): string {
  return `${authorName} edited their message: ${text}`;
}

/**
 * The places a message's text was shown to an agent, as the prompt wrote them: its own message
 * block, the block of the note about its latest edit, the start of it that reaction notes quote,
 * and (for longer texts, which cannot be mistaken for ordinary words) the text wherever it appears.
 */
function occurrences(entry: TranscriptEntry, text: string, replacement: string): Array<[string, string]> {
  const block = (t: string) => observationLine({ ...entry, text: t });
  const note = (t: string) => observationLine({ ...entry, kind: 'system', authorId: 'system', authorName: 'Chorus', text: editNoteText(entry.authorName, t) });
  const out: Array<[string, string]> = [
    [block(text), block(replacement)],
    [note(text), note(replacement)],
    // Reaction notes (folded or not) quote the message's start after this phrase.
    [reactedPhrase(entry.authorName, text), reactedPhrase(entry.authorName, replacement)],
  ];
  if (text.length >= LOOSE_MATCH_MIN) out.push([text, replacement]);
  return out;
}

/**
 * An agent's history and summary with `text` (what `entry` said) replaced by `replacement`, or
 * null when neither holds it. Deterministic: the result is written in the log as it is.
 */
export function rewriteMemory(history: readonly ChatTurn[], summary: string | null, entry: TranscriptEntry, text: string, replacement: string): { history: ChatTurn[]; summary: string | null } | null {
  if (!text) return null;
  const pairs = occurrences(entry, text, replacement);
  const swap = (s: string) => pairs.reduce((acc, [from, to]) => (acc.includes(from) ? acc.split(from).join(to) : acc), s);
  let changed = false;
  const out = history.map((t) => {
    const content = swap(t.content);
    if (content === t.content) return t;
    changed = true;
    return { ...t, content };
  });
  const sum = summary === null ? null : swap(summary);
  if (sum !== summary) changed = true;
  return changed ? { history: out, summary: sum } : null;
}

/**
 * An agent's history and summary without a deleted message: its text and file lines replaced by
 * DELETED_TEXT wherever the prompt wrote them, and the files it carried taken from the turns that
 * showed it (so no later prompt sends them again). Null when neither holds anything of it.
 */
export function forgetEntry(
  history: readonly ChatTurn[],
  summary: string | null,
  entry: TranscriptEntry,
): { history: ChatTurn[]; summary: string | null } | null {
  const files = new Set((entry.attachments ?? []).map((a) => a.id));
  const gone = { ...entry, text: DELETED_TEXT, attachments: undefined };
  const pairs = entry.text ? occurrences(entry, entry.text, DELETED_TEXT) : [];
  if (files.size > 0) {
    // First the message block with its file lines, then the words and lines as a direct turn
    // writes them (before the text alone is looked for, which would leave the lines).
    pairs.unshift([observationLine(entry), observationLine(gone)], [textWithFiles(entry), DELETED_TEXT]);
  }
  if (pairs.length === 0) return null;
  const swap = (s: string) =>
    pairs.reduce((acc, [from, to]) => (acc.includes(from) ? acc.split(from).join(to) : acc), s);
  let changed = false;
  const out = history.map((t) => {
    const content = swap(t.content);
    if (content === t.content) return t;
    changed = true;
    const kept = t.attachments?.filter((a) => !(files.has(a.id) && a.from === entry.authorName));
    const { attachments: _all, ...words } = t;
    return kept?.length ? { ...words, content, attachments: kept } : { ...words, content };
  });
  const sum = summary === null ? null : swap(summary);
  if (sum !== summary) changed = true;
  return changed ? { history: out, summary: sum } : null;
}

/** Turns with every deleted message of `gone` forgotten (turns built before the deletion, recorded after it). */
export function redactTurns(turns: ChatTurn[], gone: ReadonlyArray<{ entry: TranscriptEntry }>): ChatTurn[] {
  let out = turns;
  for (const d of gone) out = forgetEntry(out, null, d.entry)?.history ?? out;
  return out;
}
