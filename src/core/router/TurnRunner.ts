/**
 * One agent's turn in a round: the checks that may skip it (already answered,
 * mute, caps, cooldown, budget), the prompt fitted to the model's context window, the model call,
 * then a pass, an emoji reaction (agentReaction.ts), a discard or the delivered reply with the
 * turns its mentions cause. Each outcome is written in one record together with the round's
 * progress (see RoundRunner), so a restart answers nothing twice.
 */
import type { GroupDoc, PlannedTurn, RoundRecord } from '../records.js';
import type { AgentDef, ChatTurn, ReplyCut, TranscriptEntry, Usage } from '../types.js';
import { describeError, LlmError } from '../errors.js';
import { seqOfId } from '../groups/evolve.js';
import type { NewEntry } from './Recorder.js';
import { buildSystemPrompt, PASS_TOKEN, type Ask } from '../session/prompt.js';
import { DEFAULT_MAX_IMAGES } from '../session/promptFiles.js';
import type { ContextBudgets, FittedPrompt, PromptParts } from '../session/contextBudget.js';
import { judgeReply, passRules } from './pass.js';
import { passStreamFilter } from '../text/passStream.js';
import { findMentions } from './mentions.js';
import { describeFailure, unrunnableCalls } from './failures.js';
import type { Summarizer } from '../session/summary.js';
import { TurnIndicators } from './turnIndicators.js';
import type { Called, GateResult, Turn, TurnControl } from './turnTypes.js';
export type { TurnControl } from './turnTypes.js';
import { HUMAN_CAUSED, mayRun } from './turnChecks.js';
import type { RoundDeps } from './RoundDeps.js';
import { countCall, type RoundTally } from './RoundTally.js';
import { decide, decision, drop } from './decisions.js';
import { budgetRefuses } from './budgetNotices.js';
import { withinContext } from './withinContext.js';
import { StoppedReply } from './stoppedReply.js';
import { PromptRefs } from '../session/promptRef.js';
import type { PromptRef } from '../types.js';
import type { ToolStep } from '../toolTypes.js';
import { AwaitingApproval, ToolTurn, addUsage, fitSteps, type ToolTurnResult } from './toolTurn.js';
import { recordAgentReaction } from './agentReaction.js';

/** The round has the voluntary replies it wants, or its turn cap is reached. */
export function enoughReplies(g: GroupDoc, round: RoundRecord): boolean {
  return round.voluntary >= g.config.max_voluntary_responders || round.capped >= g.config.max_agent_turns_per_message;
}

export class TurnRunner {
  /** Each turn's prompt by reference, written with its reply or pass line ("what did it see?"). */
  private readonly refs = new PromptRefs();
  private readonly toolTurn: ToolTurn;

  constructor(
    private readonly d: RoundDeps,
    /** Context windows and the token calibration learned from usage, per model (shared with the summaries). */
    private readonly budgets: ContextBudgets,
    private readonly summaries: Summarizer,
  ) {
    this.toolTurn = new ToolTurn(d);
  }

  /** Run turn `t` of `round`: checks, prompt, model call, pass or delivery, reactions. */
  async run(g: GroupDoc, round: RoundRecord, t: PlannedTurn, notes: Set<string>, tally: RoundTally, ctl: TurnControl): Promise<void> {
    const agent = this.d.agents.get(t.agentId);
    if (!agent || !g.participants.includes(t.agentId)) return drop(this.d, g, round, t);
    const turnId = `${round.id}:${agent.id}:${t.depth}`;
    const resuming = g.state.tools?.some((c) => c.turn === turnId) ?? false;
    if (!(await mayRun(this.d, { g, round, t, agent, resuming, trigger: () => this.trigger(g, round), stop: ctl.stop }, notes))) return;
    const s = await this.prepare(g, round, t, agent, tally, ctl, turnId);
    if (await budgetRefuses(this.d, g, round)) return drop(this.d, g, round, t);
    const called = await this.call(s);
    if (called) await this.settle(s, called);
  }

