/**
 * Storage scaling: the cost of one message must not depend on how many groups exist on disk.
 *
 * A data directory is filled with `groups` groups (3 agents each: one group file and three session
 * files), the app is restarted on it (so everything is loaded from disk, as after a deploy), then
 * `messages` addressed messages are sent one after another, spread over 10 of the groups, each
 * waiting for its reply. Cost per message = wall time / messages.
 */
import { execFileSync } from 'node:child_process';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { benchApp, inbound, now, tempDir } from '../lib.js';

const PARTICIPANTS = ['analyst', 'writer', 'critic'];

/** Create `n` groups in `dir`, `batch` at a time, then stop the app (everything flushed). */
async function fill(dir: string, n: number): Promise<void> {
  const b = await benchApp({ llm: new FakeLlm(), agents: 3, dir });
  const batch = 100;
  for (let i = 0; i < n; i += batch) {
    const ids = Array.from({ length: Math.min(batch, n - i) }, (_, k) => `g${i + k}`);
    await Promise.all(ids.map((id) => b.app.router.gateway.createGroup({ title: `Group ${id}`, participants: PARTICIPANTS, id })));
  }
  await b.app.stop();
}

/** Milliseconds per message with `groups` groups on disk. */
export async function storageRun(o: { groups: number; messages: number; warmup: number }): Promise<number> {
  const tmp = await tempDir('storage');
  try {
    await fill(tmp.dir, o.groups);
    // Let the kernel write the fill out first, so its writeback does not land on the measurement.
    execFileSync('sync');
    const llm = new FakeLlm({ replies: { analyst: 'The numbers look fine.' } });
    const b = await benchApp({ llm, agents: 3, dir: tmp.dir });
    try {
      const { router } = b.app;
      const active = Array.from({ length: Math.min(10, o.groups) }, (_, k) => `g${Math.floor((k * o.groups) / Math.min(10, o.groups))}`);
      const send = async (i: number) => {
        const id = active[i % active.length]!;
        const posted = b.channel!.waitFor(id);
        await router.receive(inbound(id, `@analyst status of item ${i}?`));
        await posted;
        await router.idle();
      };
      for (let i = 0; i < o.warmup; i++) await send(i);
      const t0 = now();
      for (let i = 0; i < o.messages; i++) await send(o.warmup + i);
      return (now() - t0) / o.messages;
    } finally {
      await b.app.stop();
    }
  } finally {
    await tmp.remove();
  }
}
