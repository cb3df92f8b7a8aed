/**
 * Running one round (SPEC §4 steps 4–10): plan who speaks, run each turn, deliver replies, queue
 * reactions, keep the turn cap. The round's remaining turns live in the group file and each
 * turn's outcome is written together with its reply, so a restart resumes where it stopped and
 * answers nothing twice.
 */
import type { GroupDoc, Logger, PlannedTurn, RoundRecord } from '../ports.js';
import type { AgentDef, ChatTurn, DecisionType, TranscriptEntry } from '../types.js';
import { describeError, LlmError } from '../errors.js';
import type { EventHub } from '../events.js';
import type { Metrics } from '../metrics.js';
import { seqOfId, type GroupManager } from '../groups/GroupManager.js';
import type { NewEntry, Recorder } from './Recorder.js';
import { buildSystemPrompt, buildUserTurn, PASS_TOKEN, type Ask } from '../session/prompt.js';
import { judgeReply, passRules } from './pass.js';
import { passStreamFilter } from '../text/passStream.js';
import { findMentions, type HandleIndex } from './mentions.js';
import type { LlmGate } from './LlmGate.js';
import { planRound } from './planning.js';
import { maybeSummarize } from '../session/summary.js';
import type { Clock } from '../ports.js';

/** Human-caused turns are always answered and wait out cooldowns; the others can be skipped. */
const HUMAN_CAUSED = new Set<PlannedTurn['reason']>(['addressed', 'sticky', 'rotation', 'direct']);

/** What one round did, for its log line. */
interface RoundTally {
  answered: string[];
  passed: string[];
  failed: Array<{ agent: string; reason: string }>;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number };
  costUsd: number;
  /** Some turn's model had no known price: the cost is a lower bound. */
  costUnknown: boolean;
}

/** What a round needs from the router. */
export interface RoundDeps {
  groups: GroupManager;
  agents: ReadonlyMap<string, AgentDef>;
  handles: HandleIndex;
  gate: LlmGate;
  clock: Clock;
  events: EventHub;
  metrics: Metrics;
  logger: Logger;
  models: { model: string; summaryModel: string; maxTokens: number };
  shutdown: AbortSignal;
  /** The one path that records, persists, publishes and delivers entries. */
  recorder: Recorder;
  /** Show or hide the typing indicator for an agent. */
  typing(g: GroupDoc, agent: AgentDef, active: boolean): void;
}

export class RoundRunner {
  constructor(private readonly d: RoundDeps) {}

  /** Run `round` to the end (or until shutdown). Removes it from the group when done. */
  async run(g: GroupDoc, round: RoundRecord): Promise<void> {
    const notes = new Set<string>();
    const startedAt = this.d.clock.now();
    const tally: RoundTally = { answered: [], passed: [], failed: [], tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, costUsd: 0, costUnknown: false };
    if (!round.planned) {
      // A deterministic plan is not written on its own: the first turn's write carries it, and a
      // restart before that re-derives the same plan. A selector's choice is written at once.
      if (await planRound(this.d, g, round)) await this.d.recorder.record(g, { round: { record: round } });
    }
    while (round.queue.length > 0 && !this.d.shutdown.aborted && !g.state.archived && this.d.groups.usable(g)) {
      const batch = this.parallelBatch(g, round);
      if (batch.length > 1) await Promise.all(batch.map((t) => this.turn(g, round, t, notes, tally)));
      else await this.turn(g, round, round.queue[0]!, notes, tally);
    }
    if (this.d.shutdown.aborted || !this.d.groups.usable(g)) return;
    await this.d.recorder.record(g, { round: { record: round, done: true } });
    const ms = this.d.clock.now() - startedAt;
    this.d.metrics.roundFinished(ms / 1000);
    this.logRound(g, round, tally, ms);
  }

