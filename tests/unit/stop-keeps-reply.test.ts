/**
 * Streaming and the router: `/stop` keeps what a reply had streamed (recorded as the agent's
 * reply, ending in "…", marked `cut: 'stopped'`, just before the stop notice, remembered by the
 * agent), and typing shows for a voluntary turn only once its text comes — a turn that passes
 * never shows as typing.
 */
import { describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/core/ports.js';
import type { GatewayEvent } from '../../src/core/readModels.js';
import { makeRouter } from '../helpers/router-harness.js';

/** Streams `pieces`, then waits until the call is cancelled. */
function streamThenHang(pieces: string[]) {
  return async (req: LlmRequest): Promise<string> => {
    for (const p of pieces) req.onDelta?.(p);
    await new Promise<void>((resolve) => {
      if (req.signal?.aborted) resolve();
      req.signal?.addEventListener('abort', () => resolve());
    });
    return pieces.join('') + ' and the rest that never came';
  };
}

/** Resolves once `pred` holds, checking after each turn of the event loop. */
async function until(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !pred(); i++) await new Promise((r) => setImmediate(r));
  expect(pred()).toBe(true);
}

describe('/stop keeps what was streamed', () => {
  it('records the text so far as the reply, marked stopped, before the notice; posts it; the agent remembers it', async () => {
    const h = await makeRouter({ llm: { replies: { writer: [streamThenHang(['Roses are red, ', 'violets are ']), 'Second answer.'] } } });
    const events: GatewayEvent[] = [];
    h.router.gateway.subscribe((ev) => events.push(ev));
    await h.router.receive(h.message('@writer a poem, please'));
    await until(() => events.some((e) => e.type === 'delta' && e.text.includes('violets')));

    await h.router.stopGroup('room', 'Sam');
    await h.router.idle();
    const t = h.transcript();
    const kept = t.find((e) => e.kind === 'agent')!;
    expect(kept.text).toBe('Roses are red, violets are…');
    expect(kept.meta?.cut).toBe('stopped');
    expect(kept.meta?.usage.outputTokens).toBe(0);
    const notice = t.at(-1)!;
    expect(notice.decision?.type).toBe('stopped');
    expect(notice.seq).toBe(kept.seq + 1);
    // Published in that order (a page has the reply when the notice comes), and typing ends.
    const order = events.filter((e) => e.type === 'message').map((e) => (e.type === 'message' ? e.entry.kind : ''));
    expect(order.slice(-2)).toEqual(['agent', 'system']);
    expect(events.filter((e) => e.type === 'typing').map((e) => e.type === 'typing' && e.active)).toEqual([true, false]);
    // Delivered like any reply, and durable.
    expect(h.channel.posts.some((p) => p.agentId === 'writer' && p.text === 'Roses are red, violets are…')).toBe(true);
    const log = await h.fullTranscript();
    expect(log.find((e) => e.id === kept.id)?.meta?.cut).toBe('stopped');
    expect(log.find((e) => e.id === kept.id)?.delivery).toBe('posted');

    // The agent's next turn has its stopped reply in its history.
    await h.say('@writer go on');
    const next = h.llm.callsFor('writer').at(-1)!;
    expect(next.messages.some((m) => m.role === 'assistant' && m.content === 'Roses are red, violets are…')).toBe(true);
  });

  it('keeps nothing when nothing was shown yet', async () => {
    const h = await makeRouter({ llm: { replies: { writer: streamThenHang([]) } } });
    await h.router.receive(h.message('@writer a poem, please'));
    await until(() => h.llm.callsFor('writer').length === 1);
    await h.router.stopGroup('room', 'Sam');
    await h.router.idle();
    expect(h.transcript().filter((e) => e.kind === 'agent')).toEqual([]);
    expect(h.transcript().at(-1)?.decision?.type).toBe('stopped');
  });
});

describe('typing shows once text comes', () => {
  it('a voluntary turn shows as considering, never as typing when it passes; one that answers types from its first words', async () => {
    const h = await makeRouter({
      llm: {
        replies: {
          analyst: '[PASS]',
          critic: '[PASS]',
          // Longer than the 120 characters a voluntary reply is held back for (it could still pass).
          writer: async (req) => {
            const pieces = ['Happy to help with that. ', 'Here is a thought about the plan, ', 'and another about the budget, ', 'and a third about the timeline, ', 'which matters most.'];
            for (const p of pieces) req.onDelta?.(p);
            return pieces.join('');
          },
        },
      },
      group: { max_voluntary_responders: 3 },
    });
    const events: GatewayEvent[] = [];
    h.router.gateway.subscribe((ev) => events.push(ev));
    await h.say('anyone around?');
    expect(h.transcript().filter((e) => e.decision?.type === 'pass').map((e) => e.decision?.agentId).sort()).toEqual(['analyst', 'critic']);
    const typing = events.filter((e) => e.type === 'typing').map((e) => (e.type === 'typing' ? `${e.agentId}:${e.active}` : ''));
    expect(typing).toEqual(['writer:true', 'writer:false']);
    const writer = events.filter((e) => (e.type === 'typing' || e.type === 'delta') && e.agentId === 'writer').map((e) => e.type);
    expect(writer[0]).toBe('typing');
    expect(writer[1]).toBe('delta');
    expect(h.channel.typing.map((t) => t.agentId)).not.toContain('analyst');
    // Until then each was considering: the two that passed just stop, the writer stops as it starts typing.
    const considering = (agent: string) => events.filter((e) => e.type === 'considering' && e.agentId === agent).map((e) => (e.type === 'considering' ? e.active : null));
    for (const agent of ['analyst', 'critic', 'writer']) expect(considering(agent)).toEqual([true, false]);
    const writerOrder = events.filter((e) => (e.type === 'considering' || e.type === 'typing') && e.agentId === 'writer').map((e) => (e.type === 'considering' || e.type === 'typing' ? `${e.type}:${e.active}` : ''));
    expect(writerOrder).toEqual(['considering:true', 'considering:false', 'typing:true', 'typing:false']);

    // Addressed: someone asked, so the agent shows as typing from the start of its turn.
    events.length = 0;
    await h.say('@analyst numbers?');
    expect(events.filter((e) => e.type === 'typing').map((e) => (e.type === 'typing' ? `${e.agentId}:${e.active}` : ''))).toEqual(['analyst:true', 'analyst:false']);
    expect(events.filter((e) => e.type === 'considering')).toEqual([]);
  });
});
