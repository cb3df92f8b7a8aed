/**
 * Voluntary round time: one unaddressed message in an 8-agent group whose model takes
 * `latencyMs` per call, `voluntary_execution: sequential` against `parallel`. Time runs from handing
 * the message over to the round being finished (every outcome written); calls are the model calls
 * the round cost. Two cases:
 *
 * - `pass`: every agent passes — the worst case for a sequential round (8 calls one after another).
 * - `last-two`: only the last two candidates reply (max_voluntary_responders 2) — sequential still
 *   asks all 8 in turn; parallel asks them at once and delivers those two.
 * - `first-two`: the first two candidates reply — sequential stops after 2 calls; parallel has
 *   its replies after the first wave and cancels the calls still waiting for a slot.
 *
 * The default share of model slots per group (`llm.max_concurrency` 16 → 4 per group) bounds the
 * parallel round to two waves of calls (≈ 2 × latency); with `max_concurrency` 32 (8 per group)
 * every candidate is asked in one wave (≈ 1 × latency).
 *
 * `npx tsx bench/scenarios/rounds.ts [latencyMs] [messages]` runs only this scenario and prints
 * its figures.
 */
import { fileURLToPath } from 'node:url';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { AGENT_IDS, benchApp, inbound, now } from '../lib.js';

export interface RoundTimes {
  /** Per message: wall time of the round, in ms. */
  ms: number[];
  /** Per message: model calls made (started at the provider). */
  calls: number[];
  /** Per message: of those, calls cancelled before they finished (enough replies were in). */
  cancelled: number[];
  /** Replies delivered, over all messages. */
  replies: number;
}

export async function voluntaryRoundRun(o: { mode: 'sequential' | 'parallel'; latencyMs: number; messages: number; repliers: 'none' | 'last-two' | 'first-two'; maxConcurrency?: number }): Promise<RoundTimes> {
  const ids = [...AGENT_IDS];
  // Nobody has replied yet and all agents are equally talkative: candidates are asked in participant order.
  const repliers = new Set<string>(o.repliers === 'last-two' ? ids.slice(-2) : o.repliers === 'first-two' ? ids.slice(0, 2) : []);
  const llm = new FakeLlm({ latencyMs: o.latencyMs, fallback: (q) => (repliers.has(q.agent?.id ?? '') ? `${q.agent?.id} has a view on this` : '[PASS]') });
  const b = await benchApp({ llm, agents: 8, maxConcurrency: o.maxConcurrency ?? 16, group: { voluntary_execution: o.mode, max_voluntary_responders: 2, max_agent_turns_per_message: 3 } });
  try {
    const { router } = b.app;
    const out: RoundTimes = { ms: [], calls: [], cancelled: [], replies: 0 };
    for (let i = 0; i < o.messages; i++) {
      // A fresh group per message, so every round starts from the same state.
      const id = `vol-${o.mode}-${i}`;
      await router.gateway.createGroup({ title: id, participants: ids, id });
      const before = llm.calls.length;
      const t0 = now();
      const res = await router.receive(inbound(id, `Thinking out loud about option ${i} for the launch.`));
      if (res.status !== 'recorded') throw new Error(`rounds: not recorded (${res.status})`);
      await router.idle();
      out.ms.push(now() - t0);
      const turns = llm.calls.slice(before).filter((c) => c.purpose === 'turn');
      out.calls.push(turns.length);
      out.cancelled.push(turns.filter((c) => c.signal?.aborted).length);
      out.replies += (await router.gateway.messages(id, { limit: 100 })).filter((e) => e.kind === 'agent').length;
    }
    return out;
  } finally {
    await b.close();
  }
}

async function main(): Promise<void> {
  const latencyMs = Number(process.argv[2] ?? 200);
  const messages = Number(process.argv[3] ?? 3);
  for (const [repliers, maxConcurrency] of [['none', 16], ['last-two', 16], ['first-two', 16], ['none', 32]] as const) {
    for (const mode of ['sequential', 'parallel'] as const) {
      const r = await voluntaryRoundRun({ mode, latencyMs, messages, repliers, maxConcurrency });
      const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      console.log(
        `${repliers.padEnd(9)} ${String(maxConcurrency / 4).padStart(2)} slots/group ${mode.padEnd(10)} round ${med(r.ms).toFixed(0).padStart(5)} ms = ${(med(r.ms) / latencyMs).toFixed(2)} × L (L = ${latencyMs} ms), ${med(r.calls)} model calls (${med(r.cancelled)} cancelled), ${r.replies / messages} replies per message  [ms: ${r.ms.map((x) => x.toFixed(0)).join(', ')}]`,
      );
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
