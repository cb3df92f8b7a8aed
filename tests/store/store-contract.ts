/**
 * What every Store must do, run against each implementation (file-store.test.ts,
 * postgres-store.test.ts): the log replayed after a restart, pages of history back and forward
 * with their latest delivery state, appends of one tick from many groups, checkpoints that
 * shorten replay, records serialised when appended, text kept byte for byte.
 */
import { describe, expect, it } from 'vitest';
import type { Store, StoredGroup } from '../../src/core/ports.js';
import type { GroupCheckpoint, GroupHead, GroupRecord } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { createApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';

export interface StoreFactory {
  /** A fresh, empty place to store into; returns a function making stores on it (one per "start"). */
  fresh(): Promise<() => Store>;
}

export function entry(seq: number, text = `message ${seq}`): TranscriptEntry {
  return { id: `g.${seq}`, seq, kind: 'human', ts: 1000 + seq, authorId: 'web:maya', authorName: 'Maya', text, platformMessageId: `p${seq}` };
}

export const HEAD: GroupHead = {
  id: 'g',
  title: 'G',
  channel: 'web',
  chatId: 'g',
  participants: ['analyst'],
  // The store keeps the config as given; the core fills in defaults when it loads a group.
  config: {} as GroupHead['config'],
  createdAt: 0,
  state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} },
};

/** A record; `head` describes the group whole (the change a new group's first record carries). */
export function rec(n: number, extra: Partial<GroupRecord> & { head?: GroupHead } = {}): GroupRecord {
  const { head, ...rest } = extra;
  return { v: 2, n, ts: 1000 + n, ...rest, ...(head ? { changes: [{ t: 'head', head }, ...(rest.changes ?? [])] } : {}) };
}

/** The group description a record carries whole, if any. */
export function headIn(r: GroupRecord): GroupHead | undefined {
  const c = r.changes?.find((x) => x.t === 'head');
  return c?.t === 'head' ? c.head : undefined;
}

export async function all(g: StoredGroup): Promise<GroupRecord[]> {
  const out: GroupRecord[] = [];
  for await (const r of g.records()) out.push(r);
  return out;
}

export async function pageBack(store: Store, id: string, limit: number): Promise<number[]> {
  const seqs: number[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await store.readEntries(id, { beforeSeq: before, limit });
    if (page.length === 0) return seqs;
    seqs.unshift(...page.map((e) => e.seq));
    before = page[0]!.seq;
  }
}

export function cp(n: number, extra: Partial<GroupCheckpoint> = {}): GroupCheckpoint {
  return { version: 2, n, head: HEAD, nextSeq: n, rounds: [], sessions: [], seen: [], undelivered: [], ...extra };
}

