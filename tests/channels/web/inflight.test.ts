/**
 * Replies in flight on the web channel: the server keeps the text of replies being written (and
 * who is typing) so a page that connects or reloads mid-reply gets it first, then the deltas it
 * lacks. The tracker alone (bounds, when a reply ends), then over SSE with a fake gateway.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InFlightReplies } from '../../../src/channels/web/inflight.js';
import { WebChannel } from '../../../src/channels/web/WebChannel.js';
import type { GatewayEvent } from '../../../src/core/readModels.js';
import type { TranscriptEntry } from '../../../src/core/types.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';
import { openSse, type SseConnection } from './sse-client.js';

const delta = (groupId: string, agentId: string, turnId: string, text: string): GatewayEvent => ({ type: 'delta', groupId, agentId, turnId, text });
const typing = (groupId: string, agentId: string, active: boolean): GatewayEvent => ({ type: 'typing', groupId, agentId, active });
const considering = (groupId: string, agentId: string, active: boolean): GatewayEvent => ({ type: 'considering', groupId, agentId, active });
const entry = (e: Partial<TranscriptEntry>): TranscriptEntry => ({ id: 'g.1', seq: 1, kind: 'agent', ts: 0, authorId: 'x', authorName: 'X', text: '', ...e });

describe('InFlightReplies', () => {
  it('keeps the text so far per turn and who is typing, per group', () => {
    const t = new InFlightReplies();
    t.observe(typing('lobby', 'writer', true));
    t.observe(delta('lobby', 'writer', 'r1:writer:0', 'Hello '));
    t.observe(delta('lobby', 'writer', 'r1:writer:0', 'there'));
    t.observe(delta('other', 'critic', 'r9:critic:0', 'elsewhere'));
    expect(t.snapshot('lobby')).toEqual({ typing: ['writer'], considering: [], streams: [{ turnId: 'r1:writer:0', agentId: 'writer', text: 'Hello there' }] });
    expect(t.snapshot('nowhere')).toEqual({ typing: [], considering: [], streams: [] });
    t.observe(typing('lobby', 'writer', false));
    // Typing ended, the reply is not recorded yet: still offered (the page keeps it a while).
    expect(t.snapshot('lobby').streams).toHaveLength(1);
    expect(t.snapshot('lobby').typing).toEqual([]);
  });

  it('keeps who is considering a turn nobody asked for, apart from who types, until each is done', () => {
    const t = new InFlightReplies();
    t.observe(considering('lobby', 'writer', true));
    t.observe(considering('lobby', 'critic', true));
    t.observe(considering('other', 'analyst', true));
    expect(t.snapshot('lobby')).toMatchObject({ typing: [], considering: ['writer', 'critic'] });
    // The writer starts to answer; the critic passes.
    t.observe(considering('lobby', 'writer', false));
    t.observe(typing('lobby', 'writer', true));
    t.observe(considering('lobby', 'critic', false));
    expect(t.snapshot('lobby')).toMatchObject({ typing: ['writer'], considering: [] });
    expect(t.snapshot('other').considering).toEqual(['analyst']);
  });

  it('says who is typing in every group, for the sidebar of a page that connects', () => {
    const t = new InFlightReplies();
    expect(t.typingEverywhere()).toEqual({});
    t.observe(typing('lobby', 'writer', true));
    t.observe(typing('lobby', 'critic', true));
    t.observe(typing('other', 'analyst', true));
    expect(t.typingEverywhere()).toEqual({ lobby: ['writer', 'critic'], other: ['analyst'] });
    t.observe(typing('other', 'analyst', false));
    t.observe(typing('lobby', 'writer', false));
    expect(t.typingEverywhere()).toEqual({ lobby: ['critic'] });
  });

  it('forgets a reply once it is recorded, decided, stopped, or its group dissolved', () => {
    const t = new InFlightReplies();
    t.observe(delta('g', 'writer', 'a', 'one'));
    t.observe(delta('g', 'critic', 'b', 'two'));
    t.observe(delta('g', 'analyst', 'c', 'three'));
    t.observe({ type: 'message', groupId: 'g', entry: entry({ kind: 'agent', agentId: 'writer' }) });
    t.observe({ type: 'decision', groupId: 'g', entry: entry({ kind: 'decision', decision: { type: 'pass', agentId: 'critic' } }) });
    expect(t.snapshot('g').streams.map((s) => s.turnId)).toEqual(['c']);
    t.observe({ type: 'message', groupId: 'g', entry: entry({ kind: 'system', decision: { type: 'stopped' } }) });
    expect(t.snapshot('g').streams).toEqual([]);
    t.observe(delta('g', 'writer', 'd', 'four'));
    t.observe(typing('g', 'writer', true));
    t.observe(considering('g', 'critic', true));
    t.observe({ type: 'group', groupId: 'g', action: 'dissolved' });
    expect(t.snapshot('g')).toEqual({ typing: [], considering: [], streams: [] });
    expect(t.size).toBe(0);
  });

  it('forgets what an agent wrote before calling a tool: the turn\'s next model call streams afresh', () => {
    const t = new InFlightReplies();
    t.observe(delta('g', 'analyst', 'r1:analyst:0', 'Let me look.'));
    t.observe(delta('g', 'writer', 'r1:writer:0', 'other'));
    t.observe({ type: 'message', groupId: 'g', entry: entry({ kind: 'tool', agentId: 'analyst', text: '🔧 Analyst used orders.lookup' }) });
    expect(t.snapshot('g').streams.map((s) => s.turnId)).toEqual(['r1:writer:0']);
    t.observe(delta('g', 'analyst', 'r1:analyst:0', 'Order 42 shipped.'));
    expect(t.snapshot('g').streams.find((s) => s.agentId === 'analyst')?.text).toBe('Order 42 shipped.');
  });

  it('is bounded: a reply past the size cap is no longer offered, the quietest go first, quiet ones expire', () => {
    let now = 0;
    const t = new InFlightReplies({ maxChars: 10, maxReplies: 2, quietMs: 1_000, staleMs: 5_000 }, () => now);
    t.observe(delta('g', 'writer', 'big', '12345678'));
    t.observe(delta('g', 'writer', 'big', '901'));
    t.observe(delta('g', 'writer', 'big', 'x'));
    expect(t.snapshot('g').streams).toEqual([]);
    t.observe(delta('g', 'a', 'one', 'a'));
    now = 10;
    t.observe(delta('g', 'b', 'two', 'b'));
    now = 20;
    t.observe(delta('g', 'a', 'one', 'a')); // "one" is now the latest
    t.observe(delta('g', 'c', 'three', 'c')); // over the cap: the quietest ("two") goes
    expect(t.snapshot('g').streams.map((s) => s.turnId).sort()).toEqual(['one', 'three']);
    // Quiet and no longer typing: gone after quietMs; still typing: kept until staleMs.
    t.observe(typing('g', 'c', true));
    now = 2_000;
    expect(t.snapshot('g').streams.map((s) => s.turnId)).toEqual(['three']);
    now = 6_000;
    expect(t.snapshot('g').streams).toEqual([]);
  });
});

describe('SSE: ?inflight=1', () => {
  const running: WebChannel[] = [];
  const streams: SseConnection[] = [];

  afterEach(async () => {
    for (const s of streams.splice(0)) s.close();
    for (const w of running.splice(0)) await w.stop();
  });

  async function setup(): Promise<{ gw: FakeGateway; base: string }> {
    const gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer', 'critic'] });
    const web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS, heartbeatMs: 1_000 });
    running.push(web);
    await web.start(gw);
    return { gw, base: web.url! };
  }

  it('a client that connects mid-reply gets the text so far and who types, then the next deltas', async () => {
    const { gw, base } = await setup();
    // Nobody is connected while the reply begins: the channel keeps it all the same.
    gw.emit({ type: 'typing', groupId: 'lobby', agentId: 'writer', active: true });
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 'r1:writer:0', text: 'Once upon ' });
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 'r1:writer:0', text: 'a time' });
    const s = await openSse(`${base}/api/groups/lobby/events?inflight=1&after=0`);
    streams.push(s);
    await s.waitFor((ev) => ev.length >= 1);
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 'r1:writer:0', text: ' there was' });
    const events = await s.waitFor((ev) => ev.some((e) => e.event === 'delta'));
    expect(events.map((e) => e.event)).toEqual(['inflight', 'delta']);
    expect(events[0]!.data).toEqual({ type: 'inflight', groupId: 'lobby', typing: ['writer'], considering: [], streams: [{ turnId: 'r1:writer:0', agentId: 'writer', text: 'Once upon a time' }] });
    expect(events[1]!.data.text).toBe(' there was');

    // Recorded: a page connecting now is told nothing is in flight.
    gw.emit({ type: 'typing', groupId: 'lobby', agentId: 'writer', active: false });
    gw.append('lobby', { kind: 'agent', authorId: 'agent:writer', authorName: 'Writer', agentId: 'writer', text: 'Once upon a time there was' });
    const late = await openSse(`${base}/api/groups/lobby/events?inflight=1`);
    streams.push(late);
    const first = await late.waitFor((ev) => ev.length >= 1);
    expect(first[0]).toMatchObject({ event: 'inflight', data: { typing: [], streams: [] } });
  });

  it('?batch=1: a burst of deltas comes as the first chunk, then the rest joined, always before the next event', async () => {
    const { gw, base } = await setup();
    const s = await openSse(`${base}/api/groups/lobby/events?batch=1`);
    streams.push(s);
    const words = Array.from({ length: 20 }, (_, i) => `w${i} `);
    for (const w of words) gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't', text: w });
    const events = await s.waitFor((ev) => ev.map((e) => e.data.text ?? '').join('') === words.join(''));
    expect(events.map((e) => e.data.text)).toEqual([words[0], words.slice(1).join('')]);
    // Held deltas go out before any other event, in order.
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't', text: 'a' });
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't', text: 'b' });
    gw.append('lobby', { kind: 'agent', authorId: 'agent:writer', authorName: 'Writer', agentId: 'writer', text: 'done' });
    const all = await s.waitFor((ev) => ev.some((e) => e.event === 'message'));
    const rest = all.slice(2);
    expect(rest.at(-1)!.event).toBe('message');
    expect(rest.slice(0, -1).map((e) => `${e.event}:${e.data.text}`).join('|')).toMatch(/^delta:ab$|^delta:a\|delta:b$/);
  });

  it('without ?inflight the stream is as before: no inflight event', async () => {
    const { gw, base } = await setup();
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't', text: 'partial' });
    const s = await openSse(`${base}/api/groups/lobby/events`);
    streams.push(s);
    gw.emit({ type: 'delta', groupId: 'lobby', agentId: 'writer', turnId: 't', text: ' more' });
    const events = await s.waitFor((ev) => ev.length >= 1);
    expect(events.map((e) => e.event)).toEqual(['delta']);
  });
});