  /** The turn's prompt parts, from the agent's session and what it has not seen yet. */
  private async prepare(g: GroupDoc, round: RoundRecord, t: PlannedTurn, agent: AgentDef, tally: RoundTally, ctl: TurnControl, turnId: string): Promise<Turn> {
    const session = this.d.groups.session(g, agent.id);
    const seenUpTo = g.nextSeq - 1;
    const mailbox = await this.d.groups.mailbox(g, session);
    const observations = mailbox.entries.filter((e) => e.seq <= seenUpTo);
    // Reacting is offered on a voluntary turn whose round has a person's message to react to.
    const trigger = this.trigger(g, round);
    const reactTo = t.reason === 'voluntary' && trigger && !trigger.deleted ? trigger : undefined;
    const ask = this.askFor(g, round, t, session.cursor, reactTo);
    const participants = g.participants.map((p) => this.d.agents.get(p)).filter((a): a is AgentDef => !!a);
    const system = buildSystemPrompt(agent, { title: g.title, participants, handles: (id) => this.d.handles.handlesOf(id) });
    // Fitted to the model's context window (see contextBudget); what the session records is what was sent.
    const files = { vision: agent.vision === true, max: this.d.models.maxImagesInPrompt ?? DEFAULT_MAX_IMAGES };
    const parts: PromptParts = { system, summary: session.summary, history: session.history, observations, omitted: mailbox.omitted, ask, files };
    const mustReply = ask.kind !== 'voluntary';
    return {
      g, round, t, agent, tally, ctl, turnId, session, seenUpTo, parts, reactTo, participants, mustReply,
      others: participants.filter((p) => p.id !== agent.id),
      model: agent.model ?? this.d.models.model,
      // Tools only where someone asked: a voluntary turn may be discarded, and its calls with it.
      tools: t.reason === 'voluntary' ? [] : this.d.tools.toolsFor(agent.id),
      window: 0,
    };
  }

  /** What a reply or pass line records of the prompt it answered ("what did it see?"). */
  private refOf(s: Turn, carrySummary: boolean): PromptRef {
    return this.refs.make(s.g.id, s.agent.id, s.model, s.window, s.parts, s.prompt!, s.session.summary, { carrySummary });
  }

