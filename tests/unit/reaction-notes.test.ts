/**
 * The pure parts of reactions: what counts as one emoji, how reaction notes fold in a prompt,
 * that each entry edit is the entry's whole edit state (applying every edit in order gives what
 * applying the latest gives, as PostgreSQL does), the live event an edit makes, and how the
 * cluster relay sends an oversized one.
 */
import { describe, expect, it } from 'vitest';
import { toWire } from '../../src/cluster/PgCluster.js';
import { applyEntryEdit, changesText } from '../../src/core/groups/entryEdit.js';
import { emptyGroup } from '../../src/core/groups/evolve.js';
import { eventsOf } from '../../src/core/groups/projection.js';
import type { EntryEdit } from '../../src/core/records.js';
import { buildUserTurn } from '../../src/core/session/prompt.js';
import { excerpt, foldReactionNotes, reactionNoteText } from '../../src/core/session/reactionNotes.js';
import { isOneEmoji } from '../../src/core/text/emoji.js';
import type { Reaction, TranscriptEntry } from '../../src/core/types.js';

let seq = 0;
const human = (text: string, authorName = 'Maya'): TranscriptEntry => ({ id: `g.${++seq}`, seq, kind: 'human', ts: seq, authorId: `web:${authorName}`, authorName, text });
const note = (of: TranscriptEntry, by: string, emoji: string): TranscriptEntry => ({
  id: `g.${++seq}`,
  seq,
  kind: 'system',
  ts: seq,
  authorId: 'system',
  authorName: 'Chorus',
  text: reactionNoteText(by, emoji, of.authorName, of.text),
  reactionOf: { id: of.id, emoji, by },
});

describe('one emoji', () => {
  it('is one pictograph grapheme, a flag or a keycap, in at most 32 bytes', () => {
    for (const ok of ['👍', '👍🏽', '👩‍💻', '🏳️‍🌈', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '🇫🇷', '1️⃣', '#⃣', '❤️', '❤', '👨‍👩‍👧‍👦', '🧑🏽‍🚀', '🫠']) expect(isOneEmoji(ok), ok).toBe(true);
    for (const bad of ['', ' ', 'a', 'ab', '👍👍', '🇫🇷🇩🇪', '🇫', '👍\u0301', ' 👍', '🏻', 'x\u20e3', '\u200d', '👍\u200d', '👩🏽‍❤️‍💋‍👨🏿', '<b>', '👍'.repeat(100)]) expect(isOneEmoji(bad), JSON.stringify(bad)).toBe(false);
  });
});

describe('reaction notes in a prompt', () => {
  it('quote the start of the message on one line', () => {
    expect(excerpt('short\n\ntext')).toBe('short text');
    const long = 'word '.repeat(40);
    expect(excerpt(long)).toBe(`${'word '.repeat(16).trim()}…`);
    expect(excerpt('😀'.repeat(100))).toBe(`${'😀'.repeat(80)}…`); // code points, never half a pair
  });

  it('fold when several in a row are about the same message, naming the first two and counting the rest', () => {
    const m = human('how did Q3 go?', 'Analyst');
    const other = human('and Q4?');
    const ask = { kind: 'voluntary' } as const;
    const turn = (obs: TranscriptEntry[]) => buildUserTurn(obs, ask);
    const phrase = `to Analyst's message: "how did Q3 go?"`;
    // One alone stays as it is.
    expect(turn([note(m, 'Maya', '👍')])).toContain(`>Maya reacted 👍 ${phrase}<`);
    expect(turn([note(m, 'Maya', '👍'), note(m, 'Sam', '👍')])).toContain(`>Maya and Sam reacted 👍 ${phrase}<`);
    expect(turn([note(m, 'Maya', '👍'), note(m, 'Sam', '🎉'), note(m, 'Maya', '🎉')])).toContain(`>Maya and Sam reacted 👍🎉 ${phrase}<`);
    expect(turn([note(m, 'Maya', '👍'), note(m, 'Sam', '👍'), note(m, 'Lee', '👍')])).toContain(`>Maya, Sam and Lee reacted 👍 ${phrase}<`);
    const five = turn(['Maya', 'Sam', 'Lee', 'Omar', 'Ana'].map((n, i) => note(m, n, i === 2 ? '🎉' : '👍')));
    expect(five).toContain(`>Maya, Sam and 3 others reacted 👍🎉 ${phrase}<`);
    expect(five.match(/reacted/g)).toHaveLength(1);
    // Another message in between, or notes about another message: separate lines.
    const split = turn([note(m, 'Maya', '👍'), other, note(m, 'Sam', '👍'), note(other, 'Lee', '👍')]);
    expect(split.match(/reacted/g)).toHaveLength(3);
    // A direct (one-on-one) turn folds the same.
    expect(buildUserTurn([note(m, 'Maya', '👍'), note(m, 'Sam', '👍')], { kind: 'direct' })).toBe(`Maya and Sam reacted 👍 ${phrase}`);
  });

  it('leave everything else as it is, the same entries each time', () => {
    const m = human('hello');
    const obs = [m, note(m, 'Maya', '👍'), human('bye')];
    expect(foldReactionNotes(obs)).toBe(obs);
    // A note whose text is not a reaction note's is never folded.
    const odd = { ...note(m, 'Sam', '👍'), text: 'something else' };
    expect(foldReactionNotes([note(m, 'Maya', '👍'), odd]).map((e) => e.text)).toEqual([reactionNoteText('Maya', '👍', 'Maya', 'hello'), 'something else']);
  });
});

