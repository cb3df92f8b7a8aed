/**
 * Running one round: plan who speaks, run its turns — one at a time, or the
 * leading ones at once (`execution` / `voluntary_execution: parallel`) — until the queue is empty,
 * `/stop`, shutdown or the daily budget ends it, then write the round done and log its line. One
 * agent's turn is TurnRunner's. The round's remaining turns live in the group file and each
 * turn's outcome is written together with its reply, so a restart resumes where it stopped and
 * answers nothing twice.
 */
import type { GroupDoc, PlannedTurn, RoundRecord } from '../records.js';
import { LlmError } from '../errors.js';
import { ContextBudgets } from '../session/contextBudget.js';
import { planRound } from './planning.js';
import { Summarizer } from '../session/summary.js';
import { budgetLevel } from './budget.js';
import { budgetRefuses, budgetWarning } from './budgetNotices.js';
import { decide } from './decisions.js';
import type { RoundDeps } from './RoundDeps.js';
import { logRound, newTally, type RoundTally } from './RoundTally.js';
import { enoughReplies, TurnRunner, type TurnControl } from './TurnRunner.js';

export type { RoundDeps };

export class RoundRunner {
  /** Context windows and the token calibration learned from usage, per model. */
  readonly budgets: ContextBudgets;
  private readonly summaries: Summarizer;
  private readonly turns: TurnRunner;
  /** Per group: what `/stop` aborts (its rounds' model calls). Replaced after each stop. */
  private readonly stops = new Map<string, AbortController>();
  /**
   * Per group: rounds whose turn waits for a person's decision on a tool call, and until when. In
   * memory only: after a restart the turn runs again, finds its call still waiting and steps aside
   * again. The group's other rounds run meanwhile.
   */
  private readonly parked = new Map<string, Map<string, number>>();

  constructor(
    private readonly d: RoundDeps,
    /** The group has a round to run again (a parked one's deadline passed). */
    private readonly wake: (g: GroupDoc) => void,
  ) {
    this.budgets = new ContextBudgets({ contextTokens: d.models.contextTokens, defaultContextTokens: d.models.defaultContextTokens });
    // A group whose daily budget is used up makes no summary calls either (its history is kept).
    this.summaries = new Summarizer(d, this.budgets, (g) => !budgetLevel(g, d.clock.now()).over);
    this.turns = new TurnRunner(d, this.budgets, this.summaries);
  }

  /** Resolves once no background summary is in flight (tests, shutdown). */
  settled(): Promise<void> {
    return this.summaries.settled();
  }

  /** The signal `/stop` aborts for the group's work from now on. */
  private stopSignal(groupId: string): AbortSignal {
    let c = this.stops.get(groupId);
    if (!c) this.stops.set(groupId, (c = new AbortController()));
    return c.signal;
  }

  /**
   * `/stop`: cancel the group's model calls in flight and end the round that is running (the
   * caller finishes the recorded rounds). Rounds that start later get a fresh signal.
   */
  stop(groupId: string, reason: string): void {
    const c = this.stops.get(groupId);
    this.stops.delete(groupId);
    c?.abort(new LlmError(reason, 'aborted', true));
  }

  /**
   * The group's next round. Messages that waited while a round ran are answered as one batch: the
   * rounds not planned yet merge into the first of them. Not written on its own: the next record
   * carries the merge, and a restart before it merges the same rounds again.
   */
  batchWaiting(g: GroupDoc): RoundRecord | undefined {
    const round = g.rounds.find((r) => !this.isParked(g.id, r.id));
    if (!round) return undefined;
    const waiting = round.planned ? [] : g.rounds.filter((r) => !r.planned);
    if (waiting.length <= 1) return round;
    const rest = waiting.slice(1);
    this.d.groups.updateRound(g, round, {
      triggerIds: [...round.triggerIds, ...rest.flatMap((r) => r.triggerIds)],
      addressed: [...new Set([...round.addressed, ...rest.flatMap((r) => r.addressed)])],
      forced: round.forced || rest.some((r) => r.forced),
    });
    for (const r of rest) this.d.groups.finishRound(g, r);
    this.d.logger.info({ group: g.id, messages: waiting.length }, 'answering waiting messages as one batch');
    return round;
  }