  /** The model call (with its tool steps), streamed where the round streams; null when the turn ended without an answer. */
  private async call(s: Turn): Promise<Called | null> {
    const { g, t, agent, ctl, model, mustReply, tools } = s;
    const cfg = g.config;
    const timeout = (t.reason === 'voluntary' ? cfg.voluntary_timeout_seconds : cfg.agent_reply_timeout_seconds) * 1000;
    const shown = new TurnIndicators(this.d, g, agent);
    shown.begin(mustReply);
    // Pass rules (core/text/passScrubber): the stream shows only text that will be posted.
    const streamFilter = passStreamFilter(passRules({ agent, others: s.others, mayPass: !mustReply }));
    const stopped = ctl.stream ? this.stoppedReply(s, this.d.clock.now()) : null;
    let withTools: ToolTurnResult | undefined;
    let res: GateResult;
    try {
      res = await ctl.inOrder(withinContext(this.d, this.budgets, g, agent, model, s.parts, async (p) => {
        s.prompt = p;
        s.window = this.budgets.window(model, agent);
        const request = {
          purpose: 'turn' as const,
          model,
          system: p.system,
          summary: p.summary,
          messages: p.messages,
          maxTokens: p.maxTokens,
          agent,
          groupId: g.id,
          mustReply,
          mayReact: !!s.reactTo,
          readFile: p.files.length > 0 ? (id: string) => this.d.files.read(id) : undefined,
          onDelta: ctl.stream
            ? (chunk: string) => {
                const text = streamFilter(chunk);
                if (text === null) return;
                shown.setTyping(true);
                stopped?.add(text);
                this.d.events.emit({ type: 'delta', groupId: g.id, agentId: agent.id, turnId: s.turnId, text });
              }
            : undefined,
        };
        if (tools.length === 0) return this.d.gate.call(request, timeout, ctl.signal);
        // Tool definitions and results take what the fitted prompt left of the window.
        const room = p.budgetTokens - p.estimatedTokens - this.budgets.tokens(model, JSON.stringify(tools.map((x) => [x.name, x.description, x.inputSchema])));
        const names = s.participants.map((x) => x.name);
        const scope = { g, round: s.round, agent, turn: s.turnId, threadId: this.trigger(g, s.round)?.threadId, tools, names, stop: ctl.stop, typing: shown.setTyping, fit: (steps: ToolStep[]) => fitSteps(steps, room, (x: string) => this.budgets.tokens(model, x)) };
        withTools = await this.toolTurn.run(scope, (extra) => this.d.gate.call({ ...request, ...extra }, timeout, ctl.signal));
        // The first call's prompt is the fitted one: the window calibration learns from its usage.
        return { ...withTools.res, usage: withTools.first };
      }));
      if (withTools) res = withTools.res;
      // Only calls nothing runs (no tools offered, or text required): a person asked, so no silent pass.
      if (mustReply && !res.text.trim() && res.toolCalls?.length) throw unrunnableCalls(res.toolCalls);
    } catch (err) {
      stopped?.dispose();
      shown.end();
      await this.failed(s, err, stopped?.kept);
      return null;
    }
    stopped?.dispose();
    shown.end();
    if (ctl.stop.aborted) {
      await this.cancelledTurn(s.g, s.round, t, ctl, stopped?.kept); // answered just as /stop came
      return null;
    }
    return { res, withTools, streamed: streamFilter.streamed, rest: () => streamFilter.end().rest };
  }

  /** What `/stop` keeps of a reply that was streaming: the agent remembers saying it, as everyone saw. */
  private stoppedReply(s: Turn, callStarted: number): StoppedReply {
    return new StoppedReply(this.d, s.g, s.ctl.stop, (text) => {
      // Usage never arrived (the call was cancelled).
      const usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
      if (s.prompt) this.d.groups.recordTurn(s.g, s.agent.id, [sentTurn(s.prompt), { role: 'assistant', content: text }], s.seenUpTo, { usage, costUsd: null });
      return this.replyEntry(s.g, s.round, s.t, s.agent, text, { model: s.model, usage, latencyMs: this.d.clock.now() - callStarted, costUsd: null, cut: 'stopped', prompt: s.prompt ? this.refOf(s, true) : undefined });
    });
  }

  /** The call failed, was cancelled, or waits for a person's approval. */
  private async failed(s: Turn, err: unknown, kept: TranscriptEntry | null | undefined): Promise<void> {
    const { g, round, t, agent, ctl } = s;
    if (this.d.shutdown.aborted) return; // the turn stays queued and runs after restart
    // A tool call waits for a person: the turn stays queued, its round steps aside until then.
    if (err instanceof AwaitingApproval) return void (ctl.parkedUntil = Math.min(ctl.parkedUntil ?? Infinity, err.deadline));
    if (ctl.signal.aborted) return this.cancelledTurn(g, round, t, ctl, kept);
    const code = err instanceof LlmError ? err.code : 'error';
    const why = describeFailure(code);
    this.d.metrics.turnFailed(agent.id, code);
    s.tally.failed.push({ agent: agent.id, reason: code });
    this.d.logger.warn(
      { group: g.id, agent: agent.id, model: s.model, turn: t.reason, code, err: describeError(err), ...(why.hint ? { hint: why.hint } : {}) },
      `${agent.name} could not reply (${why.reason}): ${describeError(err)}${why.hint ? ` — ${why.hint}` : ''}`,
    );
    drop(this.d, g, round, t);
    if (s.tools.length > 0) this.d.groups.toolChange(g, { t: 'tools-done', turn: s.turnId });
    // The mailbox is not drained: the agent sees these observations next time.
    // Nobody asked a voluntary turn: its failure is a quiet decision line, not a ⚠ in the chat
    // (one "anyone hungry?" must not bring three notices). Someone did ask the others.
    if (t.reason === 'voluntary') return decide(this.d, g, round, 'error', agent.id, `${agent.name} could not reply (${why.reason})`);
    await this.d.recorder.notice(g, `⚠ ${agent.name} could not reply (${why.reason})`, { decision: 'error', agentId: agent.id, round });
  }

