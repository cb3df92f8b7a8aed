/**
 * Crash at every write: each observation still reaches each agent exactly once, and a restart
 * resumes from what was persisted. The random SIGKILL tests
 * rarely land between two particular writes; this one makes every log append and every checkpoint
 * a crash point. A store persists writes until write k, then the process "dies": write k and
 * everything after it is lost ('stop'), or write k is lost while writes issued in the same tick
 * that a real disk could still complete land ('swap': checkpoints not covering the lost record,
 * other groups' appends — never a later record of the same log, which an append-only file cannot
 * keep without the earlier one). Checkpoints come every 3 records, so both orders of "log append"
 * and "state write" are crash points. A fresh router then starts from what was persisted, the
 * sender re-sends what was not acknowledged, and the invariants must hold.
 */
import { describe, expect, it } from 'vitest';
import type { GroupCheckpoint, GroupRecord } from '../../src/core/records.js';
import type { InboundMessage } from '../../src/core/types.js';
import { makeRouter } from '../helpers/router-harness.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { checkInvariants, snapshotOf } from './invariants.js';
import { crashMessageText, crashWorkloadLlm } from './workload.js';

class FailpointStore extends MemoryStore {
  issued = 0;
  dead = false;
  private readonly died: Promise<void>;
  private die!: () => void;
  /** group → n of its first lost record: nothing at or after it can land. */
  private readonly lostFrom = new Map<string, number>();

  constructor(
    private readonly failAt: number,
    private readonly mode: 'stop' | 'swap',
    /** Mutant for the self-check: resolve appends before they land (what a lying store would do). */
    private readonly lie = false,
  ) {
    super();
    this.died = new Promise((r) => (this.die = () => ((this.dead = true), r())));
  }

  get death(): Promise<void> {
    return this.died;
  }

  private gate(groupId: string, n: number, isAppend: boolean, persist: () => Promise<void>): Promise<void> {
    const k = this.issued++;
    const hang = new Promise<void>(() => undefined);
    if (this.dead) return hang;
    const lost = this.lostFrom.get(groupId);
    if (lost !== undefined && n >= lost) return hang;
    if (k === this.failAt) {
      if (isAppend) this.lostFrom.set(groupId, n);
      if (this.mode === 'stop') this.die();
      else setImmediate(() => this.die());
      return hang;
    }
    if (this.lie) {
      setImmediate(() => void (this.dead || persist()));
      return Promise.resolve();
    }
    return persist();
  }

  override append(groupId: string, record: GroupRecord) {
    const copy = structuredClone(record);
    return this.gate(groupId, record.n, true, () => super.append(groupId, copy));
  }

  checkpointCalls = 0;

  override checkpoint(groupId: string, cp: GroupCheckpoint) {
    this.checkpointCalls++;
    const copy = structuredClone(cp);
    return this.gate(groupId, cp.n, false, () => super.checkpoint(groupId, copy));
  }

  /** What survived, as a fresh store. */
  survivor(): MemoryStore {
    const s = new MemoryStore();
    for (const [k, v] of this.logs) s.logs.set(k, [...v]);
    for (const [k, v] of this.checkpoints) s.checkpoints.set(k, v);
    return s;
  }
}

const MESSAGES = 8;
const GROUP = { cooldown_seconds: 0, history_turns: 1000 };
/** The same with every voluntary candidate asked at once: outcomes settle in order. */
const PARALLEL = { ...GROUP, voluntary_execution: 'parallel' as const, max_voluntary_responders: 3 };
const CHECKPOINT_EVERY = 3;

function message(chatId: string, i: number): InboundMessage {
  return { channel: 'web', chatId, messageId: `m${i}`, author: { id: 'maya', name: 'Maya' }, text: crashMessageText(i), ts: 0 };
}

