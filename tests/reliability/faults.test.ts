/**
 * Faults: an LLM that fails 30% of calls — 429, 529, timeouts, empty or garbage text —
 * never stalls a group, gives at most one notice per failure, lets the other agents answer, and
 * is never retried by the router (each planned turn makes at most one call). SSE clients that
 * vanish leave no listener and no timer behind.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import { systemClock } from '../../src/core/clock.js';
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { makeRouter } from '../helpers/router-harness.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { prng } from './invariants.js';

type Fault = 'ok' | '429' | '529' | 'timeout' | 'empty' | 'garbage';
const FAULTS: Fault[] = ['429', '529', 'timeout', 'empty', 'garbage'];

/**
 * Fails ~30% of turn calls with a seeded mix of faults; records what it did per group, and
 * whether the turn was one someone asked for (which of the turns a fault lands on depends on how
 * the two groups' calls interleave, so on timing).
 */
class FlakyLlm implements LlmProvider {
  readonly name = 'flaky';
  readonly log: Array<{ group: string; agent: string; fault: Fault; asked: boolean }> = [];
  private readonly rand: () => number;
  private failures = 0;
  constructor(seed: number) {
    this.rand = prng(seed);
  }
  async complete(req: LlmRequest): Promise<LlmResponse> {
    // ~30% fail, cycling through every kind of fault.
    const fault: Fault = this.rand() < 0.3 ? FAULTS[this.failures++ % FAULTS.length]! : 'ok';
    this.log.push({ group: req.groupId ?? '?', agent: req.agent?.id ?? '?', fault, asked: req.mustReply === true });
    await new Promise((r) => setTimeout(r, 1));
    const ok = (text: string): LlmResponse => ({ text, model: 'flaky', usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 } });
    switch (fault) {
      case '429':
        throw new LlmError('rate limited (429)', 'rate_limited', true);
      case '529':
        throw new LlmError('overloaded (529)', 'overloaded', true);
      case 'timeout':
        // Never answers; the router's timeout must end the turn and free the slot.
        return new Promise((_, reject) => req.signal?.addEventListener('abort', () => reject(req.signal?.reason), { once: true }));
      case 'empty':
        return ok('');
      case 'garbage':
        return ok('\u0000\ufffd}{"\u202e' + String.fromCharCode(...Array.from({ length: 20 }, () => 33 + Math.floor(this.rand() * 90))));
      default:
        return ok(req.mustReply ? `${req.agent?.id} answers` : '[PASS]');
    }
  }
}