  /** The answer: a pass, an emoji reaction, a reply not needed any more, or the reply itself. */
  private async settle(s: Turn, called: Called): Promise<void> {
    const { g, round, t, agent, tally, ctl } = s;
    const { groups } = this.d;
    const res = called.res;
    const verdict = judgeReply(res.text, { agent, others: s.others, mayPass: !s.mustReply, streamed: called.streamed, mayReact: !!s.reactTo });
    const text = verdict.text;
    if (verdict.foreignLabels.length > 0) {
      this.d.logger.warn({ group: g.id, agent: agent.id, labels: verdict.foreignLabels }, `${agent.name} began its reply with another participant's name label; stripped`);
    }
    if (!verdict.pass && text) {
      const rest = called.rest();
      if (rest !== null) this.d.events.emit({ type: 'delta', groupId: g.id, agentId: agent.id, turnId: s.turnId, text: rest });
    }
    if (!groups.usable(g)) return; // reloaded after a failed write while the model was answering
    // The turn's outcome in the agent's session, usage and the round's queue.
    const turn = (said: string) => {
      if (s.tools.length > 0) groups.toolChange(g, { t: 'tools-done', turn: s.turnId }); // its tool steps are in the transcript
      groups.recordTurn(g, agent.id, [sentTurn(s.prompt!), { role: 'assistant', content: said }], s.seenUpTo, res);
      groups.addGroupUsage(g, agent.id, res);
      drop(this.d, g, round, t);
      countCall(tally, res);
    };
    const passed = () => {
      turn(PASS_TOKEN);
      this.d.metrics.passed(agent.id);
      tally.passed.push(agent.id);
      // The pass line carries the turn's reference: a later turn's history is rebuilt from it.
      const line = decision(this.d, 'pass', agent.id, `${agent.name} passed`, round.id);
      const recorded = this.d.recorder.record(g, { entries: [{ ...line, decision: { ...line.decision!, prompt: this.refOf(s, false) } }] }).then(() => undefined);
      ctl.decided();
      return recorded;
    };
    if (verdict.reaction && s.reactTo) return recordAgentReaction(this.d, { g, round, agent, emoji: verdict.reaction, trigger: s.reactTo, tally, turn, passed, ref: () => this.refOf(s, false), decided: () => ctl.decided() });
    if (!verdict.pass && text && t.reason === 'voluntary' && (enoughReplies(g, round) || !round.queue.includes(t))) {
      // A parallel batch asked more agents than it needed: the replies before this one in
      // candidate order filled it (or a reaction replaced this turn). Not shown, not remembered:
      // the agent's mailbox stays as it was; only the cost is counted.
      groups.addGroupUsage(g, agent.id, res);
      drop(this.d, g, round, t);
      const recorded = decide(this.d, g, round, 'discarded', agent.id, `${agent.name}'s reply was not needed (enough replies already)`);
      ctl.decided();
      return recorded;
    }
    if (verdict.pass || !text) return passed();
    turn(text);
    await this.deliver(s, called, text);
  }

