/**
 * The model-call slots: at most `total` calls at once, and inside that at most
 * `perGroup` for one group and `perAgent` for one agent. A model that hangs for one agent, or a
 * group that keeps many calls going, can therefore only ever hold its own share; the rest stays
 * free for everyone else. The shares are hard caps (a slot is never lent beyond them), because a
 * slot lent to a call that then hangs cannot be taken back.
 *
 * Waiting calls are served round-robin over groups: the group served last goes to the back, so a
 * group with a long backlog cannot starve one that asks once. Within a group the oldest call whose
 * agent still has room goes first; a call blocked by its agent's cap never blocks the calls
 * behind it.
 */

export interface SlotLimits {
  total: number;
  perGroup: number;
  perAgent: number;
}

/** Who a call is for; calls without an agent (the selector) count only for their group. */
export interface SlotOwner {
  group: string;
  agent?: string | undefined;
}

interface Waiter {
  owner: SlotOwner;
  grant(release: () => void): void;
}

/**
 * Default shares of `total`: a quarter per group, and half per agent when there are several. Half,
 * not a split by the number of agents: one popular agent answering in many groups is the common
 * case and should keep most of the capacity, while a hung one still leaves half to the others.
 */
export function defaultShares(total: number, agentCount: number): { perGroup: number; perAgent: number } {
  return {
    perGroup: Math.max(1, Math.ceil(total / 4)),
    perAgent: agentCount > 1 ? Math.max(1, Math.ceil(total / 2)) : total,
  };
}

export class FairSlots {
  private busy = 0;
  private readonly byGroup = new Map<string, number>();
  private readonly byAgent = new Map<string, number>();
  /** Waiting calls per group; the Map's order is the round-robin order. */
  private readonly waiting = new Map<string, Waiter[]>();
  private waitingCount = 0;

  constructor(readonly limits: SlotLimits) {
    for (const [k, v] of Object.entries(limits)) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`FairSlots: ${k} must be a whole number ≥ 1 (got ${v})`);
    }
  }

  /** Change the shares (never above the total); waiting calls that now fit start at once. */
  setShares(shares: { perGroup: number; perAgent: number }): void {
    for (const [k, v] of Object.entries(shares)) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`FairSlots: ${k} must be a whole number ≥ 1 (got ${v})`);
    }
    this.limits.perGroup = Math.min(this.limits.total, shares.perGroup);
    this.limits.perAgent = Math.min(this.limits.total, shares.perAgent);
    this.dispatch();
  }

  /** Calls holding a slot. */
  get running(): number {
    return this.busy;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.waitingCount;
  }

  /**
   * Wait for a slot; resolves with the function that gives it back (calling it twice is harmless).
   * An abort while waiting rejects with the signal's reason and leaves no trace.
   */
  acquire(owner: SlotOwner, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const list = this.waiting.get(owner.group);
        const i = list ? list.indexOf(waiter) : -1;
        if (i < 0) return; // already granted
        list!.splice(i, 1);
        if (list!.length === 0) this.waiting.delete(owner.group);
        this.waitingCount--;
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        owner,
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const list = this.waiting.get(owner.group);
      if (list) list.push(waiter);
      else this.waiting.set(owner.group, [waiter]);
      this.waitingCount++;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.dispatch();
    });
  }

  private dispatch(): void {
    const { total, perGroup, perAgent } = this.limits;
    let granted = true;
    while (granted && this.busy < total && this.waitingCount > 0) {
      granted = false;
      for (const [group, list] of this.waiting) {
        if ((this.byGroup.get(group) ?? 0) >= perGroup) continue;
        const i = list.findIndex((w) => w.owner.agent === undefined || (this.byAgent.get(w.owner.agent) ?? 0) < perAgent);
        if (i < 0) continue;
        const [w] = list.splice(i, 1);
        // The group served goes to the back of the round.
        this.waiting.delete(group);
        if (list.length > 0) this.waiting.set(group, list);
        this.waitingCount--;
        this.start(w!);
        granted = true;
        break;
      }
    }
  }

  private start(w: Waiter): void {
    const { group, agent } = w.owner;
    this.busy++;
    this.byGroup.set(group, (this.byGroup.get(group) ?? 0) + 1);
    if (agent !== undefined) this.byAgent.set(agent, (this.byAgent.get(agent) ?? 0) + 1);
    let released = false;
    w.grant(() => {
      if (released) return;
      released = true;
      this.busy--;
      decrement(this.byGroup, group);
      if (agent !== undefined) decrement(this.byAgent, agent);
      this.dispatch();
    });
  }
}

function decrement(m: Map<string, number>, key: string): void {
  const n = (m.get(key) ?? 0) - 1;
  if (n <= 0) m.delete(key);
  else m.set(key, n);
}
