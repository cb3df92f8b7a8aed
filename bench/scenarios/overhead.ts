/**
 * Router overhead and store volume in one group (3 agents, `@analyst` messages one after another,
 * LLM latency 0, real file store in a temporary directory).
 *
 * - overhead: performance.now() just before `router.receive(msg)` → the moment the channel's
 *   `postAsAgent` is called with the reply. Covers dedupe, the durable write of the human message,
 *   planning, the prompt, the (instant) model call, recording the reply with its session and the
 *   hand-over. The next message is sent once the round has finished (`router.idle()`).
 * - bytes: `FileStore.stats` log and checkpoint bytes (handed to the file system) per delivered reply,
 *   measured over a window of messages once the group has a given history (checkpoints amortised
 *   over the records between two of them); beside it the disk writes the kernel charged to the
 *   process (/proc/self/io `write_bytes`, counted per page dirtied; 0 on tmpfs).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointInterval } from '../../src/core/groups/groupWrites.js';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { benchApp, diskWriteBytes, inbound, now, percentile, UnrecordedLlm } from '../lib.js';

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

export interface BytesPoint {
  /** Human messages in the group when the window started. */
  history: number;
  /** Transcript entries in the group when the window started. */
  entries: number;
  /**
   * Store bytes per delivered reply, checkpoints amortised: log bytes in the window, plus the size
   * of the group's checkpoint at this history × records per reply / records between checkpoints (a window
   * holds either 0 or 1 checkpoint, so counting them raw is a coin toss).
   */
  storeBytes: number;
  /** Of which log lines. */
  logBytes: number;
  /** A checkpoint of the group at this history (bytes). */
  checkpointSize: number;
  /** Store bytes per reply as counted in the window, checkpoints as they fell. */
  windowBytes: number;
  /** Log records (appends) per reply. */
  recordsPerReply: number;
  /**
   * Disk writes of the process (/proc/self/io write_bytes) per delivered reply, checkpoints
   * amortised the same way; null without /proc/self/io.
   */
  diskBytes: number | null;
  /** Store flushes (one write + sync per group file) per delivered reply. */
  flushes: number;
}

/**
 * Grow one group to each history point in `points` (ascending), then measure a window of `window`
 * messages sent one after another (each waits for its reply and the round's end). The filler is
 * sent `batch` messages at once (from several people, so no rate limit applies) with
 * `router.idle()` between batches: the router answers a batch as one round, so getting to 10,000
 * messages takes seconds. Everything the store hands to the file system is counted, and the
 * process's real disk writes beside it.
 */
export async function bytesRun(o: { points: number[]; window: number; batch: number; fsync?: 'always' | 'never' }): Promise<BytesPoint[]> {
  const llm = new UnrecordedLlm({ replies: { analyst: REPLY.replace(' @writer', ' Writer') } });
  const b = await benchApp({ llm, agents: 3, fsync: o.fsync });
  const out: BytesPoint[] = [];
  try {
    const { router } = b.app;
    await router.gateway.createGroup({ title: 'Bytes', participants: ['analyst', 'writer', 'critic'], id: 'room' });
    const group = router.groups.get('room')!;
    const settled = async () => {
      await router.idle();
      await router.groups.settle();
      await b.store.flush();
    };
    let sent = 0;
    const fill = async (n: number) => {
      for (let done = 0; done < n; ) {
        const k = Math.min(o.batch, n - done);
        const res = await Promise.all(Array.from({ length: k }, (_, j) => router.receive(inbound('room', `@analyst note ${sent + j} for the record`, `filler${j % 50}`))));
        const bad = res.find((r) => r.status !== 'recorded');
        if (bad) throw new Error(`bytes: a filler message was not recorded (${bad.status})`);
        sent += k;
        done += k;
        await router.idle();
      }
      await settled();
    };
    for (const point of o.points) {
      await fill(point - sent);
      const history = sent;
      const entries = group.nextSeq - 1;
      const s0 = { ...b.store.stats };
      const disk0 = diskWriteBytes();
      const postedBefore = b.channel!.posted;
      for (let i = 0; i < o.window; i++) {
        const res = await router.receive(inbound('room', `@analyst how did revenue do in week ${sent++}?`));
        if (res.status !== 'recorded') throw new Error(`bytes: message not recorded (${res.status})`);
        await router.idle();
      }
      await settled();
      const disk1 = diskWriteBytes();
      const replies = b.channel!.posted - postedBefore;
      if (replies !== o.window) throw new Error(`bytes: ${replies} replies to ${o.window} messages`);
      const s1 = { ...b.store.stats };
      // One checkpoint of the group as it is now: its size, and what writing it cost on disk.
      await router.groups.checkpointAll();
      await b.store.flush();
      const disk2 = diskWriteBytes();
      const cp = b.store.stats.checkpointBytes - s1.checkpointBytes;
      const checkpointSize = cp > 0 ? cp : (await stat(join(b.dir, 'groups', 'room', 'state.json'))).size;
      const recordsPerReply = (s1.appends - s0.appends) / replies;
      const share = recordsPerReply / checkpointInterval(group.seen.size);
      const logBytes = (s1.bytes - s0.bytes) / replies;
      let diskBytes: number | null = null;
      if (disk0 !== null && disk1 !== null && disk2 !== null) {
        const diskCp = cp > 0 ? disk2 - disk1 : 0;
        diskBytes = Math.max(0, disk1 - disk0 - (s1.checkpoints - s0.checkpoints) * diskCp) / replies + diskCp * share;
      }
      out.push({
        history,
        entries,
        storeBytes: logBytes + checkpointSize * share,
        logBytes,
        checkpointSize,
        windowBytes: (s1.bytes + s1.checkpointBytes - s0.bytes - s0.checkpointBytes) / replies,
        recordsPerReply,
        diskBytes,
        flushes: (s1.flushes - s0.flushes) / replies,
      });
    }
    return out;
  } finally {
    await b.close();
  }
}
