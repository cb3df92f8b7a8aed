/**
 * Logs written before records became change lists (record version 1: the head whole when it
 * changed, rounds whole, session deltas, dedupe keys) are read as the same changes, so a data
 * directory or database from before keeps its groups exactly.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { emptyGroup, evolve } from '../../src/core/groups/evolve.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { parseRecord } from '../../src/store/logSchema.js';
import { silentLogger } from '../helpers/logger.js';
import { HEAD, entry } from './store-contract.js';

const round = { id: 'r2', createdAt: 5, triggerIds: ['g.1'], addressed: ['analyst'], forced: false, planned: true, queue: [{ agentId: 'analyst', reason: 'addressed', depth: 0 }], asked: [], capped: 0, voluntary: 0 };
const usage = { calls: 1, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.01 };
const v1 = [
  { v: 1, n: 1, ts: 1000, head: HEAD, sessions: [{ agentId: 'analyst', reset: true, append: [], cursor: 0, summary: null, usage: { ...usage, calls: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 } }] },
  { v: 1, n: 2, ts: 2000, entries: [{ ...entry(1), kind: 'human', platformMessageId: 'm-1' }], rounds: [round], seen: ['cmd-7'] },
  {
    v: 1,
    n: 3,
    ts: 3000,
    entries: [{ ...entry(2), kind: 'agent', agentId: 'analyst', delivery: 'pending' }],
    head: { ...HEAD, title: 'Renamed', state: { ...HEAD.state, lastSpoke: { analyst: 3000 }, sticky: 'analyst' } },
    rounds: [{ ...round, queue: [] }],
    sessions: [{ agentId: 'analyst', append: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }], cursor: 1, summary: null, usage }],
  },
  { v: 1, n: 4, ts: 4000, delivery: [{ seq: 2, delivery: 'posted', postedIds: ['p-2'] }], roundsDone: ['r2'] },
];

function check(g: ReturnType<typeof emptyGroup>): void {
  expect(g.title).toBe('Renamed');
  expect(g.state.sticky).toBe('analyst');
  expect(g.state.lastSpoke).toEqual({ analyst: 3000 });
  expect(g.nextSeq).toBe(3);
  expect(g.rounds).toEqual([]);
  expect(g.undelivered).toEqual([]);
  expect([...g.seen.keys()]).toEqual(['m-1', 'cmd-7']);
  expect(g.sessions.get('analyst')).toMatchObject({ history: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }], cursor: 1, usage });
}

describe('records of the first format', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('are read as change lists that rebuild the same group', () => {
    const g = emptyGroup('g');
    for (const [i, json] of v1.entries()) {
      const parsed = parseRecord(json, `record ${i + 1}`);
      if (!('record' in parsed)) throw new Error(parsed.problem);
      expect(parsed.record.v).toBe(2);
      evolve(g, parsed.record);
    }
    check(g);
  });

  it('a file store opens an old log and the group comes back the same', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-v1-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'groups', 'g', 'log'), { recursive: true });
    writeFileSync(join(dir, 'chorus-data.json'), JSON.stringify({ format: 2 }));
    writeFileSync(join(dir, 'groups', 'g', 'log', '000000000001.jsonl'), v1.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const store = new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger });
    const { groups } = await store.open();
    const g = emptyGroup('g');
    for await (const rec of groups[0]!.records()) evolve(g, rec);
    check(g);
    expect((await store.readEntries('g', { limit: 10 })).map((e) => [e.seq, e.delivery])).toEqual([
      [1, undefined],
      [2, 'posted'],
    ]);
    await store.close();
  });
});
