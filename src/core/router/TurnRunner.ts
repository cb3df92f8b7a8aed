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

/** Human-caused turns are always answered and wait out cooldowns; the others can be skipped. */
const HUMAN_CAUSED = new Set<PlannedTurn['reason']>(['addressed', 'sticky', 'rotation', 'direct']);

/**
 * How one turn's model call runs. In a sequential round a turn is on its own; in a parallel
 * voluntary batch (RoundRunner's `voluntaryBatch`) several run at once, and `inOrder` makes each wait, once its
 * call has ended, until the turns before it are settled: outcomes are written in candidate order.
 */
export interface TurnControl {
  /** The group's `/stop` signal for this round. */
  stop: AbortSignal;
  /** Cancels the call: `/stop`, or (in a batch) enough replies are in. */
  signal: AbortSignal;
  inOrder<T>(call: Promise<T>): Promise<T>;
  /** Stream the reply's text as it comes (not in a batch: a reply there may be discarded). */
  stream: boolean;
  /** Agents whose call was cancelled by `signal` (reported once per batch). */
  cancelled: string[];
  /** Set by a turn whose tool call waits for a person's decision: until when, at the latest. */
  parkedUntil?: number | undefined;
  /**
   * The turn's outcome is appended (not yet durable): the next turn of a batch may settle. Called
   * early only for outcomes nothing is posted for (a pass, a discard), so replies still reach the
   * channel in candidate order; otherwise the end of the turn counts.
   */
  decided(): void;
}

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
    const { groups, clock } = this.d;
    const agent = this.d.agents.get(t.agentId);
    const cfg = g.config;
    if (!agent || !g.participants.includes(t.agentId)) return drop(this.d, g, round, t);
    const session = groups.session(g, agent.id);
    const turnId = `${round.id}:${agent.id}:${t.depth}`;
    // A turn that has tool calls recorded is resuming (after an approval, a restart): it goes on.
    const resuming = g.state.tools?.some((c) => c.turn === turnId) ?? false;
    if (HUMAN_CAUSED.has(t.reason) && !round.forced && !resuming && this.alreadySeen(g, round, g.state.repliedUpTo?.[agent.id] ?? 0)) {
      // A reply the agent delivered had already seen this round's message(s); no need to wait
      // out a cooldown first. A pass or a failure never counts as an answer.
      drop(this.d, g, round, t);
      return decide(this.d, g, round, 'batch', agent.id, `${agent.name} already answered this together with an earlier message`);
    }
    const cooldownLeft = (g.state.lastSpoke[agent.id] ?? -Infinity) + cfg.cooldown_seconds * 1000 - clock.now();
    const capReached = round.capped >= cfg.max_agent_turns_per_message;

    if (!HUMAN_CAUSED.has(t.reason)) {
      if (t.reason === 'voluntary' && g.state.muted.includes(agent.id)) return drop(this.d, g, round, t);
      if (t.reason === 'voluntary' && round.voluntary >= cfg.max_voluntary_responders) return drop(this.d, g, round, t);
      if (capReached) {
        drop(this.d, g, round, t);
        if (!notes.has('cap')) {
          notes.add('cap');
          await decide(this.d, g, round, 'cap', undefined, `turn cap reached (${cfg.max_agent_turns_per_message} agent replies for this message)`);
        }
        return;
      }
      if (cooldownLeft > 0) {
        drop(this.d, g, round, t);
        return decide(this.d, g, round, 'cooldown', agent.id, `${agent.name} is cooling down (${Math.ceil(cooldownLeft / 1000)}s left)`);
      }
    } else if (cooldownLeft > 0) {
      // A human's @mention is never dropped: wait the cooldown out.
      try {
        await this.d.mailbox.outside(g.id, () => clock.sleep(cooldownLeft, AbortSignal.any([this.d.shutdown, ctl.stop])));
      } catch {
        return;
      }
    }
    if (round.asked.includes(agent.id) && t.reason === 'voluntary') return drop(this.d, g, round, t);
    // Only a turn that calls the model counts against its pair's budget (see rooms/BotPairs).
    const bot = this.trigger(g, round);
    const byBot = bot?.authorKind === 'bot' && !resuming;
    const refused = byBot && this.d.botPairs.answerRefused(g.id, bot, agent, clock.now());
    if (refused) {
      drop(this.d, g, round, t);
      return decide(this.d, g, round, 'cap', agent.id, refused);
    }
    if (t.reason === 'voluntary') groups.updateRound(g, round, { asked: [...round.asked, agent.id] });

    const seenUpTo = g.nextSeq - 1;
    const mailbox = await groups.mailbox(g, session);
    const observations = mailbox.entries.filter((e) => e.seq <= seenUpTo);
    // Reacting is offered on a voluntary turn whose round has a person's message to react to.
    const trigger = this.trigger(g, round);
    const reactTo = t.reason === 'voluntary' && trigger && !trigger.deleted ? trigger : undefined;
    const ask = this.askFor(g, round, t, session.cursor, reactTo);
    const participants = g.participants.map((p) => this.d.agents.get(p)).filter((a): a is AgentDef => !!a);
    const system = buildSystemPrompt(agent, { title: g.title, participants, handles: (id) => this.d.handles.handlesOf(id) });
    const model = agent.model ?? this.d.models.model;
    // Fitted to the model's context window (see contextBudget); what the session records is what was sent.
    const files = { vision: agent.vision === true, max: this.d.models.maxImagesInPrompt ?? DEFAULT_MAX_IMAGES };
    const parts: PromptParts = { system, summary: session.summary, history: session.history, observations, omitted: mailbox.omitted, ask, files };
    let prompt: FittedPrompt | undefined;
    let window = 0;
    const refOf = (carrySummary: boolean): PromptRef => this.refs.make(g.id, agent.id, model, window, parts, prompt!, session.summary, { carrySummary });
    const mustReply = ask.kind !== 'voluntary';
    const timeout = (t.reason === 'voluntary' ? cfg.voluntary_timeout_seconds : cfg.agent_reply_timeout_seconds) * 1000;

    if (await budgetRefuses(this.d, g, round)) return drop(this.d, g, round, t);
    const shown = new TurnIndicators(this.d, g, agent);
    shown.begin(mustReply);
    // Pass rules (core/text/passScrubber): the stream shows only text that will be posted.
    const others = participants.filter((p) => p.id !== agent.id);
    const streamFilter = passStreamFilter(passRules({ agent, others, mayPass: !mustReply }));
    const callStarted = clock.now();
    const stopped = ctl.stream
      ? new StoppedReply(this.d, g, ctl.stop, (text) => {
          // The agent remembers saying it, as everyone saw; usage never arrived (the call was cancelled).
          const usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
          if (prompt) groups.recordTurn(g, agent.id, [sentTurn(prompt), { role: 'assistant', content: text }], seenUpTo, { usage, costUsd: null });
          return this.replyEntry(g, round, t, agent, text, { model, usage, latencyMs: clock.now() - callStarted, costUsd: null, cut: 'stopped', prompt: prompt ? refOf(true) : undefined });
        })
      : null;
    // Tools only where someone asked: a voluntary turn may be discarded, and its calls with it.
    const tools = t.reason === 'voluntary' ? [] : this.d.tools.toolsFor(agent.id);
    let withTools: ToolTurnResult | undefined;
    let res;
    try {
      res = await ctl.inOrder(withinContext(this.d, this.budgets, g, agent, model, parts, async (p) => {
        prompt = p;
        window = this.budgets.window(model, agent);
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
          mayReact: !!reactTo,
          readFile: p.files.length > 0 ? (id: string) => this.d.files.read(id) : undefined,
          onDelta: ctl.stream
            ? (chunk: string) => {
                const text = streamFilter(chunk);
                if (text === null) return;
                shown.setTyping(true);
                stopped?.add(text);
                this.d.events.emit({ type: 'delta', groupId: g.id, agentId: agent.id, turnId, text });
              }
            : undefined,
        };
        if (tools.length === 0) return this.d.gate.call(request, timeout, ctl.signal);
        // Tool definitions and results take what the fitted prompt left of the window.
        const room = p.budgetTokens - p.estimatedTokens - this.budgets.tokens(model, JSON.stringify(tools.map((x) => [x.name, x.description, x.inputSchema])));
        const names = participants.map((x) => x.name);
        const scope = { g, round, agent, turn: turnId, threadId: this.trigger(g, round)?.threadId, tools, names, stop: ctl.stop, typing: shown.setTyping, fit: (steps: ToolStep[]) => fitSteps(steps, room, (x: string) => this.budgets.tokens(model, x)) };
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
      if (this.d.shutdown.aborted) return; // the turn stays queued and runs after restart
      // A tool call waits for a person: the turn stays queued, its round steps aside until then.
      if (err instanceof AwaitingApproval) return void (ctl.parkedUntil = Math.min(ctl.parkedUntil ?? Infinity, err.deadline));
      if (ctl.signal.aborted) return this.cancelledTurn(g, round, t, ctl, stopped?.kept);
      const code = err instanceof LlmError ? err.code : 'error';
      const why = describeFailure(code);
      this.d.metrics.turnFailed(agent.id, code);
      tally.failed.push({ agent: agent.id, reason: code });
      this.d.logger.warn(
        { group: g.id, agent: agent.id, model, turn: t.reason, code, err: describeError(err), ...(why.hint ? { hint: why.hint } : {}) },
        `${agent.name} could not reply (${why.reason}): ${describeError(err)}${why.hint ? ` — ${why.hint}` : ''}`,
      );
      drop(this.d, g, round, t);
      if (tools.length > 0) groups.toolChange(g, { t: 'tools-done', turn: turnId });
      // The mailbox is not drained: the agent sees these observations next time.
      // Nobody asked a voluntary turn: its failure is a quiet decision line, not a ⚠ in the chat
      // (one "anyone hungry?" must not bring three notices). Someone did ask the others.
      if (t.reason === 'voluntary') return decide(this.d, g, round, 'error', agent.id, `${agent.name} could not reply (${why.reason})`);
      await this.d.recorder.notice(g, `⚠ ${agent.name} could not reply (${why.reason})`, { decision: 'error', agentId: agent.id, round });
      return;
    }
    stopped?.dispose();
    shown.end();
    if (ctl.stop.aborted) return this.cancelledTurn(g, round, t, ctl, stopped?.kept); // answered just as /stop came

    const verdict = judgeReply(res.text, { agent, others, mayPass: !mustReply, streamed: streamFilter.streamed, mayReact: !!reactTo });
    const pass = verdict.pass;
    const text = verdict.text;
    if (verdict.foreignLabels.length > 0) {
      this.d.logger.warn({ group: g.id, agent: agent.id, labels: verdict.foreignLabels }, `${agent.name} began its reply with another participant's name label; stripped`);
    }
    if (!pass && text) {
      const rest = streamFilter.end().rest;
      if (rest !== null) this.d.events.emit({ type: 'delta', groupId: g.id, agentId: agent.id, turnId, text: rest });
    }
    if (!groups.usable(g)) return; // reloaded after a failed write while the model was answering
    const answer = res;
    // The turn's outcome in the agent's session, usage and the round's queue.
    const turn = (said: string) => {
      if (tools.length > 0) groups.toolChange(g, { t: 'tools-done', turn: turnId }); // its tool steps are in the transcript
      groups.recordTurn(g, agent.id, [sentTurn(prompt!), { role: 'assistant', content: said }], seenUpTo, answer);
      groups.addGroupUsage(g, agent.id, answer);
      drop(this.d, g, round, t);
      countCall(tally, answer);
    };
    const passed = () => {
      turn(PASS_TOKEN);
      this.d.metrics.passed(agent.id);
      tally.passed.push(agent.id);
      // The pass line carries the turn's reference: a later turn's history is rebuilt from it.
      const line = decision(this.d, 'pass', agent.id, `${agent.name} passed`, round.id);
      const recorded = this.d.recorder.record(g, { entries: [{ ...line, decision: { ...line.decision!, prompt: refOf(false) } }] }).then(() => undefined);
      ctl.decided();
      return recorded;
    };
    if (verdict.reaction && reactTo) return recordAgentReaction(this.d, { g, round, agent, emoji: verdict.reaction, trigger: reactTo, tally, turn, passed, ref: () => refOf(false), decided: () => ctl.decided() });
    if (!pass && text && t.reason === 'voluntary' && (enoughReplies(g, round) || !round.queue.includes(t))) {
      // A parallel batch asked more agents than it needed: the replies before this one in
      // candidate order filled it (or a reaction replaced this turn). Not shown, not remembered:
      // the agent's mailbox stays as it was; only the cost is counted.
      groups.addGroupUsage(g, agent.id, res);
      drop(this.d, g, round, t);
      const recorded = decide(this.d, g, round, 'discarded', agent.id, `${agent.name}'s reply was not needed (enough replies already)`);
      ctl.decided();
      return recorded;
    }
    if (pass || !text) return passed();
    turn(text);

    const ref = refOf(true);
    // "details" shows the whole turn: its tool steps' calls too.
    const figures = withTools ? { usage: addUsage(res.usage, withTools.stepUsage), costUsd: withTools.stepCostUsd === null || res.costUsd == null ? null : withTools.stepCostUsd + res.costUsd } : { usage: res.usage, costUsd: res.costUsd ?? null };
    const made = withTools?.attachments.length ? { attachments: withTools.attachments } : {};
    const reply = { ...this.replyEntry(g, round, t, agent, text, { model: res.model, ...figures, latencyMs: res.latencyMs, cut: res.cut, prompt: ref }), ...made };
    groups.noteSpoke(g, agent.id, seenUpTo);
    const capped = t.reason === 'voluntary' || t.reason === 'reaction' || t.reason === 'selected';
    if (capped) groups.updateRound(g, round, { capped: round.capped + 1, voluntary: round.voluntary + (t.reason === 'voluntary' ? 1 : 0) });
    const depthNote = this.queueReactions(g, round, t, agent, text);
    const replyTo = HUMAN_CAUSED.has(t.reason) ? this.trigger(g, round)?.platformMessageId : undefined;
    // One record: the reply, the agent's turn and cursor, its cooldown and the round's progress.
    // A cut reply says why in a quiet line: its "…" alone does not (see LlmGate for the cuts).
    const cutNote = res.cut ? decision(this.d, 'cut', agent.id, cutDetail(agent.name, res.cut), round.id) : null;
    const [written] = await this.d.recorder.record(g, { entries: [reply, ...(cutNote ? [cutNote] : []), ...(depthNote ? [depthNote] : [])], replyTo });
    if (written) this.refs.recorded(g.id, agent.id, ref, written.seq);
    this.d.metrics.replied(agent.id);
    tally.answered.push(agent.id);
    // In the background: the round goes on (see Summarizer).
    this.summaries.schedule(g, agent, session);
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

  /** Every message of the round is at or below `upTo` (what the agent's last delivered reply had seen). */
  private alreadySeen(g: GroupDoc, round: RoundRecord, upTo: number): boolean {
    if (round.triggerIds.length === 0) return false;
    return Math.max(...round.triggerIds.map(seqOfId)) <= upTo;
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
