/**
 * Every agent's history keeps the user turns it was sent, and V8 stores a string that holds even
 * one character past Latin-1 at two bytes per character, all of it. Chorus's own words in a turn
 * (the headings, every ask) therefore stay within Latin-1: an ellipsis or an emoji in the ask made
 * every group's histories take twice the memory (the bench's RSS per 1,000 groups went from about
 * 160 to 222 MB). What people and agents wrote is theirs and may be anything.
 */
import { describe, expect, it } from 'vitest';
import { buildUserTurn, type Ask } from '../../src/core/session/prompt.js';

const ASKS: Ask[] = [
  { kind: 'addressed', by: 'Maya' },
  { kind: 'addressed', by: 'Maya', how: 'sticky' },
  { kind: 'addressed', by: null, how: 'rotation' },
  { kind: 'addressed', by: 'Maya', how: 'selected' },
  { kind: 'voluntary' },
  { kind: 'voluntary', react: { by: 'Maya' } },
  { kind: 'voluntary', react: { by: null } },
  { kind: 'reaction', by: 'Analyst' },
  { kind: 'forced', lastHuman: { name: 'Maya', text: null } },
  { kind: 'forced', lastHuman: null },
  { kind: 'direct' },
];

describe("Chorus's own words in a user turn", () => {
  it('stay within Latin-1 for every ask, with and without observations left out', () => {
    for (const ask of ASKS) {
      for (const omitted of [0, 3]) {
        const turn = buildUserTurn([], ask, omitted);
        expect(turn, JSON.stringify(ask)).toMatch(/^[\u0000-\u00ff]*$/);
      }
    }
  });
});