describe('LLM failing 30% of calls', () => {
  it('no group stalls, one notice per failure, others still answer, no retries', async () => {
    const llm = new FlakyLlm(99);
    const h = await makeRouter({
      llm,
      clock: systemClock,
      group: { cooldown_seconds: 0, agent_reply_timeout_seconds: 0.5, voluntary_timeout_seconds: 0.5, history_turns: 1000, max_agent_turns_per_message: 2 },
    });
    const rooms = [h.group.id, (await h.router.gateway.createGroup({ title: 'Second', participants: ['analyst', 'writer', 'critic'], id: 'room2' })).id];
    const texts = ['@all report', '@analyst figures?', 'anyone?', '@writer and @critic', '@everyone go'];
    const N = 20;
    for (const room of rooms) {
      void (async () => {
        for (let i = 0; i < N; i++) {
          await h.router.receive({ channel: 'web', chatId: room, messageId: `${room}-${i}`, author: { id: 'maya', name: 'Maya' }, text: `${texts[i % texts.length]} ${i}`, ts: 0 });
          await new Promise((r) => setTimeout(r, 15));
        }
      })();
    }
    // Every message is eventually recorded and every round finishes (bounded wait, no stall).
    const deadline = Date.now() + 20_000;
    for (;;) {
      await h.router.idle();
      const humans = await Promise.all(rooms.map(async (r) => (await h.router.gateway.messages(r, { limit: 500 })).filter((e) => e.kind === 'human').length));
      if (humans.every((n) => n === N)) break;
      if (Date.now() > deadline) throw new Error(`stalled: ${humans.join(', ')} of ${N}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await h.router.idle();
    const injected = llm.log.filter((l) => l.fault !== 'ok');
    expect(injected.length).toBeGreaterThan(5);
    expect(new Set(injected.map((l) => l.fault)).size).toBe(FAULTS.length);

    for (const room of rooms) {
      const doc = h.store.group(room);
      expect(doc.rounds).toEqual([]);
      const t = doc.transcript;
      const notices = t.filter((e) => e.kind === 'system' && e.decision?.type === 'error');
      const quiet = t.filter((e) => e.kind === 'decision' && e.decision?.type === 'error');
      const failures = llm.log.filter((l) => l.group === room && (l.fault === '429' || l.fault === '529' || l.fault === 'timeout'));
      // One notice per failed turn someone asked for, none more: and each names the agent. A
      // voluntary turn that fails leaves a quiet decision line instead (nobody asked for it).
      expect(notices.length).toBe(failures.filter((f) => f.asked).length);
      expect(quiet.length).toBe(failures.filter((f) => !f.asked).length);
      for (const n of notices) expect(n.text).toMatch(/^⚠ (Analyst|Writer|Critic) could not reply \((rate limited|model overloaded|timeout)\)$/);
      // Other agents still answer: every @all round produced replies from the agents that did not fail.
      // Each call has exactly one outcome — a reply, a pass, one notice or one quiet failure line —
      // so nothing is retried, nothing vanishes, and the agents after a failure still get their turn.
      const replies = t.filter((e) => e.kind === 'agent');
      const passes = t.filter((e) => e.kind === 'decision' && e.decision?.type === 'pass');
      const calls = llm.log.filter((l) => l.group === room);
      expect(replies.length + passes.length + notices.length + quiet.length).toBe(calls.length);
      expect(replies.length).toBeGreaterThan(0);
      // Nothing posted carries the pass token.
      for (const r of replies) expect(r.text).not.toMatch(/\[\s*pass\s*\]/i);
      // Every reply was delivered.
      expect(t.filter((e) => e.delivery === 'pending')).toEqual([]);
    }
    // No retries in the router: each call belongs to a distinct planned turn, so calls per
    // message are bounded by participants + the turn cap.
    const turnCalls = llm.log.length;
    expect(turnCalls).toBeLessThanOrEqual(rooms.length * N * (3 + 2));
    // Nothing lingers in the LLM gate (timeouts released their slots).
    expect(h.router.load().llmCalls).toBe(0);
  });

  it('an agent that always fails never blocks the others, and gets one notice per turn', async () => {
    const h = await makeRouter({
      llm: new FakeLlm({ replies: { writer: () => Promise.reject(new LlmError('overloaded', 'overloaded', true)) } }),
    });
    for (let i = 0; i < 5; i++) await h.say(`@all round ${i}`);
    const t = h.transcript();
    expect(t.filter((e) => e.kind === 'system' && e.decision?.type === 'error')).toHaveLength(5);
    expect(h.speakers().filter((s) => s === 'analyst')).toHaveLength(5);
    expect(h.speakers().filter((s) => s === 'critic')).toHaveLength(5);
    expect(h.llm.callsFor('writer')).toHaveLength(5);
  });
});

describe('SSE clients that vanish', () => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it('leave no listener and no timer behind', async () => {
    const { config } = parseConfigText(
      `agents:\n  - { id: analyst, name: Analyst, persona: "x" }\n  - { id: writer, name: Writer, persona: "y" }\nchannels: { web: { port: 0 } }\ngroups:\n  - { channel: web, chat_id: room, participants: [analyst, writer] }\n`,
      'sse-test',
    );
    app = await createApp({ config, llm: new FakeLlm(), logger: silentLogger, store: new MemoryStore() });
    await app.start();
    const url = app.webUrl!;
    const baseListeners = app.router.events.size;
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const baseTimers = timers();
    for (let round = 0; round < 3; round++) {
      const reqs = Array.from({ length: 12 }, (_, i) =>
        new Promise<ReturnType<typeof request>>((resolve) => {
          const path = i % 2 ? '/api/events' : `/api/groups/room/events${i % 4 === 0 ? '?after=0' : ''}`;
          const req = request(`${url}${path}`, { headers: { accept: 'text/event-stream' } }, (res) => res.once('data', () => resolve(req)));
          req.on('error', () => undefined);
          req.end();
        }),
      );
      const open = await Promise.all(reqs);
      expect(app.router.events.size).toBeGreaterThan(baseListeners);
      // Traffic while connected, then the clients vanish without a goodbye.
      await app.router.receive({ channel: 'web', chatId: 'room', messageId: `x${round}`, author: { id: 'u', name: 'U' }, text: '@analyst hi', ts: 0 });
      for (const r of open) r.destroy();
      const deadline = Date.now() + 5000;
      while (app.router.events.size !== baseListeners && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(app.router.events.size).toBe(baseListeners);
    }
    await app.router.idle();
    const web = app.channels.find((c) => c.kind === 'web') as unknown as { sseClientCount: number };
    expect(web.sseClientCount).toBe(0);
    expect(timers()).toBeLessThanOrEqual(baseTimers);
  });
});
