/**
 * The group log's promises at the core: one record per turn carrying the reply,
 * the agent's cursor and history and the round's progress; live events only for what is durable;
 * a refused write leaves no trace and the group recovers; dedupe for at least a day; paging back
 * to the first message after a restart, archived groups included.
 */
import { describe, expect, it } from 'vitest';
import type { GroupRecord } from '../../src/core/records.js';
import type { GatewayEvent } from '../../src/core/readModels.js';
import { makeRouter } from '../helpers/router-harness.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeClock } from '../helpers/fake-clock.js';

/** The session changes a record carries. */
const sessionsIn = (rec: GroupRecord) => (rec.changes ?? []).flatMap((c) => (c.t === 'session' ? [c] : []));
/** The round changes a record carries (a new round carries all of it). */
const roundsIn = (rec: GroupRecord) => (rec.changes ?? []).flatMap((c) => (c.t === 'round' ? [c] : []));

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('one turn, one record', () => {
  it('a reply travels in the same record as the agent turn, its cursor and the round progress', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: 'Revenue is up.' } } });
    await h.say('@analyst how is revenue?');
    const records = h.store.records('room');
    const withReply = records.filter((r) => r.entries?.some((e) => e.kind === 'agent'));
    expect(withReply).toHaveLength(1);
    const rec = withReply[0]!;
    const reply = rec.entries!.find((e) => e.kind === 'agent')!;
    expect(reply.text).toBe('Revenue is up.');
    const delta = sessionsIn(rec).find((s) => s.agentId === 'analyst')!;
    // The turn is appended (not the whole history rewritten) and the cursor covers the question.
    expect(delta.reset).toBeUndefined();
    expect(delta.append!.map((t) => t.role)).toEqual(['user', 'assistant']);
    expect(delta.append![1]!.content).toBe('Revenue is up.');
    const question = records.flatMap((r) => r.entries ?? []).find((e) => e.kind === 'human')!;
    expect(delta.cursor).toBeGreaterThanOrEqual(question.seq);
    expect(roundsIn(rec).map((r) => r.id)).toContain(reply.roundId);
    // The human message and its round were one record too.
    const humanRec = records.find((r) => r.entries?.some((e) => e.kind === 'human'))!;
    expect(roundsIn(humanRec)).toHaveLength(1);
    expect(roundsIn(humanRec)[0]!.set.triggerIds).toEqual([question.id]);
  });

  it('records stay small: appending a turn never rewrites the history', async () => {
    const h = await makeRouter({ llm: { fallback: (_q, n) => `answer number ${n} `.repeat(20) } });
    for (let i = 0; i < 30; i++) await h.say(`@analyst question ${i}`);
    const sizes = h.store.logs.get('room')!.map((l) => l.length);
    // The 30th answered message writes about what the 3rd did, not 10× more.
    const perMessage = (from: number) => sizes.slice(from, from + 6).reduce((a, b) => a + b, 0);
    expect(perMessage(sizes.length - 6)).toBeLessThan(perMessage(6) * 1.5);
  });
});

describe('only durable entries are published', () => {
  it('every live event carries an entry that is already in the store, with its durable seq', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: 'Sure.' }, fallback: () => '[PASS]' } });
    const problems: string[] = [];
    h.router.gateway.subscribe((ev: GatewayEvent) => {
      if (ev.type !== 'message' && ev.type !== 'decision') return;
      const stored = h.store.entries('room').find((e) => e.seq === ev.entry.seq);
      if (!stored || stored.id !== ev.entry.id) problems.push(`${ev.type} ${ev.entry.id} published before it was durable`);
    });
    await h.say('@analyst one');
    await h.say('anyone around?');
    expect(h.store.entries('room').some((e) => e.kind === 'decision')).toBe(true);
    expect(problems).toEqual([]);
  });
});

