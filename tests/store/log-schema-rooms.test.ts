/**
 * The log schema and rooms across chats: records and checkpoints with linked chats, copies and
 * edits to carry read back whole (fields a later Chorus adds survive), and a copy or link of the
 * wrong shape is named as damaged instead of reaching the core.
 */
import { describe, expect, it } from 'vitest';
import type { GroupCheckpoint, GroupRecord } from '../../src/core/records.js';
import { parseCheckpoint, parseRecord } from '../../src/store/logSchema.js';
import { HEAD, entry } from './store-contract.js';

const copied = { ...entry(1), origin: { channel: 'telegram', chatId: '-100' }, copies: { 'discord:1122': { delivery: 'posted', ids: ['d1'], synced: 5, later: 'kept' } }, authorKind: 'bot' };

describe('log schema: rooms across chats', () => {
  it('reads records and checkpoints of rooms back whole, later fields included', () => {
    const record = {
      v: 2,
      n: 3,
      ts: 3,
      entries: [copied],
      delivery: [{ seq: 1, chat: 'discord:1122', delivery: 'posted', postedIds: ['d1'] }],
      changes: [
        { t: 'link', chat: { channel: 'discord', chatId: '1122', title: '#general', at: 1, later: 1 }, code: 'ABC' },
        { t: 'carry', items: [{ seq: 1, chat: 'discord:1122', ids: ['d1'], by: { system: true }, at: 4, deleted: true, later: 2 }] },
        { t: 'rekey', chatId: '-200', from: { channel: 'telegram', chatId: '-100' } },
      ],
    };
    expect(parseRecord(structuredClone(record), 'r')).toEqual({ record });
    const checkpoint = {
      version: 2,
      n: 3,
      head: { ...HEAD, links: [{ channel: 'telegram', chatId: '-100', at: 1 }], state: { ...HEAD.state, carry: record.changes[1]!.items, linkCodes: [{ code: 'X', until: 9, from: 'web:g' }] } },
      nextSeq: 2,
      rounds: [],
      sessions: [],
      seen: [],
      undelivered: [copied],
    } as unknown as GroupCheckpoint;
    expect(parseCheckpoint(structuredClone(checkpoint), 'c')).toEqual({ checkpoint });
  });

  it('names a copy, an origin, a link or an edit to carry of the wrong shape', () => {
    const bad = (r: Partial<GroupRecord> | Record<string, unknown>) => parseRecord({ v: 2, n: 1, ts: 1, ...r }, 'r');
    expect(bad({ entries: [{ ...entry(1), copies: { 'discord:1': null } }] })).toEqual({ problem: expect.stringContaining('entries.0.copies.discord:1') });
    expect(bad({ entries: [{ ...entry(1), copies: { 'discord:1': { delivery: 'sent' } } }] })).toEqual({ problem: expect.stringContaining('delivery') });
    expect(bad({ entries: [{ ...entry(1), origin: { channel: 'irc', chatId: '1' } }] })).toEqual({ problem: expect.stringContaining('entries.0.origin.channel') });
    expect(bad({ changes: [{ t: 'head', head: { ...HEAD, links: [{ channel: 'discord' }] } }] })).toEqual({ problem: expect.stringContaining('links.0') });
    expect(bad({ changes: [{ t: 'head', head: { ...HEAD, state: { ...HEAD.state, carry: [{ seq: 1 }] } } }] })).toEqual({ problem: expect.stringContaining('state.carry.0') });
    expect(bad({ delivery: [{ seq: 1, chat: 5, delivery: 'posted' }] })).toEqual({ problem: expect.stringContaining('delivery.0.chat') });
  });
});