describe('an entry edit is the whole edit state', () => {
  const r = (emoji: string, by: string, at: number): Reaction => ({ emoji, by, byKey: `k-${by}`, at });
  const history: EntryEdit[] = [
    { seq: 1, at: 10, reactions: [r('👍', 'Sam', 10)], notes: [5] },
    { seq: 1, at: 20, text: 'edited once', notes: [5, 6], reactions: [r('👍', 'Sam', 10)] },
    { seq: 1, at: 30, text: 'edited once', editedAt: 20, notes: [5, 6, 7], reactions: [r('👍', 'Sam', 10), r('🎉', 'Lee', 30)] },
    { seq: 1, at: 40, text: 'edited once', editedAt: 20, notes: [5, 6, 7], reactions: [] },
    { seq: 1, at: 50, text: 'edited twice', notes: [5, 6, 7, 8] },
    { seq: 1, at: 60, deleted: true, notes: [5, 6, 7, 8] },
  ];

  it('applying every edit in order gives what applying the latest gives, at each step', () => {
    for (let k = 1; k <= history.length; k++) {
      const all = human('as written');
      const latest = { ...all };
      for (const ed of history.slice(0, k)) applyEntryEdit(all, ed);
      applyEntryEdit(latest, history[k - 1]!);
      expect(all, `after edit ${k}`).toEqual(latest);
    }
    const e = human('as written');
    applyEntryEdit(e, history[0]!);
    expect(e).toMatchObject({ text: 'as written', reactions: [r('👍', 'Sam', 10)], editNotes: [5] });
    expect(e.editedAt).toBeUndefined();
    applyEntryEdit(e, history[2]!);
    expect(e).toMatchObject({ text: 'edited once', editedAt: 20 });
  });

  it('only an edit of the text (or a deletion) is one for search indexes', () => {
    expect(history.map(changesText)).toEqual([false, true, false, false, true, true]);
  });

  it('makes one live event each: the whole reaction list, the text only when it is not as first written', () => {
    const g = emptyGroup('g');
    const events = eventsOf(g, { v: 2, n: 1, ts: 0, edits: history });
    expect(events).toEqual([
      { type: 'edited', groupId: 'g', id: 'g.1', seq: 1, reactions: [r('👍', 'Sam', 10)] },
      { type: 'edited', groupId: 'g', id: 'g.1', seq: 1, text: 'edited once', editedAt: 20, reactions: [r('👍', 'Sam', 10)] },
      { type: 'edited', groupId: 'g', id: 'g.1', seq: 1, text: 'edited once', editedAt: 20, reactions: [r('👍', 'Sam', 10), r('🎉', 'Lee', 30)] },
      { type: 'edited', groupId: 'g', id: 'g.1', seq: 1, text: 'edited once', editedAt: 20, reactions: [] },
      { type: 'edited', groupId: 'g', id: 'g.1', seq: 1, text: 'edited twice', editedAt: 50, reactions: [] },
      { type: 'edited', groupId: 'g', id: 'g.1', seq: 1, text: '', deleted: true, deletedAt: 60, reactions: [] },
    ]);
  });

  it('an edit too large for one cluster notification travels without text and reactions, to be read back', () => {
    const many = Array.from({ length: 200 }, (_, i) => r('👍', `person ${i}`, i));
    const small = { type: 'edited' as const, groupId: 'g', id: 'g.1', seq: 1, reactions: many.slice(0, 2) };
    expect(toWire(small)).toEqual([small]);
    expect(toWire({ ...small, text: 'x', editedAt: 5, reactions: many })).toEqual([{ type: 'edited', groupId: 'g', id: 'g.1', seq: 1, editedAt: 5, reread: true }]);
  });
});