/** Messages in pairs, without waiting for rounds in between (so batching and overlap happen). */
async function scenario(h: Awaited<ReturnType<typeof makeRouter>>, acked: Set<string>): Promise<void> {
  for (let i = 0; i < MESSAGES; i += 2) {
    await Promise.all(
      [i, i + 1].map(async (j) => {
        const r = await h.router.receive(message(h.group.chatId, j));
        if (r.status === 'recorded' || r.status === 'duplicate') acked.add(`m${j}`);
      }),
    );
    if (i % 4 === 2) await h.router.idle();
  }
  await h.router.idle();
}

async function crashRun(failAt: number, mode: 'stop' | 'swap', lie = false, group: typeof GROUP = GROUP): Promise<{ violations: string[]; died: boolean }> {
  const store = new FailpointStore(failAt, mode, lie);
  const first = await makeRouter({ store, llm: crashWorkloadLlm(0), group, clock: new FakeClock(), checkpointEvery: CHECKPOINT_EVERY });
  const acked = new Set<string>();
  await Promise.race([scenario(first, acked), store.death]);
  const died = store.dead;
  // Only what was acknowledged before the death counts; the rest the sender re-delivers.
  const ackedBeforeDeath = new Set(acked);
  // Restart from what was persisted, let the sender re-deliver what was never acknowledged.
  const survivor = store.survivor();
  const second = await makeRouter({ store: survivor, llm: crashWorkloadLlm(0), group, clock: new FakeClock(), checkpointEvery: CHECKPOINT_EVERY });
  await second.router.idle();
  const redelivered = new Set<string>();
  for (let i = 0; i < MESSAGES; i++) {
    if (ackedBeforeDeath.has(`m${i}`)) continue;
    const r = await second.router.receive(message(second.group.chatId, i));
    if (r.status === 'recorded' || r.status === 'duplicate') redelivered.add(`m${i}`);
  }
  await second.router.idle();
  // The durable state as the next start sees it: checkpoint plus the records after it.
  const snap = await snapshotOf(survivor);
  const all = new Set([...ackedBeforeDeath, ...redelivered]);
  const violations = checkInvariants(snap, { acked: new Map([[second.group.id, all]]), finished: true });
  if (all.size !== MESSAGES) violations.push(`only ${all.size} of ${MESSAGES} messages acknowledged after the restart`);
  void acked;
  return { violations, died };
}

describe('crash at every write', () => {
  it.each([
    ['', GROUP],
    [' (voluntary_execution: parallel)', PARALLEL],
  ])('holds every invariant whichever write is the last to land%s', async (_label, group) => {
    // How many writes a clean run makes: every one of them is a crash point.
    const clean = new FailpointStore(Infinity, 'stop');
    const h = await makeRouter({ store: clean, llm: crashWorkloadLlm(0), group, clock: new FakeClock(), checkpointEvery: CHECKPOINT_EVERY });
    const setup = clean.issued;
    await scenario(h, new Set());
    const total = clean.issued;
    expect(total - setup).toBeGreaterThan(20);
    // Checkpoints are among the crash points (log append → state write, and the other way round).
    expect(clean.checkpoints.size).toBe(1);
    expect(clean.checkpointCalls).toBeGreaterThan(5);

    const failures: string[] = [];
    let deaths = 0;
    for (let k = setup; k < total; k++) {
      for (const mode of ['stop', 'swap'] as const) {
        const { violations, died } = await crashRun(k, mode, false, group);
        if (died) deaths++;
        if (violations.length) failures.push(`crash at write ${k} (${mode}): ${violations.join('; ')}`);
      }
    }
    expect(deaths).toBeGreaterThan(total - setup);
    expect(failures.slice(0, 10)).toEqual([]);
  }, 60_000);

  it('self-check: catches a store that acknowledges before the write has landed', async () => {
    let caught = 0;
    for (let k = 6; k < 46; k += 4) if ((await crashRun(k, 'stop', true)).violations.some((v) => v.includes('missing from the transcript'))) caught++;
    expect(caught).toBeGreaterThan(0);
  });
});
