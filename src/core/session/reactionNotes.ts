/**
 * How the agents hear of reactions. Each reaction leaves a note entry in the transcript
 * ("Maya reacted 👍 to Analyst's message: "…""), an observation like any other; but a message
 * that many people react to must not reach a model note by note, so when a prompt is built, notes
 * in a row about the same message are folded into one line ("Maya, Sam and 3 others reacted 👍🎉
 * to Analyst's message: …"). The fold is a function of the entries alone, so a prompt rebuilt from
 * the log ("What did Analyst see?") folds the same way.
 */
import type { TranscriptEntry } from '../types.js';

/** How much of the message a note quotes (code points). */
const EXCERPT_MAX = 80;
/** Names a folded line spells out before "and N others". */
const NAMES_SHOWN = 2;

/** The start of a message as a note quotes it: one line, at most EXCERPT_MAX code points. */
export function excerpt(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const points = Array.from(line);
  return points.length > EXCERPT_MAX ? `${points.slice(0, EXCERPT_MAX).join('').trimEnd()}…` : line;
}

/**
 * The part of a note that names the message: `to Analyst's message: "…"`. The author's name, not
 * "your message": a note is one entry that every agent observes, the author among them.
 */
export function reactedPhrase(authorName: string, text: string): string {
  return `to ${authorName}'s message: "${excerpt(text)}"`;
}

/** The note's text. */
export function reactionNoteText(by: string, emoji: string, authorName: string, text: string): string {
  return `${by} reacted ${emoji} ${reactedPhrase(authorName, text)}`;
}

/**
 * The observations with every run of two or more reaction notes about the same message, one
 * right after the other, as one note (the run's last entry, its text the folded line). A note
 * whose text is not the one `reactionNoteText` writes is left as it is.
 */
export function foldReactionNotes(observations: readonly TranscriptEntry[]): readonly TranscriptEntry[] {
  if (!observations.some((e, i) => e.reactionOf && observations[i + 1]?.reactionOf?.id === e.reactionOf.id)) return observations;
  const out: TranscriptEntry[] = [];
  for (let i = 0; i < observations.length; ) {
    const e = observations[i]!;
    const id = phraseOf(e) !== null ? e.reactionOf!.id : null;
    let end = i + 1;
    if (id !== null) while (end < observations.length && observations[end]!.reactionOf?.id === id && phraseOf(observations[end]!) !== null) end++;
    const last = observations[end - 1]!;
    out.push(end - i > 1 ? { ...last, text: foldedText(observations.slice(i, end), phraseOf(last)!) } : e);
    i = end;
  }
  return out;
}

/** What follows "<by> reacted <emoji> " in a note, or null when it is not such a note. */
function phraseOf(e: TranscriptEntry): string | null {
  const r = e.reactionOf;
  if (!r) return null;
  const prefix = `${r.by} reacted ${r.emoji} `;
  return e.text.startsWith(prefix) ? e.text.slice(prefix.length) : null;
}

function foldedText(run: readonly TranscriptEntry[], phrase: string): string {
  const names = [...new Set(run.map((e) => e.reactionOf!.by))];
  const emoji = [...new Set(run.map((e) => e.reactionOf!.emoji))].join('');
  return `${namesOf(names)} reacted ${emoji} ${phrase}`;
}

/** "Maya", "Maya and Sam", "Maya, Sam and Lee", "Maya, Sam and 3 others". */
function namesOf(names: readonly string[]): string {
  if (names.length === 1) return names[0]!;
  if (names.length <= NAMES_SHOWN + 1) return `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  return `${names.slice(0, NAMES_SHOWN).join(', ')} and ${names.length - NAMES_SHOWN} others`;
}