  /** Run `round` to the end (or until shutdown or `/stop`). Removes it from the group when done. */
  async run(g: GroupDoc, round: RoundRecord): Promise<void> {
    const stop = this.stopSignal(g.id);
    const notes = new Set<string>();
    const startedAt = this.d.clock.now();
    const tally = newTally();
    if (!round.planned) {
      // Over budget: no plan, so no selector call either; the round ends unanswered.
      if (await budgetRefuses(this.d, g, round)) this.d.groups.updateRound(g, round, { planned: true });
      // A deterministic plan is not written on its own: the first turn's write carries it (with
      // the round-robin position it took), and a restart before that re-derives the same plan. A
      // selector's choice is written at once.
      else if (await planRound(this.d, g, round, stop)) await this.d.recorder.record(g);
    }
    const plain: TurnControl = { stop, signal: stop, inOrder: (call) => call, stream: true, cancelled: [], decided: () => undefined };
    while (round.queue.length > 0 && plain.parkedUntil === undefined && !stop.aborted && !this.d.shutdown.aborted && !g.state.archived && this.d.groups.usable(g)) {
      if (g.config.voluntary_execution === 'parallel' && round.queue[0]!.reason === 'voluntary') {
        await this.voluntaryBatch(g, round, notes, tally, stop);
      } else {
        const batch = this.parallelBatch(g, round);
        // Turns side by side are one task each; the round waits for them without holding the group.
        if (batch.length > 1) await this.d.mailbox.outside(g.id, () => Promise.all(batch.map((t) => this.d.mailbox.send(g.id, () => this.turns.run(g, round, t, notes, tally, plain)))));
        else await this.turns.run(g, round, round.queue[0]!, notes, tally, plain);
      }
      await budgetWarning(this.d, g, round);
    }
    if (this.d.shutdown.aborted || !this.d.groups.usable(g)) return;
    if (plain.parkedUntil !== undefined && !stop.aborted) return this.park(g, round, plain.parkedUntil);
    if (stop.aborted) {
      // `/stop` finished the round in the record of its notice; nothing more to write.
      this.d.logger.info({ group: g.id, round: round.id, answered: tally.answered }, `round ${round.id} in ${g.id} stopped`);
      return;
    }
    await this.d.recorder.record(g, { round: { record: round, done: true } });
    const ms = this.d.clock.now() - startedAt;
    this.d.metrics.roundFinished(ms / 1000);
    logRound(this.d.logger, g, round, tally, ms);
  }

  /** Is this round waiting for a person's decision on a tool call? */
  isParked(groupId: string, roundId: string): boolean {
    return this.parked.get(groupId)?.has(roundId) ?? false;
  }

  /** A decision was made in the group: its parked rounds run again (those still waiting step aside again). */
  unpark(groupId: string): void {
    this.parked.delete(groupId);
  }

  private park(g: GroupDoc, round: RoundRecord, until: number): void {
    let rounds = this.parked.get(g.id);
    if (!rounds) this.parked.set(g.id, (rounds = new Map()));
    rounds.set(round.id, until);
    this.d.logger.info({ group: g.id, round: round.id }, 'round waits for a tool call to be approved; the group goes on');
    // At the deadline the call is refused and the turn goes on without it.
    this.d.clock.sleep(Math.max(0, until - this.d.clock.now()) + 1, this.d.shutdown).then(
      () => {
        if (this.parked.get(g.id)?.get(round.id) !== until) return;
        this.parked.get(g.id)!.delete(round.id);
        this.wake(g);
      },
      () => undefined,
    );
  }

  /** With `execution: parallel`, the leading human-addressed turns run at once, last_speaker after. */
  private parallelBatch(g: GroupDoc, round: RoundRecord): PlannedTurn[] {
    if (g.config.execution !== 'parallel') return [];
    const out: PlannedTurn[] = [];
    for (const t of round.queue) {
      if (t.reason !== 'addressed' || t.agentId === g.config.last_speaker) break;
      out.push(t);
    }
    return out;
  }

  /**
   * `voluntary_execution: parallel`: the leading voluntary turns are asked at once. Their outcomes
   * are settled one at a time in candidate order (each waits for the ones before it), so the
   * replies delivered are the first `max_voluntary_responders` in that order whichever model
   * answered first, and each outcome is written exactly as in a sequential round, so nothing is
   * delivered twice. After a crash mid-batch the candidates already asked (`round.asked`, written
   * with the first outcome) are not asked again: a voluntary turn is never owed to anyone. Once
   * enough replies are in, the calls still running are cancelled and later replies are discarded
   * (a quiet decision); they are not shown to anyone and the agent's mailbox is kept, so it sees
   * those messages again next time. Replies are not streamed here (they may be discarded).
   */
  private async voluntaryBatch(g: GroupDoc, round: RoundRecord, notes: Set<string>, tally: RoundTally, stop: AbortSignal): Promise<void> {
    const batch: PlannedTurn[] = [];
    for (const t of round.queue) {
      if (t.reason !== 'voluntary') break;
      batch.push(t);
    }
    const enough = new AbortController();
    const signal = AbortSignal.any([stop, enough.signal]);
    const cancelled: string[] = [];
    let before: Promise<unknown> = Promise.resolve();
    const runs = batch.map((t) => {
      const prev = before;
      let decided!: () => void;
      const settled = new Promise<void>((r) => (decided = r));
      const ctl: TurnControl = {
        stop,
        signal,
        stream: false,
        cancelled,
        // Waiting for the turns before it must not hold the group they need to settle.
        inOrder: (call) => settledAfter(call, () => this.d.mailbox.outside(g.id, () => prev)),
        decided: () => {
          if (enoughReplies(g, round)) enough.abort(new LlmError('enough replies', 'aborted', true));
          decided();
        },
      };
      before = settled;
      return () => this.d.mailbox.send(g.id, () => this.turns.run(g, round, t, notes, tally, ctl)).finally(() => ctl.decided());
    });
    await this.d.mailbox.outside(g.id, () => Promise.all(runs.map((run) => run())));
    if (cancelled.length > 0 && !stop.aborted) {
      const names = cancelled.map((id) => this.d.agents.get(id)?.name ?? id).join(', ');
      await decide(this.d, g, round, 'discarded', undefined, `not needed: ${names} (enough replies)`);
    }
  }
}

/** `call`'s outcome, once `prev` has settled too (a batch settles its turns in candidate order). */
function settledAfter<T>(call: Promise<T>, prev: () => Promise<unknown>): Promise<T> {
  return call.then(
    (v) => prev().then(() => v),
    (err: unknown) => prev().then(() => Promise.reject(err)),
  );
}