  /** Record the reply with the turns its mentions cause, in one record with the round's progress. */
  private async deliver(s: Turn, called: Called, text: string): Promise<void> {
    const { g, round, t, agent } = s;
    const { res, withTools } = called;
    const ref = this.refOf(s, true);
    // "details" shows the whole turn: its tool steps' calls too.
    const figures = withTools ? { usage: addUsage(res.usage, withTools.stepUsage), costUsd: withTools.stepCostUsd === null || res.costUsd == null ? null : withTools.stepCostUsd + res.costUsd } : { usage: res.usage, costUsd: res.costUsd ?? null };
    const made = withTools?.attachments.length ? { attachments: withTools.attachments } : {};
    const reply = { ...this.replyEntry(g, round, t, agent, text, { model: res.model, ...figures, latencyMs: res.latencyMs, cut: res.cut, prompt: ref }), ...made };
    this.d.groups.noteSpoke(g, agent.id, s.seenUpTo);
    const capped = t.reason === 'voluntary' || t.reason === 'reaction' || t.reason === 'selected';
    if (capped) this.d.groups.updateRound(g, round, { capped: round.capped + 1, voluntary: round.voluntary + (t.reason === 'voluntary' ? 1 : 0) });
    const depthNote = this.queueReactions(g, round, t, agent, text);
    const replyTo = HUMAN_CAUSED.has(t.reason) ? this.trigger(g, round)?.platformMessageId : undefined;
    // One record: the reply, the agent's turn and cursor, its cooldown and the round's progress.
    // A cut reply says why in a quiet line: its "…" alone does not (see LlmGate for the cuts).
    const cutNote = res.cut ? decision(this.d, 'cut', agent.id, cutDetail(agent.name, res.cut), round.id) : null;
    const [written] = await this.d.recorder.record(g, { entries: [reply, ...(cutNote ? [cutNote] : []), ...(depthNote ? [depthNote] : [])], replyTo });
    if (written) this.refs.recorded(g.id, agent.id, ref, written.seq);
    this.d.metrics.replied(agent.id);
    s.tally.answered.push(agent.id);
    // In the background: the round goes on (see Summarizer).
    this.summaries.schedule(g, agent, s.session);
  }

  /**
   * A call cancelled by `/stop` or by a batch with enough replies: no notice, not a failure. What
   * a stopped reply had streamed was kept with the stop (`kept`): it is delivered now.
   */
  private async cancelledTurn(g: GroupDoc, round: RoundRecord, t: PlannedTurn, ctl: TurnControl, kept?: TranscriptEntry | null): Promise<void> {
    drop(this.d, g, round, t);
    if (g.state.tools?.some((c) => c.roundId === round.id && c.agentId === t.agentId)) this.d.groups.toolChange(g, { t: 'tools-done', turn: `${round.id}:${t.agentId}:${t.depth}` });
    if (!ctl.stop.aborted) ctl.cancelled.push(t.agentId);
    if (kept) await this.d.recorder.deliverAppended(g, [kept], HUMAN_CAUSED.has(t.reason) ? this.trigger(g, round)?.platformMessageId : undefined);
  }

  /** An agent's reply as recorded: who, what, and the figures shown under "details". */
  private replyEntry(g: GroupDoc, round: RoundRecord, t: PlannedTurn, agent: AgentDef, text: string, call: { model: string; usage: Usage; latencyMs: number; costUsd: number | null; cut?: ReplyCut | undefined; prompt?: PromptRef | undefined }): NewEntry {
    const { cut, prompt, ...figures } = call;
    return {
      kind: 'agent',
      authorId: `agent:${agent.id}`,
      authorName: agent.name,
      agentId: agent.id,
      text,
      delivery: 'pending',
      roundId: round.id,
      threadId: this.trigger(g, round)?.threadId,
      meta: { ...figures, depth: t.depth, reason: t.reason, ...(cut ? { cut } : {}), ...this.answerMeta(g, round), ...(prompt ? { prompt } : {}) },
    };
  }

  /** Which message a reply answers, and the reply it regenerates (the page links them). */
  private answerMeta(g: GroupDoc, round: RoundRecord): { answers?: string; regenerates?: string } {
    const answers = this.trigger(g, round)?.id ?? round.about;
    return { ...(answers ? { answers } : {}), ...(round.regenerates ? { regenerates: round.regenerates } : {}) };
  }