describe('a refused write leaves no trace', () => {
  it('answers unavailable, records nothing, answers nothing, and the group recovers once the disk does', async () => {
    const store = new MemoryStore();
    const h = await makeRouter({ store, llm: { replies: { analyst: 'fine' } } });
    await h.say('@analyst before');
    const before = store.entries('room').length;
    const events: GatewayEvent[] = [];
    h.router.gateway.subscribe((ev) => events.push(ev));
    store.failWrites = 'ENOSPC: no space left on device';
    const refused = [];
    for (let i = 0; i < 5; i++) refused.push(await h.router.receive(h.message(`@analyst while full ${i}`)));
    expect(refused.map((r) => `${r.status}/${r.code}`)).toEqual(Array(5).fill('rejected/unavailable'));
    expect(h.router.gateway.readiness().ready).toBe(false);
    await h.router.idle();
    expect(events.filter((e) => e.type === 'message')).toEqual([]);
    // The disk comes back: the group is reloaded from what was durable and takes messages again.
    store.failWrites = null;
    await until(() => h.router.groups.usable(h.router.groups.get('room')!));
    const ok = await h.router.receive(h.message('@analyst after'));
    expect(ok.status).toBe('recorded');
    await h.router.idle();
    const texts = store.entries('room').map((e) => e.text);
    expect(texts.filter((t) => t.includes('while full'))).toEqual([]);
    expect(texts).toContain('@analyst after');
    expect(store.entries('room').length).toBe(before + 2);
    expect(h.llm.calls.map((c) => c.messages.at(-1)!.content).join('\n')).not.toContain('while full');
    expect(h.router.gateway.readiness().ready).toBe(true);
  });
});

describe('dedupe memory', () => {
  it('recognises a redelivery after thousands of other messages and a restart, within a day', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const h = await makeRouter({ store, clock, group: { reply_strategy: 'mention_only' } });
    const first = h.message('the very first');
    expect((await h.router.receive(first)).status).toBe('recorded');
    for (let i = 0; i < 2500; i++) {
      await clock.advance(10_000); // 2,500 messages over about 7 hours
      await h.router.receive(h.message(`filler ${i}`));
    }
    await h.router.stop();
    const again = await makeRouter({ store, clock, group: { reply_strategy: 'mention_only' } });
    expect((await again.router.receive(first)).status).toBe('duplicate');
    expect(store.entries('room').filter((e) => e.text === 'the very first')).toHaveLength(1);
  });
});

describe('full history', () => {
  it('pages back to the very first message after a restart, also once the group is dissolved', async () => {
    const store = new MemoryStore();
    const h = await makeRouter({ store, group: { reply_strategy: 'mention_only' } });
    for (let i = 0; i < 700; i++) await h.router.receive(h.message(`message ${i}`));
    await h.router.stop();
    const again = await makeRouter({ store, group: { reply_strategy: 'mention_only' } });
    const read = async () => {
      const seen: string[] = [];
      let before: number | undefined;
      for (;;) {
        const page = await again.router.gateway.messages('room', { before, limit: 100 });
        if (page.length === 0) break;
        seen.unshift(...page.filter((e) => e.kind === 'human').map((e) => e.text));
        before = page[0]!.seq;
      }
      return seen;
    };
    const expected = Array.from({ length: 700 }, (_, i) => `message ${i}`);
    expect(await read()).toEqual(expected);
    await again.router.gateway.dissolveGroup('room');
    expect(await read()).toEqual(expected);
  });

  it('every record is one JSON line that a replay turns back into the same state', async () => {
    const store = new MemoryStore();
    const h = await makeRouter({ store, llm: { replies: { analyst: 'noted @writer' } } });
    await h.say('@analyst note this');
    for (const line of store.logs.get('room')!) expect(() => JSON.parse(line) as GroupRecord).not.toThrow();
    const live = h.router.groups.get('room')!;
    const replayed = store.group('room');
    expect(replayed.nextSeq).toBe(live.nextSeq);
    expect(replayed.rounds).toEqual(live.rounds);
    expect(replayed.state).toEqual(live.state);
    expect(replayed.sessions.get('writer')).toEqual(h.router.groups.session(live, 'writer'));
  });
});
