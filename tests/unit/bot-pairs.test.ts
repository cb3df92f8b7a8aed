/**
 * The budget of bots that are not agents (src/core/rooms/BotPairs.ts) on its own: a pace per pair
 * and minute, an exchange that stops for good once it needs more or goes on while no person
 * writes, a person's message letting it go on, and memory that stays bounded.
 */
import { describe, expect, it } from 'vitest';
import { BotPairs } from '../../src/core/rooms/BotPairs.js';

const HELPER = { authorId: 'telegram:88', authorName: 'Helper' };
const ANALYST = { id: 'analyst', name: 'Analyst' };
const T0 = Date.UTC(2026, 0, 1);

describe('BotPairs', () => {
  it('a slow exchange, well within the minute, still stops after withoutPerson events and stays stopped', () => {
    const pairs = new BotPairs({ perMinute: 3, withoutPerson: 5 });
    // One answer every 30 s: never more than two in a minute.
    const at = (i: number) => T0 + i * 30_000;
    const answered = [...Array(8).keys()].map((i) => pairs.answerRefused('g', HELPER, ANALYST, at(i)) === undefined);
    expect(answered).toEqual([true, true, true, true, true, false, false, false]);
    expect(pairs.answerRefused('g', HELPER, ANALYST, at(100))).toBe(
      'Analyst does not answer Helper until a person writes here: bots got 5 answers or copies while no person wrote',
    );
    // Its copies stop with it: every bot exchange of the group does.
    const copies = /^Helper's messages are not copied to the room's other chats until a person writes here/;
    expect(pairs.copyRefused('g', HELPER, at(100))).toMatch(copies);
    // Another group is not concerned.
    expect(pairs.answerRefused('other', HELPER, ANALYST, at(100))).toBeUndefined();
    pairs.personWrote('g', at(101));
    expect(pairs.answerRefused('g', HELPER, ANALYST, at(102))).toBeUndefined();
  });

  it('a pair needing more than its minute stops the group until a person writes, who does not refill it', () => {
    const pairs = new BotPairs({ perMinute: 2, withoutPerson: 100 });
    expect(pairs.copyRefused('g', HELPER, T0)).toBeUndefined();
    expect(pairs.copyRefused('g', HELPER, T0 + 1)).toBeUndefined();
    const minute = /a bot got 2 answers or copies from one partner in the last minute$/;
    expect(pairs.copyRefused('g', HELPER, T0 + 2)).toMatch(minute);
    // Minutes later: still stopped, for every pair of the group.
    expect(pairs.copyRefused('g', HELPER, T0 + 600_000)).toBeDefined();
    const echo = { authorId: 'discord:7', authorName: 'Echo' };
    expect(pairs.answerRefused('g', echo, ANALYST, T0 + 600_000)).toBeDefined();
    // A person writing at once does not refill the helper's minute.
    pairs.personWrote('g', T0 + 3);
    expect(pairs.copyRefused('g', HELPER, T0 + 4)).toBeDefined();
    pairs.personWrote('g', T0 + 120_000);
    expect(pairs.copyRefused('g', HELPER, T0 + 120_001)).toBeUndefined();
  });

  it('remembers a bounded number of pairs: past it a new one is refused, and a person writing frees them', () => {
    const pairs = new BotPairs({ perMinute: 10, withoutPerson: 1_000_000 });
    const bot = (i: number) => ({ authorId: `discord:${i}`, authorName: `Bot ${i}` });
    for (let i = 0; i < 10_000; i++) expect(pairs.copyRefused(`g${i % 100}`, bot(i), T0)).toBeUndefined();
    expect(pairs.copyRefused('g0', bot(10_000), T0)).toBeDefined();
    // Known pairs go on meanwhile.
    expect(pairs.copyRefused('g0', bot(0), T0 + 1)).toBeUndefined();
    for (let i = 0; i < 100; i++) pairs.personWrote(`g${i}`, T0 + 61_000);
    expect(pairs.copyRefused('g0', bot(10_000), T0 + 61_001)).toBeUndefined();
  });
});
