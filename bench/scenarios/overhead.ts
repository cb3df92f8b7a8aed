/**
 * Router overhead and store volume in one group (3 agents, `@analyst` messages one after another,
 * LLM latency 0, real lowdb store in a temporary directory).
 *
 * - overhead: performance.now() just before `router.receive(msg)` → the moment the channel's
 *   `postAsAgent` is called with the reply. Covers dedupe, the durable write of the human message,
 *   planning, the prompt, the (instant) model call, recording the reply with its session and the
 *   hand-over. The next message is sent once the round has finished (`router.idle()`).
 * - bytes: `FileStore.stats` log and checkpoint bytes (handed to the file system) per delivered reply,
 *   measured over a window of messages once the group has a given history.
 */
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { benchApp, inbound, now, percentile } from '../lib.js';

export interface OverheadResult {
  p50: number;
  p99: number;
  samples: number;
}

const REPLY = 'Revenue grew 12% quarter on quarter; the margin is flat because of the new hires. @writer can phrase it for the board.';

/** One run: `warmup` unmeasured messages, then `messages` measured ones. */
export async function overheadRun(o: { messages: number; warmup: number }): Promise<OverheadResult> {
  const llm = new FakeLlm({ replies: { analyst: REPLY.replace(' @writer', ' Writer') } });
  const b = await benchApp({ llm, agents: 3 });
  try {
    const { router } = b.app;
    await router.gateway.createGroup({ title: 'Overhead', participants: ['analyst', 'writer', 'critic'], id: 'room' });
    const samples: number[] = [];
    for (let i = 0; i < o.warmup + o.messages; i++) {
      const posted = b.channel!.waitFor('room');
      const t0 = now();
      const res = await router.receive(inbound('room', `@analyst how did revenue do in week ${i}?`));
      if (res.status !== 'recorded') throw new Error(`overhead: message not recorded (${res.status})`);
      const t1 = await posted;
      if (i >= o.warmup) samples.push(t1 - t0);
      await router.idle();
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99), samples: samples.length };
  } finally {
    await b.close();
  }
}

export interface BytesResult {
  /** Bytes per delivered reply once the group has `history` human messages (each answered). */
  byHistory: Record<number, number>;
  /** Store writes (files) per delivered reply at the first measured point. */
  writesPerReply: number;
}

/**
 * Send messages one after another; at each history point measure a window of `window` messages.
 * `points` must be ascending.
 */
export async function bytesRun(o: { points: number[]; window: number }): Promise<BytesResult> {
  const llm = new FakeLlm({ replies: { analyst: REPLY.replace(' @writer', ' Writer') } });
  const b = await benchApp({ llm, agents: 3 });
  const byHistory: Record<number, number> = {};
  let writesPerReply = NaN;
  try {
    const { router } = b.app;
    await router.gateway.createGroup({ title: 'Bytes', participants: ['analyst', 'writer', 'critic'], id: 'room' });
    let sent = 0;
    const send = async (n: number) => {
      for (let i = 0; i < n; i++) {
        await router.receive(inbound('room', `@analyst how did revenue do in week ${sent++}?`));
        await router.idle();
      }
      await b.store.flush();
    };
    for (const point of o.points) {
      await send(point - sent);
      const before = { ...b.store.stats };
      const postedBefore = b.channel!.posted;
      await send(o.window);
      const replies = b.channel!.posted - postedBefore;
      // Log lines and checkpoints both count: everything the store hands to the file system.
      byHistory[point] = (b.store.stats.bytes + b.store.stats.checkpointBytes - before.bytes - before.checkpointBytes) / replies;
      if (Number.isNaN(writesPerReply)) writesPerReply = (b.store.stats.flushes - before.flushes) / replies;
    }
    return { byHistory, writesPerReply };
  } finally {
    await b.close();
  }
}
