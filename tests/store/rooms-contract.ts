/**
 * What every Store must keep of rooms across chats, run against each implementation beside the
 * Store contract (file-store.test.ts, postgres-store.test.ts): each copy of an entry in another
 * chat of the room has its own delivery outcome, read back with the entry and never mistaken for
 * the home chat's post, whatever order and batches the outcomes come in; and the records and
 * checkpoints of linked chats, link codes and carried edits read back as they were written.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports.js';
import type { GroupHead, GroupRecord } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { applyDelivery, applyEdit, checkpointOf, emptyGroup, owesPost, rebuild } from '../../src/core/groups/evolve.js';
import { HEAD, all, entry, rec, type StoreFactory } from './store-contract.js';

const TG = 'telegram:-100';
const DC = 'discord:1122';

const ROOM: GroupHead = {
  ...HEAD,
  links: [
    { channel: 'telegram', chatId: '-100', title: 'Team chat', at: 1 },
    { channel: 'discord', chatId: '1122', title: '#general', at: 2 },
  ],
};

/** An agent's reply owed to the home chat and to both linked chats. */
function reply(seq: number): TranscriptEntry {
  return { ...entry(seq, `reply ${seq}`), kind: 'agent', authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', delivery: 'pending', copies: { [TG]: { delivery: 'pending' }, [DC]: { delivery: 'pending' } } };
}

/** A person's message from the Telegram chat, relayed to Discord (the web home needs no post). */
function relayed(seq: number): TranscriptEntry {
  return {
    ...entry(seq, `from telegram ${seq}`),
    authorId: 'telegram:77',
    origin: { channel: 'telegram', chatId: '-100' },
    copies: { [DC]: { delivery: 'pending' } },
    authorKind: 'bot',
    authorAvatarUrl: 'https://cdn.example/77.png',
  };
}

/**
 * The entries as `evolve` leaves them after `records`, every one of them (the core keeps only a
 * tail in memory; the same functions applied to all entries give what the store must serve).
 */
function expectedEntries(records: GroupRecord[]): TranscriptEntry[] {
  const g = emptyGroup('g');
  for (const r of structuredClone(records)) {
    for (const e of r.entries ?? []) {
      g.transcript.push(e);
      if (owesPost(e)) g.undelivered.push(e);
    }
    for (const d of r.delivery ?? []) applyDelivery(g, d);
    for (const ed of r.edits ?? []) applyEdit(g, ed);
  }
  return g.transcript;
}

async function everyEntry(s: Store): Promise<TranscriptEntry[]> {
  return s.readEntries('g', { afterSeq: 0, limit: 1000 });
}

export function roomsContract(name: string, factory: StoreFactory): void {
  describe(`${name}: rooms across chats`, () => {
    it("reads each copy's latest outcome back (several chats, in one record, one batch or records apart, across segments, after a restart), never touching the home delivery", async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      const written: GroupRecord[] = [];
      let n = 0;
      const add = (r: Omit<GroupRecord, 'v' | 'n' | 'ts'>) => {
        const full = { ...rec(++n), ...r };
        written.push(full);
        return store.append('g', full);
      };
      const filler = async (from: number, to: number) => {
        for (let seq = from; seq <= to; seq++) await add({ entries: [seq % 10 === 3 ? reply(seq) : seq % 10 === 7 ? relayed(seq) : entry(seq)] });
      };
      await add({ changes: [{ t: 'head', head: ROOM }] });
      await filler(1, 120);
      // Entry 3: its home post and its two copies, each reported on its own, long after it (later segments).
      await add({ delivery: [{ seq: 3, delivery: 'posted', postedIds: ['h3'] }] });
      // Which bot posted a copy (`via`) is kept with it: Telegram lets only that bot edit it later.
      await add({ delivery: [{ seq: 3, chat: TG, delivery: 'posted', postedIds: ['t3a', 't3b'], via: '5001' }, { seq: 3, chat: DC, delivery: 'failed' }] });
      await add({ delivery: [{ seq: 3, chat: DC, delivery: 'posted', postedIds: ['d3'] }] });
      // Entry 13: a copy before the home post, which comes many segments later; 17 (relayed): its one copy.
      await add({ delivery: [{ seq: 13, chat: DC, delivery: 'posted', postedIds: ['d13'] }, { seq: 17, chat: DC, delivery: 'posted', postedIds: ['d17'] }] });
      // Entry 23: one copy posted, home and the other copy still owed. Entry 33: a copy posted, then a later outcome without ids keeps them (and who posted them).
      await add({ delivery: [{ seq: 23, chat: TG, delivery: 'posted', postedIds: ['t23'] }, { seq: 33, chat: TG, delivery: 'posted', postedIds: ['t33'], via: '5002' }] });
      await add({ delivery: [{ seq: 33, chat: TG, delivery: 'failed' }] });
      await filler(121, 150);
      await add({ delivery: [{ seq: 13, delivery: 'posted', postedIds: ['h13'] }] });
      // Entry 8 (a person's message): its home delivery only, never a copy.
      await add({ delivery: [{ seq: 8, delivery: 'posted', postedIds: ['h8'] }] });
      // One batch: a new reply with its home post and both copies; an old one likewise, each in its
      // own record and two in one; an old relayed message's copy and an edit of it.
      await Promise.all([
        add({ entries: [reply(151)] }),
        add({ delivery: [{ seq: 151, chat: TG, delivery: 'posted', postedIds: ['t151'], via: '5003' }, { seq: 151, chat: DC, delivery: 'posted', postedIds: ['d151'] }] }),
        add({ delivery: [{ seq: 151, delivery: 'posted', postedIds: ['h151'] }] }),
        add({ delivery: [{ seq: 151, chat: TG, delivery: 'failed' }] }),
        add({ delivery: [{ seq: 43, chat: TG, delivery: 'posted', postedIds: ['t43'], via: '5004' }] }),
        add({ delivery: [{ seq: 43, delivery: 'posted', postedIds: ['h43'] }, { seq: 43, chat: DC, delivery: 'posted', postedIds: ['d43'] }] }),
        add({ delivery: [{ seq: 47, chat: DC, delivery: 'posted', postedIds: ['d47'] }], edits: [{ seq: 47, text: 'fixed 47', at: 9000 }] }),
        add({ delivery: [{ seq: 53, delivery: 'posted', postedIds: ['h53'] }], edits: [{ seq: 53, text: 'fixed 53', at: 9001 }] }),
        add({ delivery: [{ seq: 53, chat: TG, delivery: 'posted', postedIds: ['t53'] }] }),
        // A copy posted again by another bot (after the first one's message was refused): the newer one counts.
        add({ delivery: [{ seq: 63, chat: TG, delivery: 'posted', postedIds: ['t63'], via: '5005' }] }),
        add({ delivery: [{ seq: 63, chat: TG, delivery: 'posted', postedIds: ['t63b'], via: '5006' }] }),
      ]);
      const expected = expectedEntries(written);
      const check = async (s: Store) => {
        const got = await everyEntry(s);
        const at = (seq: number) => got.find((e) => e.seq === seq)!;
        expect(at(3)).toMatchObject({ delivery: 'posted', postedIds: ['h3'], copies: { [TG]: { delivery: 'posted', ids: ['t3a', 't3b'], via: '5001' }, [DC]: { delivery: 'posted', ids: ['d3'] } } });
        expect(at(3).copies![DC]!.via).toBeUndefined();
        expect(at(13)).toMatchObject({ delivery: 'posted', postedIds: ['h13'], copies: { [DC]: { delivery: 'posted', ids: ['d13'] }, [TG]: { delivery: 'pending' } } });
        expect(at(17)).toMatchObject({ copies: { [DC]: { delivery: 'posted', ids: ['d17'] } }, origin: { channel: 'telegram', chatId: '-100' }, authorKind: 'bot' });
        expect(at(17).delivery).toBeUndefined();
        expect(at(23)).toMatchObject({ delivery: 'pending', copies: { [TG]: { delivery: 'posted', ids: ['t23'] }, [DC]: { delivery: 'pending' } } });
        expect(at(23).postedIds).toBeUndefined();
        expect(at(33).copies![TG]).toEqual({ delivery: 'failed', ids: ['t33'], via: '5002' });
        expect(at(63).copies![TG]).toEqual({ delivery: 'posted', ids: ['t63b'], via: '5006' });
        expect(at(8)).toMatchObject({ delivery: 'posted', postedIds: ['h8'] });
        expect(at(8).copies).toBeUndefined();
        expect(at(151)).toMatchObject({ delivery: 'posted', postedIds: ['h151'], copies: { [TG]: { delivery: 'failed', ids: ['t151'], via: '5003' }, [DC]: { delivery: 'posted', ids: ['d151'] } } });
        expect(at(43)).toMatchObject({ delivery: 'posted', postedIds: ['h43'], copies: { [TG]: { delivery: 'posted', ids: ['t43'], via: '5004' }, [DC]: { delivery: 'posted', ids: ['d43'] } } });
        expect(at(47)).toMatchObject({ text: 'fixed 47', copies: { [DC]: { delivery: 'posted', ids: ['d47'] } } });
        expect(at(53)).toMatchObject({ text: 'fixed 53', delivery: 'posted', postedIds: ['h53'], copies: { [TG]: { delivery: 'posted', ids: ['t53'] } } });
        // Every entry as evolve leaves it, read from either end, a page at a time.
        expect(got).toEqual(expected);
        const back: TranscriptEntry[] = [];
        for (let before: number | undefined; ; ) {
          const page = await s.readEntries('g', { beforeSeq: before, limit: 7 });
          if (page.length === 0) break;
          back.unshift(...page);
          before = page[0]!.seq;
        }
        expect(back).toEqual(expected);
        expect(await s.readEntries('g', { afterSeq: 12, limit: 1 })).toEqual([expected[12]]);
      };
      await check(store);
      await store.close();
      const again = make();
      await again.open();
      await check(again);
      await again.close();
    });

    it('reads records of linked chats, link codes, carried edits and rekeys back equal, and a checkpoint with copies still owed', async () => {
      const make = await factory.fresh();
      const store = make();
      await store.open();
      const head: GroupHead = { ...ROOM, links: [ROOM.links![1]!], state: { ...ROOM.state, linkCodes: [{ code: 'OLD111', until: 500, from: 'web:g' }] } };
      const records: GroupRecord[] = [
        rec(1, { head }),
        rec(2, { changes: [{ t: 'link-code', code: { code: 'ABC123', until: 10_000, from: 'web:g' }, at: 1000 }] }),
        rec(3, { changes: [{ t: 'link', chat: { channel: 'telegram', chatId: '-100', title: 'Team chat', at: 1100 }, code: 'ABC123' }] }),
        rec(4, { entries: [relayed(1), reply(2)] }),
        rec(5, {
          delivery: [{ seq: 1, chat: DC, delivery: 'posted', postedIds: ['d1'] }, { seq: 2, delivery: 'posted', postedIds: ['h2'] }, { seq: 2, chat: TG, delivery: 'posted', postedIds: ['t2'], via: '5001' }],
          edits: [{ seq: 1, text: 'fixed', at: 1300 }],
          changes: [{ t: 'carry', items: [{ seq: 1, chat: DC, ids: ['d1'], by: { relayed: { name: 'Maya', platform: 'telegram', kind: 'person' } }, at: 1300, text: 'fixed' }, { seq: 2, chat: TG, ids: ['t2'], by: { agentId: 'analyst' }, via: '5001', at: 1301, deleted: true }] }],
        }),
        rec(6, { changes: [{ t: 'carried', seq: 1, chat: DC, at: 1300 }, { t: 'rekey', chatId: '-200', from: { channel: 'telegram', chatId: '-100' } }] }),
        rec(7, { changes: [{ t: 'unlink', channel: 'discord', chatId: '1122' }, { t: 'rekey', chatId: 'g2' }] }),
      ];
      for (const r of records.slice(0, 5)) await store.append('g', r);
      // After record 5 entry 2's Discord copy is still owed: the checkpoint holds it with its copies.
      // Rebuilt from copies: evolve keeps the entries it is given (and an unlink changes them).
      const at5 = checkpointOf((await rebuild('g', null, structuredClone(records.slice(0, 5)))).g, 5);
      expect(at5.undelivered.map((e) => [e.seq, e.copies])).toEqual([[2, { [TG]: { delivery: 'posted', ids: ['t2'], via: '5001' }, [DC]: { delivery: 'pending' } }]]);
      const checkpoint = structuredClone(at5);
      await store.checkpoint('g', at5);
      for (const r of records.slice(5)) await store.append('g', r);
      const whole = (await rebuild('g', null, structuredClone(records))).g;
      await store.close();

      const again = make();
      const { groups } = await again.open();
      const g = groups.find((x) => x.id === 'g')!;
      expect(JSON.parse(JSON.stringify(g.checkpoint))).toEqual(JSON.parse(JSON.stringify(checkpoint)));
      expect(await all(g)).toEqual(records.slice(5));
      // The checkpoint and the records after it give the group the whole log gives.
      const rebuiltFromStore = await rebuild('g', g.checkpoint, await all(await again.reopen('g')));
      expect(checkpointOf(rebuiltFromStore.g, rebuiltFromStore.n)).toEqual(checkpointOf(whole, 7));
      expect(rebuiltFromStore.g.links).toEqual([{ channel: 'telegram', chatId: '-200', title: 'Team chat', at: 1100 }]);
      expect(rebuiltFromStore.g.chatId).toBe('g2');
      expect(rebuiltFromStore.g.state.linkCodes).toBeUndefined();
      expect(rebuiltFromStore.g.state.carry).toEqual([records[4]!.changes![0]!.t === 'carry' ? records[4]!.changes![0]!.items[1] : null]);
      const entries = await again.readEntries('g', { afterSeq: 0, limit: 10 });
      expect(entries).toEqual(expectedEntries(records));
      expect(entries[0]).toMatchObject({ text: 'fixed', origin: { channel: 'telegram', chatId: '-100' }, authorKind: 'bot', authorAvatarUrl: 'https://cdn.example/77.png', copies: { [DC]: { delivery: 'posted', ids: ['d1'] } } });
      await again.close();
    });
  });
}