export function storeContract(name: string, factory: StoreFactory): void {
  describe(`${name}: the Store contract`, () => {
    it('replays every record after a restart and pages back and forward to the first entry', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      for (let i = 1; i <= 600; i++) await store.append('g', rec(i + 1, { entries: [entry(i)] }));
      await store.close();

      const again = make();
      const { groups, unreadable } = await again.open();
      expect(unreadable).toEqual([]);
      expect(groups.map((g) => g.id)).toEqual(['g']);
      expect((await all(groups[0]!)).map((r) => r.n)).toEqual(Array.from({ length: 601 }, (_, i) => i + 1));
      const expected = Array.from({ length: 600 }, (_, i) => i + 1);
      expect(await pageBack(again, 'g', 37)).toEqual(expected);
      const forward: number[] = [];
      for (let after = 0; ; ) {
        const page = await again.readEntries('g', { afterSeq: after, limit: 45 });
        if (page.length === 0) break;
        forward.push(...page.map((e) => e.seq));
        after = page.at(-1)!.seq;
      }
      expect(forward).toEqual(expected);
      expect((await again.readEntries('g', { beforeSeq: 501, limit: 3 })).map((e) => e.text)).toEqual(['message 498', 'message 499', 'message 500']);
      expect(await again.readEntries('g', { limit: 0 })).toEqual([]);
      expect(await again.readEntries('nope', { limit: 10 })).toEqual([]);
      await again.close();
    });

    it('reads entries with their latest delivery outcome, also when it was recorded in the same tick', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      const reply: TranscriptEntry = { ...entry(1, 'hi'), kind: 'agent', agentId: 'analyst', delivery: 'pending' };
      await store.append('g', rec(1, { head: HEAD, entries: [reply] }));
      await store.append('g', rec(2, { delivery: [{ seq: 1, delivery: 'failed' }] }));
      await store.append('g', rec(3, { delivery: [{ seq: 1, delivery: 'posted', postedIds: ['42'] }] }));
      // Entry and outcome appended together: they end up in one batch.
      const late: TranscriptEntry = { ...entry(2, 'notice'), kind: 'system', delivery: 'pending' };
      await Promise.all([store.append('g', rec(4, { entries: [late] })), store.append('g', rec(5, { delivery: [{ seq: 2, delivery: 'posted', postedIds: ['43', '44'] }] }))]);
      // An earlier entry's outcome and an edit of it in one batch: both stand.
      const third: TranscriptEntry = { ...entry(3, 'typo'), kind: 'agent', agentId: 'analyst', delivery: 'pending' };
      await store.append('g', rec(6, { entries: [third] }));
      await Promise.all([store.append('g', rec(7, { delivery: [{ seq: 3, delivery: 'posted', postedIds: ['45'] }] })), store.append('g', rec(8, { edits: [{ seq: 3, text: 'fixed', at: 9000 }] }))]);
      const page = await store.readEntries('g', { limit: 10 });
      expect(page[0]).toMatchObject({ seq: 1, delivery: 'posted', postedIds: ['42'] });
      expect(page[1]).toMatchObject({ seq: 2, delivery: 'posted', postedIds: ['43', '44'] });
      expect(page[2]).toMatchObject({ seq: 3, delivery: 'posted', postedIds: ['45'], text: 'fixed' });
      await store.close();
      const again = make();
      await again.open();
      expect((await again.readEntries('g', { afterSeq: 0, limit: 10 })).map((e) => [e.delivery, e.postedIds, e.text])).toEqual([['posted', ['42'], 'hi'], ['posted', ['43', '44'], 'notice'], ['posted', ['45'], 'fixed']]);
      await again.close();
    });

    it('reads entries and searches with their latest edit or deletion applied, also across segments, in the same tick and after a restart', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      for (let i = 1; i <= 120; i++) await store.append('g', rec(i + 1, { entries: [entry(i, `message ${i} about apples`)] }));
      const search = (s: Store, terms: string[]) => s.searchEntries!({ groupIds: ['g'], terms, limit: 200 }).then((f) => f.map((x) => x.entry.seq));
      // The search index is built before the edits arrive (kept up to date from here on).
      expect((await search(store, ['apples'])).length).toBe(120);
      await store.append('g', rec(122, { edits: [{ seq: 2, text: 'first fix about pears', at: 5000, notes: [121] }] }));
      await store.append('g', rec(123, { edits: [{ seq: 2, text: 'second fix about bananas', at: 5001, notes: [121, 122] }] }));
      await store.append('g', rec(124, { edits: [{ seq: 5, deleted: true, at: 5002 }] }));
      // An entry and its edit appended together (one batch), and an old entry edited in that batch too.
      await Promise.all([
        store.append('g', rec(125, { entries: [entry(121, 'typo cherries')] })),
        store.append('g', rec(126, { edits: [{ seq: 121, text: 'fixed plums', at: 5003 }] })),
        store.append('g', rec(127, { edits: [{ seq: 119, deleted: true, at: 5004 }] })),
      ]);
      const check = async (s: Store) => {
        const all = await s.readEntries('g', { afterSeq: 0, limit: 500 });
        expect(all.find((e) => e.seq === 2)).toMatchObject({ text: 'second fix about bananas', editedAt: 5001, editNotes: [121, 122] });
        expect(all.find((e) => e.seq === 5)).toMatchObject({ text: '', deleted: true, deletedAt: 5002 });
        expect(all.find((e) => e.seq === 119)).toMatchObject({ text: '', deleted: true });
        expect(all.find((e) => e.seq === 121)).toMatchObject({ text: 'fixed plums', editedAt: 5003 });
        expect(all.find((e) => e.seq === 6)?.editedAt).toBeUndefined();
        // Pages read from either end see the same.
        expect((await s.readEntries('g', { beforeSeq: 3, limit: 1 }))[0]?.text).toBe('second fix about bananas');
        expect((await s.readEntries('g', { afterSeq: 4, limit: 1 }))[0]).toMatchObject({ seq: 5, text: '' });
        expect(await search(s, ['bananas'])).toEqual([2]);
        expect(await search(s, ['pears'])).toEqual([]);
        expect(await search(s, ['plums'])).toEqual([121]);
        expect(await search(s, ['cherries'])).toEqual([]);
        const apples = await search(s, ['apples']);
        expect(apples).not.toContain(2);
        expect(apples).not.toContain(5);
        expect(apples).not.toContain(119);
        expect(apples.length).toBe(117);
        expect(await search(s, ['message', '5'])).not.toContain(5);
      };
      await check(store);
      await store.close();
      const again = make();
      await again.open();
      await check(again);
      await again.close();
    });

    it('reads reactions back (added, removed, the message edited), on an old entry across segments, in the same tick and after a restart; search keeps the words', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      for (let i = 1; i <= 120; i++) await store.append('g', rec(i + 1, { entries: [entry(i, `message ${i} about apples`)] }));
      const search = (s: Store, terms: string[]) => s.searchEntries!({ groupIds: ['g'], terms, limit: 200 }).then((f) => f.map((x) => x.entry.seq));
      expect((await search(store, ['apples'])).length).toBe(120);
      const r = (emoji: string, by: string, at: number) => ({ emoji, by, byKey: `key-${by}`, at });
      // Entry 3 (old: many segments back): two reactions, one removed, then its text edited, then another reaction.
      await store.append('g', rec(122, { entries: [{ ...entry(121, 'Sam reacted'), kind: 'system', reactionOf: { id: 'g.3', emoji: '👍', by: 'Sam' } }], edits: [{ seq: 3, at: 6000, notes: [121], reactions: [r('👍', 'Sam', 6000)] }] }));
      await store.append('g', rec(123, { edits: [{ seq: 3, at: 6001, notes: [121], reactions: [r('👍', 'Sam', 6000), r('🎉', 'Lee', 6001)] }] }));
      await store.append('g', rec(124, { edits: [{ seq: 3, at: 6002, notes: [121], reactions: [r('🎉', 'Lee', 6001)] }] }));
      await store.append('g', rec(125, { edits: [{ seq: 3, at: 6003, text: 'now about grapes', notes: [121, 122], reactions: [r('🎉', 'Lee', 6001)] }] }));
      await store.append('g', rec(126, { edits: [{ seq: 3, at: 6004, text: 'now about grapes', editedAt: 6003, notes: [121, 122], reactions: [r('🎉', 'Lee', 6001), r('🍇', 'Omar', 6004)] }] }));
      // Entry 7: one reaction, then taken back (the list empty). Entry 9: a reaction, never edited.
      await store.append('g', rec(127, { edits: [{ seq: 7, at: 6005, reactions: [r('👀', 'Sam', 6005)] }] }));
      await store.append('g', rec(128, { edits: [{ seq: 7, at: 6006, reactions: [] }] }));
      await store.append('g', rec(129, { edits: [{ seq: 9, at: 6007, reactions: [r('🔥', 'Ana', 6007)] }] }));
      // In one batch: a new entry with its reaction, and a text edit and a reaction of an old one.
      await Promise.all([
        store.append('g', rec(130, { entries: [entry(122, 'fresh pears')] })),
        store.append('g', rec(131, { edits: [{ seq: 122, at: 6008, reactions: [r('🍐', 'Sam', 6008)] }] })),
        store.append('g', rec(132, { edits: [{ seq: 11, at: 6009, text: 'eleven is plums' }] })),
        store.append('g', rec(133, { edits: [{ seq: 11, at: 6010, text: 'eleven is plums', editedAt: 6009, reactions: [r('👍', 'Sam', 6010)] }] })),
      ]);
      const check = async (s: Store) => {
        const all = await s.readEntries('g', { afterSeq: 0, limit: 500 });
        const at = (seq: number) => all.find((e) => e.seq === seq)!;
        expect(at(3)).toMatchObject({ text: 'now about grapes', editedAt: 6003, editNotes: [121, 122], reactions: [r('🎉', 'Lee', 6001), r('🍇', 'Omar', 6004)] });
        expect(at(7).reactions).toBeUndefined();
        expect(at(7).editedAt).toBeUndefined();
        expect(at(9)).toMatchObject({ text: 'message 9 about apples', reactions: [r('🔥', 'Ana', 6007)] });
        expect(at(9).editedAt).toBeUndefined();
        expect(at(11)).toMatchObject({ text: 'eleven is plums', editedAt: 6009, reactions: [r('👍', 'Sam', 6010)] });
        expect(at(121)).toMatchObject({ kind: 'system', reactionOf: { id: 'g.3', emoji: '👍', by: 'Sam' } });
        expect(at(122)).toMatchObject({ text: 'fresh pears', reactions: [r('🍐', 'Sam', 6008)] });
        expect(at(122).editedAt).toBeUndefined();
        // A page read from the other end sees the same.
        expect((await s.readEntries('g', { beforeSeq: 4, limit: 1 }))[0]).toMatchObject({ seq: 3, reactions: [{ emoji: '🎉' }, { emoji: '🍇' }] });
        // A reaction leaves the words as they were; an edit's words replace the old ones.
        expect(await search(s, ['grapes'])).toEqual([3]);
        expect(await search(s, ['plums'])).toEqual([11]);
        expect(await search(s, ['pears'])).toEqual([122]);
        const apples = await search(s, ['apples']);
        expect(apples.length).toBe(118);
        expect(apples).toContain(9);
        expect(apples).toContain(7);
      };
      await check(store);
      await store.close();
      const again = make();
      await again.open();
      await check(again);
      await again.close();
    });

    it('appends of one tick from many groups all become durable, each group in order', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      const ids = Array.from({ length: 10 }, (_, i) => `g${i}`);
      await Promise.all(ids.map((id) => store.append(id, rec(1, { head: { ...HEAD, id } }))));
      await Promise.all(ids.flatMap((id) => Array.from({ length: 5 }, (_, k) => store.append(id, rec(k + 2, { entries: [entry(k + 1)] })))));
      expect(store.health()).toEqual({ writable: true, error: null });
      await store.close();
      const again = make();
      const { groups } = await again.open();
      expect(groups.map((g) => g.id).sort()).toEqual([...ids].sort());
      for (const g of groups) expect((await all(g)).map((r) => r.n)).toEqual([1, 2, 3, 4, 5, 6]);
      await again.close();
    });

    it('a checkpoint shortens replay to the records after it', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      await store.append('g', rec(2, { entries: [entry(1)] }));
      await store.checkpoint('g', cp(2, { seen: [['p1', 1]] }));
      await store.append('g', rec(3, { entries: [entry(2)] }));
      await store.close();
      const again = make();
      const { groups } = await again.open();
      expect(groups[0]!.checkpoint).toMatchObject({ n: 2, seen: [['p1', 1]] });
      expect((await all(groups[0]!)).map((r) => r.n)).toEqual([3]);
      // reopen reads the same again.
      const re = await again.reopen('g');
      expect(re.checkpoint?.n).toBe(2);
      expect((await all(re)).map((r) => r.n)).toEqual([3]);
      await again.close();
    });

    it('serialises a record when it is appended: later changes to the objects are not stored', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      const r = rec(1, { head: { ...HEAD, title: 'before' }, entries: [entry(1, 'original')] });
      const p = store.append('g', r);
      headIn(r)!.title = 'after';
      r.entries![0]!.text = 'changed';
      await p;
      const c = cp(1);
      const q = store.checkpoint('g', c);
      c.head = { ...HEAD, title: 'changed' };
      await q;
      await store.close();
      const again = make();
      const { groups } = await again.open();
      expect(groups[0]!.checkpoint?.head.title).toBe('G');
      expect((await all(await again.reopen('g')))).toEqual([]);
      expect((await again.readEntries('g', { limit: 5 }))[0]!.text).toBe('original');
      await again.close();
    });

    it('keeps any text byte for byte: quotes, backslashes, newlines, emoji, control characters', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      const texts = ['he said "hi" \\o/', 'line one\nline two\r\n\ttab', '🎉 über 日本語 \u{1F600}', 'nul \u0000 bell \u0007 {"json": [1,2]}', "it's {} [] , ; -- ' OR 1=1"];
      await store.append('g', rec(1, { head: { ...HEAD, title: texts[0]! } }));
      for (let i = 0; i < texts.length; i++) await store.append('g', rec(i + 2, { entries: [entry(i + 1, texts[i])] }));
      await store.close();
      const again = make();
      const { groups } = await again.open();
      const records = await all(groups[0]!);
      expect(headIn(records[0]!)!.title).toBe(texts[0]);
      expect(records.slice(1).map((r) => r.entries![0]!.text)).toEqual(texts);
      expect((await again.readEntries('g', { limit: 10 })).map((e) => e.text)).toEqual(texts);
      await again.close();
    });

    it('GET …/messages?limit=500 (the largest page) says hasMore while older messages exist, down to the first', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      // Appended in order within each tick (the store keeps one group's appends in order).
      for (let from = 1; from <= 1001; from += 100) {
        await Promise.all(Array.from({ length: Math.min(100, 1002 - from) }, (_, k) => store.append('g', rec(from + k + 1, { entries: [entry(from + k)] }))));
      }
      await store.close();
      const { config } = parseConfigText('agents:\n  - { id: analyst, name: Analyst, persona: p }\nllm: { provider: scripted }\nchannels: { web: { port: 0 } }\n', 'test');
      const app = await createApp({ config, store: make(), llm: new FakeLlm(), logger: silentLogger });
      await app.start();
      try {
        const page = async (query: string) => (await (await fetch(`${app.webUrl}/api/groups/g/messages?${query}`)).json()) as { messages: Array<{ seq: number }>; hasMore: boolean };
        const seqs: number[] = [];
        const answers: boolean[] = [];
        for (let before: number | undefined; ; ) {
          const p = await page(`limit=500${before === undefined ? '' : `&before=${before}`}`);
          seqs.unshift(...p.messages.map((m) => m.seq));
          answers.push(p.hasMore);
          if (!p.hasMore) break;
          before = p.messages[0]!.seq;
        }
        expect(answers).toEqual([true, true, false]);
        expect(seqs).toEqual(Array.from({ length: 1001 }, (_, i) => i + 1));
        // A page that ends exactly at the first message has nothing older.
        expect(await page('limit=500&before=501')).toMatchObject({ hasMore: false });
        expect((await page('limit=500&before=502')).hasMore).toBe(true);
        expect((await page('limit=1&before=2')).hasMore).toBe(false);
      } finally {
        await app.stop();
      }
    });

    it('is writable and healthy when nothing failed', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      await store.checkWritable();
      expect(store.health()).toEqual({ writable: true, error: null });
      await store.flush();
      await store.close();
      await expect(store.append('g', rec(1))).rejects.toThrow(/closed/);
    });
  });
}