  /** The newest human message of the round (replies thread to it). */
  private trigger(g: GroupDoc, round: RoundRecord): TranscriptEntry | undefined {
    const id = round.triggerIds.at(-1);
    return id ? this.d.groups.entryAt(g, seqOfId(id)) : undefined;
  }

  private askFor(g: GroupDoc, round: RoundRecord, t: PlannedTurn, cursor: number, reactTo: TranscriptEntry | undefined): Ask {
    if (t.reason === 'direct') return { kind: 'direct' };
    if (t.reason === 'voluntary') return { kind: 'voluntary', ...(reactTo ? { react: { by: reactTo.authorName } } : {}) };
    if (t.reason === 'reaction') return { kind: 'reaction', by: this.d.agents.get(t.by ?? '')?.name ?? 'Another participant' };
    if (round.forced && t.reason === 'addressed' && round.triggerIds.length === 0) {
      // `/ask agent` without text: answer the last human message, quoted if already seen.
      // A round about one message (web "ask again", regenerate) quotes that one.
      const about = round.about ? this.d.groups.entryAt(g, seqOfId(round.about)) : undefined;
      const last = about ?? [...g.transcript].reverse().find((e) => e.kind === 'human' && !e.hiddenFromAgents);
      return { kind: 'forced', lastHuman: last ? { name: last.authorName, text: last.seq <= cursor ? last.text : null } : null };
    }
    // Who the agent answers, and why it must (the prompt says so, and that it may not pass).
    const how = t.reason === 'sticky' || t.reason === 'rotation' || t.reason === 'selected' ? t.reason : 'mention';
    return { kind: 'addressed', by: this.trigger(g, round)?.authorName ?? null, how };
  }

  /** A delivered reply that @mentions other participants gives them a turn at depth+1. */
  private queueReactions(g: GroupDoc, round: RoundRecord, t: PlannedTurn, agent: AgentDef, text: string): NewEntry | null {
    const mentioned = findMentions(text, this.d.handles, g.participants).filter((id) => id !== agent.id);
    if (mentioned.length === 0) return null;
    if (t.depth >= g.config.max_depth) {
      return decision(this.d, 'depth', agent.id, `max depth ${g.config.max_depth} reached; ${mentioned.map((m) => this.d.agents.get(m)?.name ?? m).join(', ')} will not react`, round.id);
    }
    // An agent that already has a human-caused turn coming speaks then; no extra reaction turn.
    const owed = new Set(round.queue.filter((q) => HUMAN_CAUSED.has(q.reason) || q.reason === 'reaction').map((q) => q.agentId));
    const reactions: PlannedTurn[] = mentioned.filter((id) => !owed.has(id)).map((id) => ({ agentId: id, reason: 'reaction', depth: t.depth + 1, by: agent.id }));
    if (reactions.length === 0) return null;
    // A reaction replaces that agent's pending voluntary turn and runs before the rest.
    this.d.groups.updateRound(g, round, { queue: [...reactions, ...round.queue.filter((q) => !(q.reason === 'voluntary' && mentioned.includes(q.agentId)))] });
    return null;
  }
}

/** The quiet line for a reply that was cut short. */
function cutDetail(name: string, cut: ReplyCut): string {
  if (cut === 'stopped') return `${name}'s reply was stopped`;
  if (cut === 'max_tokens') return `${name}'s reply was cut at max_tokens`;
  if (cut === 'timeout') return `${name}'s reply was cut at the time limit (llm.reply_timeout_seconds)`;
  return `${name}'s reply was cut at the size limit (llm.max_reply_bytes)`;
}

/** The user turn as the session keeps it: the words, and the files sent in full with them. */
function sentTurn(p: FittedPrompt): ChatTurn {
  return p.userFiles.length > 0 ? { role: 'user', content: p.userTurn, attachments: p.userFiles } : { role: 'user', content: p.userTurn };
}