  /**
   * One info line per round: what started it and what came of it. Ids and counts only — never
   * message text or anything secret — so it is safe to ship to any log collector.
   */
  private logRound(g: GroupDoc, round: RoundRecord, t: RoundTally, ms: number): void {
    const trigger = round.forced ? 'ask' : round.addressed.length > 0 ? 'mention' : 'open';
    const parts = [t.answered.length ? `${t.answered.join(', ')} answered` : 'nobody answered'];
    if (t.passed.length) parts.push(`${t.passed.join(', ')} passed`);
    if (t.failed.length) parts.push(`${t.failed.map((f) => f.agent).join(', ')} failed`);
    this.d.logger.info(
      {
        group: g.id,
        channel: g.channel,
        round: round.id,
        trigger,
        messages: round.triggerIds,
        addressed: round.addressed,
        answered: t.answered,
        passed: t.passed,
        failed: t.failed,
        latencyMs: Math.round(ms),
        tokens: t.tokens,
        costUsd: t.costUnknown && t.costUsd === 0 ? null : Math.round(t.costUsd * 1e6) / 1e6,
        ...(t.costUnknown ? { costIncomplete: true } : {}),
      },
      `round ${round.id} in ${g.id} (${trigger}): ${parts.join('; ')} in ${(ms / 1000).toFixed(1)} s`,
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

  private drop(round: RoundRecord, t: PlannedTurn): void {
    round.queue = round.queue.filter((x) => x !== t);
  }

  /** A quiet decision line, recorded with the round's progress. */
  private async decide(g: GroupDoc, round: RoundRecord, type: DecisionType, agentId: string | undefined, detail: string): Promise<void> {
    await this.d.recorder.record(g, { entries: [this.decision(type, agentId, detail, round.id)], round: { record: round } });
  }

  private decision(type: DecisionType, agentId: string | undefined, detail: string, roundId: string): NewEntry {
    const name = agentId ? (this.d.agents.get(agentId)?.name ?? agentId) : 'Chorus';
    this.d.logger.debug({ round: roundId, agent: agentId, decision: type }, detail);
    return { kind: 'decision', authorId: 'system', authorName: name, text: detail, decision: { type, agentId, detail }, hiddenFromAgents: true, roundId };
  }

  /** One agent's turn: checks, prompt, model call, pass or delivery, reactions. */
  private async turn(g: GroupDoc, round: RoundRecord, t: PlannedTurn, notes: Set<string>, tally: RoundTally): Promise<void> {
    const { groups, clock } = this.d;
    const agent = this.d.agents.get(t.agentId);
    const cfg = g.config;
    if (!agent || !g.participants.includes(t.agentId)) return this.drop(round, t);
    const session = groups.session(g, agent.id);
    if (HUMAN_CAUSED.has(t.reason) && !round.forced && this.alreadySeen(g, round, session.cursor)) {
      // The agent's previous turn already showed it (and answered) this round's message(s); no
      // need to wait out a cooldown first.
      this.drop(round, t);
      return this.decide(g, round, 'batch', agent.id, `${agent.name} already answered this together with an earlier message`);
    }
    const cooldownLeft = (g.state.lastSpoke[agent.id] ?? -Infinity) + cfg.cooldown_seconds * 1000 - clock.now();
    const capReached = round.capped >= cfg.max_agent_turns_per_message;

    if (!HUMAN_CAUSED.has(t.reason)) {
      if (t.reason === 'voluntary' && g.state.muted.includes(agent.id)) return this.drop(round, t);
      if (t.reason === 'voluntary' && round.voluntary >= cfg.max_voluntary_responders) return this.drop(round, t);
      if (capReached) {
        this.drop(round, t);
        if (!notes.has('cap')) {
          notes.add('cap');
          await this.decide(g, round, 'cap', undefined, `turn cap reached (${cfg.max_agent_turns_per_message} agent replies for this message)`);
        }
        return;
      }
      if (cooldownLeft > 0) {
        this.drop(round, t);
        return this.decide(g, round, 'cooldown', agent.id, `${agent.name} is cooling down (${Math.ceil(cooldownLeft / 1000)}s left)`);
      }
    } else if (cooldownLeft > 0) {
      // A human's @mention is never dropped: wait the cooldown out.
      try {
        await clock.sleep(cooldownLeft, this.d.shutdown);
      } catch {
        return;
      }
    }
    if (round.asked.includes(agent.id) && t.reason === 'voluntary') return this.drop(round, t);
    if (t.reason === 'voluntary') round.asked.push(agent.id);

    const seenUpTo = g.nextSeq - 1;
    const mailbox = await groups.mailbox(g, session);
    const observations = mailbox.entries.filter((e) => e.seq <= seenUpTo);
    const ask = this.askFor(g, round, t, session.cursor);
    const userTurn = buildUserTurn(observations, ask, mailbox.omitted);
    const participants = g.participants.map((p) => this.d.agents.get(p)).filter((a): a is AgentDef => !!a);
    const system = buildSystemPrompt(agent, { title: g.title, participants, handles: (id) => this.d.handles.handlesOf(id) });
    const messages: ChatTurn[] = [...session.history, { role: 'user', content: userTurn }];
    const turnId = `${round.id}:${agent.id}:${t.depth}`;
    const mustReply = ask.kind !== 'voluntary';
    const timeout = (t.reason === 'voluntary' ? cfg.voluntary_timeout_seconds : cfg.agent_reply_timeout_seconds) * 1000;

    this.d.typing(g, agent, true);
    // Pass rules (core/text/passScrubber): the stream shows only text that will be posted.
    const others = participants.filter((p) => p.id !== agent.id);
    const streamFilter = passStreamFilter(passRules({ agent, others, mayPass: !mustReply }));
    let res;
    try {
      res = await this.d.gate.call(
        {
          purpose: 'turn',
          model: agent.model ?? this.d.models.model,
          system,
          summary: session.summary,
          messages,
          maxTokens: this.d.models.maxTokens,
          agent,
          groupId: g.id,
          mustReply,
          onDelta: (chunk) => {
            const text = streamFilter(chunk);
            if (text !== null) this.d.events.emit({ type: 'delta', groupId: g.id, agentId: agent.id, turnId, text });
          },
        },
        timeout,
      );
    } catch (err) {
      this.d.typing(g, agent, false);
      if (this.d.shutdown.aborted) return; // the turn stays queued and runs after restart
      const code = err instanceof LlmError ? err.code : 'error';
      this.d.metrics.turnFailed(agent.id, code);
      tally.failed.push({ agent: agent.id, reason: code });
      this.d.logger.warn({ group: g.id, agent: agent.id, code, err: describeError(err) }, 'agent could not reply');
      this.drop(round, t);
      // The mailbox is not drained: the agent sees these observations next time.
      await this.d.recorder.notice(g, `⚠ ${agent.name} could not reply (${code === 'timeout' ? 'timeout' : describeCode(code)})`, { decision: 'error', agentId: agent.id, round });
      return;
    }
    this.d.typing(g, agent, false);

    const verdict = judgeReply(res.text, { agent, others, mayPass: !mustReply, streamed: streamFilter.streamed });
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
    groups.recordTurn(g, session, [{ role: 'user', content: userTurn }, { role: 'assistant', content: pass || !text ? PASS_TOKEN : text }], seenUpTo, res);
    groups.addGroupUsage(g, agent.id, res);
    this.drop(round, t);
    tally.tokens.input += res.usage.inputTokens;
    tally.tokens.output += res.usage.outputTokens;
    tally.tokens.cacheRead += res.usage.cacheReadTokens;
    tally.tokens.cacheWrite += res.usage.cacheWriteTokens;
    if (typeof res.costUsd === 'number') tally.costUsd += res.costUsd;
    else tally.costUnknown = true;

    if (pass || !text) {
      this.d.metrics.passed(agent.id);
      tally.passed.push(agent.id);
      return this.decide(g, round, 'pass', agent.id, `${agent.name} passed`);
    }

    const reply: NewEntry = {
      kind: 'agent',
      authorId: `agent:${agent.id}`,
      authorName: agent.name,
      agentId: agent.id,
      text,
      delivery: 'pending',
      roundId: round.id,
      threadId: this.trigger(g, round)?.threadId,
      meta: { model: res.model, usage: res.usage, latencyMs: res.latencyMs, costUsd: res.costUsd ?? null, depth: t.depth, reason: t.reason, ...(res.cut ? { cut: res.cut } : {}) },
    };
    groups.noteSpoke(g, agent.id);
    if (t.reason === 'voluntary' || t.reason === 'reaction' || t.reason === 'selected') round.capped++;
    if (t.reason === 'voluntary') round.voluntary++;
    const depthNote = this.queueReactions(g, round, t, agent, text);
    const replyTo = HUMAN_CAUSED.has(t.reason) ? this.trigger(g, round)?.platformMessageId : undefined;
    // One record: the reply, the agent's turn and cursor, its cooldown and the round's progress.
    await this.d.recorder.record(g, { entries: depthNote ? [reply, depthNote] : [reply], round: { record: round }, replyTo });
    this.d.metrics.replied(agent.id);
    tally.answered.push(agent.id);
    await maybeSummarize(this.d, g, agent, session);
  }

  private alreadySeen(g: GroupDoc, round: RoundRecord, cursor: number): boolean {
    if (round.triggerIds.length === 0) return false;
    return Math.max(...round.triggerIds.map(seqOfId)) <= cursor;
  }

  /** The newest human message of the round (replies thread to it). */
  private trigger(g: GroupDoc, round: RoundRecord): TranscriptEntry | undefined {
    const id = round.triggerIds.at(-1);
    return id ? this.d.groups.entryAt(g, seqOfId(id)) : undefined;
  }

  private askFor(g: GroupDoc, round: RoundRecord, t: PlannedTurn, cursor: number): Ask {
    if (t.reason === 'direct') return { kind: 'direct' };
    if (t.reason === 'voluntary') return { kind: 'voluntary' };
    if (t.reason === 'reaction') return { kind: 'reaction', by: this.d.agents.get(t.by ?? '')?.name ?? 'Another participant' };
    if (round.forced && t.reason === 'addressed' && round.triggerIds.length === 0) {
      // `/ask agent` without text: answer the last human message, quoted if already seen.
      const last = [...g.transcript].reverse().find((e) => e.kind === 'human' && !e.hiddenFromAgents);
      return { kind: 'forced', lastHuman: last ? { name: last.authorName, text: last.seq <= cursor ? last.text : null } : null };
    }
    return { kind: 'addressed' };
  }

  /** A delivered reply that @mentions other participants gives them a turn at depth+1 (SPEC §4.7). */
  private queueReactions(g: GroupDoc, round: RoundRecord, t: PlannedTurn, agent: AgentDef, text: string): NewEntry | null {
    const mentioned = findMentions(text, this.d.handles, g.participants).filter((id) => id !== agent.id);
    if (mentioned.length === 0) return null;
    if (t.depth >= g.config.max_depth) {
      return this.decision('depth', agent.id, `max depth ${g.config.max_depth} reached; ${mentioned.map((m) => this.d.agents.get(m)?.name ?? m).join(', ')} will not react`, round.id);
    }
    // An agent that already has a human-caused turn coming speaks then; no extra reaction turn.
    const owed = new Set(round.queue.filter((q) => HUMAN_CAUSED.has(q.reason) || q.reason === 'reaction').map((q) => q.agentId));
    const reactions: PlannedTurn[] = mentioned.filter((id) => !owed.has(id)).map((id) => ({ agentId: id, reason: 'reaction', depth: t.depth + 1, by: agent.id }));
    if (reactions.length === 0) return null;
    // A reaction replaces that agent's pending voluntary turn and runs before the rest.
    round.queue = [...reactions, ...round.queue.filter((q) => !(q.reason === 'voluntary' && mentioned.includes(q.agentId)))];
    return null;
  }
}

function describeCode(code: string): string {
  switch (code) {
    case 'rate_limited':
      return 'rate limited';
    case 'overloaded':
      return 'model overloaded';
    case 'auth':
      return 'API key rejected';
    case 'empty':
      return 'empty answer';
    case 'network':
      return 'network error';
    default:
      return 'error';
  }
}

export type { TranscriptEntry };
