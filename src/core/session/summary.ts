/**
 * Folding old history into a running summary: past `history_turns` messages, the oldest
 * half is summarised by one summary-model call and dropped. A failed summary keeps the history
 * (nothing lost) unless it has grown past twice the window, then the oldest turns are cut.
 *
 * Off the critical path: the summary is started after the turn that needs it and is
 * not awaited by the round, so a slow summary model never delays a reply. Its result is applied
 * as a task of the group's mailbox (fold and usage in one record), and only when the
 * history it summarised is still the session's oldest (a `/group reset`, a reload after a failed
 * write or another fold in between make it stale, and it is thrown away). At shutdown the gate
 * aborts the call and nothing is written; `settled()` lets the router wait for what is in flight.
 *
 * The summary model: `llm.summary_model`, or the agent's own model when it is unset (the
 * default for OpenAI-compatible servers, which serve only the models they have).
 */
import type { GroupDoc, SessionDoc } from '../records.js';
import type { AgentDef } from '../types.js';
import type { LlmResponse } from '../ports.js';
import { describeError } from '../errors.js';
import { buildSummaryRequest } from './prompt.js';
import type { RoundDeps } from '../router/RoundDeps.js';
import type { ContextBudgets } from './contextBudget.js';
import { textUnits } from './tokenEstimate.js';

/** Longest summary asked for, in tokens. */
const SUMMARY_MAX_TOKENS = 512;
const SUMMARY_SYSTEM = 'You write compact, factual summaries of conversations.';

export class Summarizer {
  /** Summaries in flight, by group and agent: at most one per session. */
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly d: RoundDeps,
    private readonly budgets: ContextBudgets,
    /** Whether the group may still call models (its daily budget); summaries are skipped when not. */
    private readonly mayCall: (g: GroupDoc) => boolean = () => true,
  ) {}

  /** Start folding `s` in the background when its history has outgrown the group's window. */
  schedule(g: GroupDoc, agent: AgentDef, s: SessionDoc): void {
    if (s.history.length <= g.config.history_turns) return;
    const key = `${g.id}\u0000${agent.id}`;
    if (this.running.has(key) || this.d.shutdown.aborted || !this.mayCall(g)) return;
    // Not part of the turn that started it: the summary applies its result as its own task.
    const p = this.d.mailbox
      .detached(() => this.fold(g, agent, s))
      .catch((err: unknown) => this.d.logger.warn({ group: g.id, agent: agent.id, err: describeError(err) }, 'summary could not be recorded'))
      .finally(() => this.running.delete(key));
    this.running.set(key, p);
  }

  /** Resolves once no summary is in flight. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }

  private async fold(g: GroupDoc, agent: AgentDef, s: SessionDoc): Promise<void> {
    const d = this.d;
    const limit = g.config.history_turns;
    // Keep an even number of recent messages so the history still starts with a user turn.
    let keep = Math.floor(limit / 2);
    if (keep % 2 === 1) keep--;
    const fold = s.history.slice(0, s.history.length - keep);
    const previous = s.summary;
    const model = d.models.summaryModel ?? agent.model ?? d.models.model;
    // The summary request must fit the summary model's window too.
    const scope = agent.model === model || !d.models.summaryModel ? agent : undefined;
    // A small window keeps most of itself for the conversation to fold: a quarter for the summary.
    const replyTokens = Math.min(SUMMARY_MAX_TOKENS, Math.max(128, Math.floor(this.budgets.window(model, scope) / 4)));
    const room = this.budgets.room(model, scope, replyTokens);
    const request = fitSummaryRequest(agent, previous, fold, Math.max(200, Math.floor((room.promptTokens - 60) * this.budgets.ratio(model))));
    // Still the same history (nothing reset, reloaded or folded meanwhile)?
    const unchanged = () => d.groups.usable(g) && s.summary === previous && s.history[0] === fold[0] && s.history[fold.length - 1] === fold[fold.length - 1];
    let done: { text: string; res: LlmResponse } | null = null;
    try {
      const res = await d.gate.call(
        {
          purpose: 'summary',
          model,
          system: SUMMARY_SYSTEM,
          messages: [{ role: 'user', content: request }],
          maxTokens: Math.min(SUMMARY_MAX_TOKENS, room.replyTokens),
          agent,
          groupId: g.id,
        },
        g.config.agent_reply_timeout_seconds * 1000,
        undefined,
        { holder: false },
      );
      const text = res.text.trim();
      if (!text) throw new Error('empty summary');
      this.budgets.learn(model, { units: textUnits(SUMMARY_SYSTEM) + textUnits(request), messageCount: 2 }, res.usage);
      done = { text, res };
    } catch (err) {
      if (d.shutdown.aborted) return; // aborted by the stop: nothing to write, the history is intact
      d.logger.warn({ group: g.id, agent: agent.id, err: describeError(err) }, 'summary failed; history kept');
    }
    // Applied as a task of the group: it sees the session as it is now, not as it was asked.
    await d.mailbox.send(g.id, async () => {
      if (d.shutdown.aborted || !unchanged()) return;
      if (done) {
        d.groups.foldHistory(g, agent.id, fold.length, done.text, done.res);
        d.groups.addGroupUsage(g, agent.id, done.res);
      } else if (s.history.length > 2 * limit) {
        d.groups.foldHistory(g, agent.id, s.history.length - limit - (limit % 2), s.summary);
      } else return;
      await d.recorder.record(g);
    });
  }
}

/**
 * The summary request, at most `units` long: when the turns to fold are longer, each turn keeps
 * its start (a share in proportion to its length) and says how much was left out.
 */
function fitSummaryRequest(agent: AgentDef, previous: string | null, turns: ReadonlyArray<{ role: string; content: string }>, units: number): string {
  const full = buildSummaryRequest(agent, previous, turns);
  if (textUnits(full) <= units) return full;
  const frame = textUnits(buildSummaryRequest(agent, previous, turns.map((t) => ({ ...t, content: '' })))) + turns.length * 40;
  const total = turns.reduce((n, t) => n + textUnits(t.content), 0);
  const share = Math.max(0, units - frame) / Math.max(1, total);
  const cut = turns.map((t) => {
    const n = textUnits(t.content);
    const keep = Math.floor(n * share);
    if (keep >= n) return t;
    let end = 0;
    for (let w = 0; end < t.content.length; end++) {
      w += t.content.charCodeAt(end) < 0x80 ? 1 : 3;
      if (w > keep) break;
    }
    // Never end between the two halves of a surrogate pair.
    if (end > 0 && end < t.content.length && t.content.charCodeAt(end - 1) >= 0xd800 && t.content.charCodeAt(end - 1) <= 0xdbff) end--;
    return { ...t, content: `${t.content.slice(0, end)}… [${t.content.length - end} characters left out]` };
  });
  return buildSummaryRequest(agent, previous, cut);
}
