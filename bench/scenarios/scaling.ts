/**
 * Group scaling: `groups` groups each get one addressed message at the same moment; the model
 * takes `latencyMs` per call and `llm.max_concurrency` calls may be in flight. Ideal wall time is
 * ceil(groups / concurrency) rounds of `latencyMs`; the ratio says how much the router, the queues
 * and the store add on top. Wall time runs from handing over the first message to the last reply
 * reaching the channel. The messages address the three agents in turn: one agent may hold only
 * its share of the slots (`llm.max_concurrency_per_agent`), and this figure is about
 * the router's overhead, not about that cap.
 */
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { benchApp, inbound, now } from '../lib.js';

export interface ScalingResult {
  ratio: number;
  wallMs: number;
  idealMs: number;
}

export async function scalingRun(o: { groups: number; latencyMs: number; concurrency: number }): Promise<ScalingResult> {
  const llm = new FakeLlm({ latencyMs: o.latencyMs, replies: { analyst: 'Done.', writer: 'Done.', critic: 'Done.' } });
  const b = await benchApp({ llm, agents: 3, maxConcurrency: o.concurrency });
  try {
    const { router } = b.app;
    const ids = Array.from({ length: o.groups }, (_, i) => `s${i}`);
    for (let i = 0; i < ids.length; i += 100) {
      await Promise.all(ids.slice(i, i + 100).map((id) => router.gateway.createGroup({ title: id, participants: ['analyst', 'writer', 'critic'], id })));
    }
    await b.store.flush();
    const replies = ids.map((id) => b.channel!.waitFor(id));
    const t0 = now();
    const who = ['analyst', 'writer', 'critic'];
    const recorded = await Promise.all(ids.map((id, i) => router.receive(inbound(id, `@${who[i % who.length]} please confirm`))));
    if (recorded.some((r) => r.status !== 'recorded')) throw new Error('scaling: a message was not recorded');
    const last = Math.max(...(await Promise.all(replies)));
    const wallMs = last - t0;
    await router.idle();
    const idealMs = Math.ceil(o.groups / o.concurrency) * o.latencyMs;
    return { ratio: wallMs / idealMs, wallMs, idealMs };
  } finally {
    await b.close();
  }
}
