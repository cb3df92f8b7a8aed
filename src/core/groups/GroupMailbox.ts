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
 * The mailbox knows which task holds each group, not which code is running: code inside a task
 * that changes the group, records or steps outside simply acts as the group's holder, and code
 * inside a task that sends to its own group again says so by passing its task (`via`), or it would
 * wait for itself. Why not AsyncLocalStorage, which would tell the running task itself: on Node 20
 * it makes every promise of the process pay for async hooks, about a tenth of a busy daemon's CPU.
 *
 * That knowledge is what the checks use (`check`, on in the test suite): each task then runs under
 * AsyncLocalStorage, and code that changes a group or steps outside without holding it, or sends
 * to the group it holds without `via`, is refused loudly. Work a task starts and does not wait for
 * (a round, a chat's delivery queue, a summary) is started `detached`, so that the checks see it
 * as outside every task, as it is.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One task of a group's mailbox. */
export class GroupTask {
  /** The task holds its group now. */
  held = false;
  /** The task has ended. */
  done = false;
  /** While the task queues up to hold its group again. */
  regaining: Promise<void> | undefined;
  constructor(readonly groupId: string, readonly mailbox: GroupMailbox) {}
}

/** A first-come first-served lock per group. */
class Turnstile {
  private readonly waiting = new Map<string, Array<() => void>>();

  /** Takes the group at once when nobody has it (true); else `enter` waits in line. */
  tryEnter(groupId: string): boolean {
    if (this.waiting.has(groupId)) return false;
    this.waiting.set(groupId, []);
    return true;
  }

  /** Resolves once the group is ours; call `leave` to hand it to the next in line. */
  enter(groupId: string): Promise<void> {
    if (this.tryEnter(groupId)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.get(groupId)!.push(resolve));
  }

  leave(groupId: string): void {
    const line = this.waiting.get(groupId);
    const next = line?.shift();
    if (next) next();
    else this.waiting.delete(groupId);
  }
}

/** Which task's code is running, kept only while checking. One for every mailbox of the process. */
const running = new AsyncLocalStorage<GroupTask | undefined>();

/** Code touched a group the way only its holder may. */
export class NotTheHolderError extends Error {}

export class GroupMailbox {
  private readonly turnstile = new Turnstile();
  /** The task holding each group now. */
  private readonly holders = new Map<string, GroupTask>();
  /** How many tasks are not settled yet, per group, and who waits for none (`onIdle`). */
  private readonly open = new Map<string, { tasks: number; idle: Array<() => void> }>();
  private readonly check: boolean;

  /** `check`: verify every holder's claim (see the top of this file); on when CHORUS_CHECK_WRITERS=1. */
  constructor(opts: { check?: boolean } = {}) {
    this.check = opts.check ?? process.env.CHORUS_CHECK_WRITERS === '1';
  }

  /**
   * Run `task` as the group's writer, once every task sent to the group before it has let go of
   * it. `via`: the task the caller runs in; when it holds this group, `task` runs at once, as part
   * of it.
   */
  send<T>(groupId: string, task: (t: GroupTask) => T | Promise<T>, via?: GroupTask): Promise<T> {
    if (via && via.groupId === groupId && via.mailbox === this && via.held && !via.done) {
      try {
        return Promise.resolve(task(via));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    if (this.check) {
      const me = running.getStore();
      if (me && me.mailbox === this && me.groupId === groupId && me.held && !me.done) {
        return Promise.reject(new NotTheHolderError(`a task of group ${groupId} sent to its own group without passing itself: it would wait for itself`));
      }
    }
    const t = new GroupTask(groupId, this);
    this.opened(groupId);
    // A group nobody holds is taken at once, without a turn of the event loop.
    if (this.turnstile.tryEnter(groupId)) return this.run(t, task);
    return this.turnstile.enter(groupId).then(() => this.run(t, task));
  }

  /** Run a task that has just taken its group; it lets go when it settles. (Written with `then`
   * rather than `async`: every message passes here several times, and each promise counts.) */
  private run<T>(t: GroupTask, task: (t: GroupTask) => T | Promise<T>): Promise<T> {
    this.hold(t);
    let out: T | Promise<T>;
    try {
      out = this.check ? running.run(t, task, t) : task(t);
    } catch (err) {
      this.end(t);
      return Promise.reject(err);
    }
    if (!(out instanceof Promise)) {
      this.end(t);
      return Promise.resolve(out);
    }
    return out.then(
      (v) => (this.end(t), v),
      (err: unknown) => {
        this.end(t);
        throw err;
      },
    );
  }

  private end(t: GroupTask): void {
    t.done = true;
    if (t.held) this.letGo(t);
    this.closed(t.groupId);
  }

  /**
   * The group's holder waits for something slow without holding it (a model call, a tool, a post,
   * a sleep), then queues up to hold it again. When no task holds the group it simply runs `wait`.
   * Only the holder may call it with its group's id; code outside every task passes none.
   */
  outside<T>(groupId: string, wait: () => Promise<T>): Promise<T> {
    const t = this.holders.get(groupId);
    if (!t) return this.waitFor(wait);
    if (this.check && running.getStore() !== t) return Promise.reject(new NotTheHolderError(`code that does not hold group ${groupId} tried to step outside for it`));
    this.letGo(t);
    return this.waitFor(wait).then(
      (v) => this.back(t, () => v),
      (err: unknown) =>
        this.back(t, () => {
          throw err;
        }),
    );
  }

  /** `wait`, outside every task, as a promise even when it throws at once. */
  private waitFor<T>(wait: () => Promise<T>): Promise<T> {
    try {
      return Promise.resolve(this.detached(wait));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** The task takes its group back (at once when nobody came meanwhile, else in line), then `then`. */
  private back<T>(t: GroupTask, then: () => T): T | Promise<T> {
    return this.regainNow(t) ? then() : this.regain(t).then(then);
  }

  private regainNow(t: GroupTask): boolean {
    if (t.held || t.done) return true;
    if (!this.turnstile.tryEnter(t.groupId)) return false;
    this.hold(t);
    return true;
  }

  private hold(t: GroupTask): void {
    t.held = true;
    this.holders.set(t.groupId, t);
  }

  private letGo(t: GroupTask): void {
    t.held = false;
    if (this.holders.get(t.groupId) === t) this.holders.delete(t.groupId);
    this.turnstile.leave(t.groupId);
  }

  private async regain(t: GroupTask): Promise<void> {
    while (!t.held && !t.done) {
      if (!t.regaining) {
        t.regaining = this.turnstile.enter(t.groupId).then(() => {
          t.regaining = undefined;
          if (t.done) this.turnstile.leave(t.groupId);
          else this.hold(t);
        });
      }
      await t.regaining;
    }
  }

  /**
   * Does the code running now hold this group? Without checks: does a task hold it (code that
   * changes a group is its holder's, see the top of this file).
   */
  holds(groupId: string): boolean {
    const t = this.holders.get(groupId);
    if (!t) return false;
    return !this.check || running.getStore() === t;
  }

  /** Start work that outlives the current task (a round, a delivery queue): it runs outside every task. */
  detached<T>(fn: () => T): T {
    return this.check && running.getStore() ? running.run(undefined, fn) : fn();
  }

  private opened(groupId: string): void {
    const o = this.open.get(groupId);
    if (o) o.tasks++;
    else this.open.set(groupId, { tasks: 1, idle: [] });
  }

  private closed(groupId: string): void {
    const o = this.open.get(groupId)!;
    if (--o.tasks > 0) return;
    this.open.delete(groupId);
    for (const wake of o.idle) wake();
  }

  /** Resolves once the group has no task waiting or running. */
  onIdle(groupId: string): Promise<void> {
    const o = this.open.get(groupId);
    return o ? new Promise((resolve) => o.idle.push(resolve)) : Promise.resolve();
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
