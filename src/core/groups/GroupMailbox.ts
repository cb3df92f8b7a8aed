/**
 * One mailbox per group: the group's one writer. Everything that changes a group — a message taken
 * in, a command or a change from the page, a round's turns and their outcomes, a summary, a
 * delivery outcome, a stop, a hand-over — runs as a task sent here, and a group's tasks hold the
 * group one at a time, in the order they were sent. A task reads the group, decides and appends
 * its record in one step; the wait for the record to be durable is outside the group (the log
 * keeps the group's records in order, so nothing recorded after it can be durable before it).
 *
 * A task never holds its group while it waits for something slow: a model call, a tool, a post to
 * a platform, a cooldown, a write. It steps `outside` for that wait and queues up again after it, behind
 * whatever was sent meanwhile, so a person's message is taken in while an agent is thinking — and
 * what the task does next is decided on the group as it is then.
 *
 * `GroupWrites` asks `holds` before applying any change: a change made outside its group's task is
 * a bug, refused loudly rather than interleaved with the task that holds the group.
 *
 * Which task is running is known through AsyncLocalStorage, so a task may call code that sends to
 * the same group again (a command that records a notice) without waiting for itself. Work a task
 * starts and does not wait for (a round, a chat's delivery queue, a summary) is started
 * `detached`, outside every task: otherwise it would count as part of the task that started it,
 * and its changes would be refused once that task has ended. Work that runs side by side (a
 * round's parallel turns) is one task each.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One task of a group's mailbox, as the code running inside it sees it. */
interface Slot {
  mailbox: GroupMailbox;
  groupId: string;
  /** The task holds its group now. */
  held: boolean;
  /** The task has ended: continuations it left behind count as outside. */
  done: boolean;
  /** While the task queues up to hold its group again. */
  regaining?: Promise<void> | undefined;
}

/** A first-come first-served lock per group. */
class Turnstile {
  private readonly waiting = new Map<string, Array<() => void>>();

  /** Resolves once the group is ours; call `leave` to hand it to the next in line. */
  enter(groupId: string): Promise<void> {
    const line = this.waiting.get(groupId);
    if (!line) {
      this.waiting.set(groupId, []);
      return Promise.resolve();
    }
    return new Promise((resolve) => line.push(resolve));
  }

  leave(groupId: string): void {
    const line = this.waiting.get(groupId);
    const next = line?.shift();
    if (next) next();
    else this.waiting.delete(groupId);
  }

}

/**
 * Which task is running, for every mailbox of the process. One for all: Node keeps every
 * AsyncLocalStorage it has seen and visits each of them for every promise made, so one per
 * mailbox would make a process that builds many routers (tests, benchmarks) slower with each.
 */
const current = new AsyncLocalStorage<Slot | undefined>();

export class GroupMailbox {
  private readonly turnstile = new Turnstile();
  /** Tasks not settled yet, per group (for `onIdle`). */
  private readonly open = new Map<string, Set<Promise<unknown>>>();

  /**
   * Run `task` as the group's writer, once every task sent to the group before it has let go of
   * it. Called from inside a task that holds the same group, it runs at once.
   */
  send<T>(groupId: string, task: () => T | Promise<T>): Promise<T> {
    if (this.holds(groupId)) {
      try {
        return Promise.resolve(task());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const slot: Slot = { mailbox: this, groupId, held: false, done: false };
    const run = (async () => {
      await this.turnstile.enter(groupId);
      slot.held = true;
      try {
        return await current.run(slot, task);
      } finally {
        slot.done = true;
        if (slot.held) {
          slot.held = false;
          this.turnstile.leave(groupId);
        }
      }
    })();
    this.track(groupId, run);
    return run;
  }

  /**
   * Wait for something slow without holding the group (a model call, a tool, a post, a sleep),
   * then queue up to hold it again. Outside a task of this group it simply runs `wait`.
   */
  async outside<T>(groupId: string, wait: () => Promise<T>): Promise<T> {
    const slot = current.getStore();
    if (!slot || slot.mailbox !== this || slot.groupId !== groupId || slot.done) return this.detached(wait);
    if (slot.held) {
      slot.held = false;
      this.turnstile.leave(groupId);
    }
    try {
      return await this.detached(wait);
    } finally {
      await this.regain(slot);
    }
  }

  private async regain(slot: Slot): Promise<void> {
    while (!slot.held && !slot.done) {
      if (!slot.regaining) {
        slot.regaining = this.turnstile.enter(slot.groupId).then(() => {
          slot.regaining = undefined;
          if (slot.done) this.turnstile.leave(slot.groupId);
          else slot.held = true;
        });
      }
      await slot.regaining;
    }
  }

  /** Does the code running now hold this group (as its task, or a part of it)? */
  holds(groupId: string): boolean {
    const slot = current.getStore();
    return slot !== undefined && slot.mailbox === this && slot.held && !slot.done && slot.groupId === groupId;
  }

  /** Start work that outlives the current task (a round, a delivery queue): it runs outside every task. */
  detached<T>(fn: () => T): T {
    // Not `exit`: on Node 20 it switches the async hooks off and on again around every call.
    return current.getStore() ? current.run(undefined, fn) : fn();
  }

  private track(groupId: string, p: Promise<unknown>): void {
    let set = this.open.get(groupId);
    if (!set) this.open.set(groupId, (set = new Set()));
    set.add(p);
    const forget = () => {
      set.delete(p);
      if (set.size === 0 && this.open.get(groupId) === set) this.open.delete(groupId);
    };
    p.then(forget, forget);
  }

  /** Resolves once the group has no task waiting or running. */
  async onIdle(groupId: string): Promise<void> {
    while (this.open.get(groupId)?.size) await Promise.allSettled([...this.open.get(groupId)!]);
  }

  /** Resolves once every group busy now has gone idle. */
  async onIdleAll(): Promise<void> {
    await Promise.all([...this.open.keys()].map((id) => this.onIdle(id)));
  }

  /** No group has a task waiting or running. */
  get idle(): boolean {
    return this.open.size === 0;
  }
}
