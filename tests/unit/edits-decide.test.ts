/**
 * The edits-and-reactions decider, given a group and an entry, when a command, then the parts of
 * the group's next record — pure: the group given is never changed, and applying the decision
 * with `evolve` gives the group the entry's new state.
 */
import { describe, expect, it } from 'vitest';
import { decideDeletion, decideEdit, decideReaction, MAX_EMOJI_PER_ENTRY } from '../../src/core/edits/decide.js';
import { emptyGroup, evolve } from '../../src/core/groups/evolve.js';
import type { GroupDoc } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';

function given(): { g: GroupDoc; entry: TranscriptEntry } {
  const g = emptyGroup('g1');
  const entry: TranscriptEntry = { id: 'g1.1', seq: 1, kind: 'human', ts: 1, authorId: 'web:maya', authorName: 'Maya', text: 'typo heer' };
  evolve(g, { v: 1, n: 1, ts: 1, entries: [entry] } as never);
  return { g, entry: { ...entry } };
}
const snapshot = (g: GroupDoc) => JSON.stringify({ t: g.transcript, n: g.nextSeq, c: [...g.sessions.values()] });

describe('edits decider', () => {
  it('edit: a note for the agents as the next entry, the whole edit state, nothing changed in place', () => {
    const { g, entry } = given();
    const before = snapshot(g);
    const d = decideEdit(g, entry, { text: 'typo here', at: 5 });
    expect(snapshot(g)).toBe(before);
    expect(d.entries).toEqual([expect.objectContaining({ seq: 2, id: 'g1.2', kind: 'system', editOf: 'g1.1', text: 'Maya edited their message: typo here', ts: 5 })]);
    expect(d.edits).toEqual([{ seq: 1, text: 'typo here', at: 5, notes: [2] }]);
    expect(d.result).toMatchObject({ text: 'typo here', editedAt: 5, editNotes: [2] });
    evolve(g, { v: 1, n: 2, ts: 5, entries: d.entries, edits: d.edits, changes: d.changes } as never);
    expect(g.transcript.find((e) => e.seq === 1)).toMatchObject({ text: 'typo here', editedAt: 5 });
    expect(g.nextSeq).toBe(3);
  });

  it('edit to the same text: nothing to record', () => {
    const { g, entry } = given();
    const d = decideEdit(g, entry, { text: 'typo heer', at: 5 });
    expect([d.entries, d.edits, d.changes]).toEqual([[], [], []]);
  });

  it('deletion: the entry and its notes deleted, no new entry', () => {
    const { g, entry } = given();
    const d = decideDeletion(g, { ...entry, editNotes: [2, 3] }, { at: 9 });
    expect(d.entries).toEqual([]);
    expect(d.edits).toEqual([{ seq: 1, deleted: true, at: 9, notes: [2, 3] }, { seq: 2, deleted: true, at: 9 }, { seq: 3, deleted: true, at: 9 }]);
    expect(d.result).toMatchObject({ text: '', deleted: true, deletedAt: 9 });
  });

  it('reaction: added with a note, again changes nothing, taken back without a note', () => {
    const { g, entry } = given();
    const by = { key: 'client-1', name: 'Tom' };
    const on = decideReaction(g, entry, { emoji: '👍', on: true, by, at: 7 });
    expect(on.entries).toEqual([expect.objectContaining({ seq: 2, reactionOf: { id: 'g1.1', emoji: '👍', by: 'Tom' } })]);
    expect(on.edits).toEqual([{ seq: 1, at: 7, notes: [2], reactions: [{ emoji: '👍', by: 'Tom', byKey: 'client-1', at: 7 }] }]);
    const after = on.result.entry;
    expect(decideReaction(g, after, { emoji: '👍', on: true, by, at: 8 }).result.changed).toBe(false);
    const off = decideReaction(g, after, { emoji: '👍', on: false, by, at: 9 });
    expect(off.entries).toEqual([]);
    expect(off.edits).toEqual([{ seq: 1, at: 9, notes: [2], reactions: [] }]);
  });

  it('reaction refused: a deleted message, a note, one emoji past the limit', () => {
    const { g, entry } = given();
    const by = { key: 'k', name: 'Tom' };
    expect(() => decideReaction(g, { ...entry, deleted: true }, { emoji: '👍', on: true, by, at: 1 })).toThrow(expect.objectContaining({ code: 'not_reactable', status: 409 }));
    expect(() => decideReaction(g, { ...entry, editOf: 'g1.0' }, { emoji: '👍', on: true, by, at: 1 })).toThrow(expect.objectContaining({ code: 'not_reactable' }));
    const full = Array.from({ length: MAX_EMOJI_PER_ENTRY }, (_, i) => ({ emoji: String.fromCodePoint(0x1f600 + i), by: 'X', byKey: `x${i}`, at: 1 }));
    expect(() => decideReaction(g, { ...entry, reactions: full }, { emoji: '🦜', on: true, by, at: 1 })).toThrow(expect.objectContaining({ code: 'too_many_reactions' }));
    // One already there is still taken by another person.
    expect(decideReaction(g, { ...entry, reactions: full }, { emoji: full[0]!.emoji, on: true, by, at: 1 }).result.changed).toBe(true);
  });
});
