/**
 * Who speaks in a round: the addressed agents, else the group's strategy —
 * sticky, voluntary, round-robin, or an LLM selector. The plan is stored in the round so a
 * restart continues it instead of choosing again.
 */
import type { GroupDoc, PlannedTurn, RoundRecord } from '../records.js';
import { describeError } from '../errors.js';
import { observationLine } from '../session/prompt.js';
import { isObservable } from '../groups/groupReads.js';
import { seqOfId } from '../groups/evolve.js';
import { findHandles } from './mentions.js';
import type { RoundDeps } from './RoundDeps.js';

/** Transcript lines the selector sees. */
const SELECTOR_CONTEXT = 12;

/**
 * Plan the round. Returns true when the plan came from a model call (the selector): that plan must
 * be stored before the turns run, so a restart continues it instead of asking again. Every other
 * plan is a pure function of the round and the group, and a restart derives the same one.
 */
export async function planRound(d: RoundDeps, g: GroupDoc, round: RoundRecord, signal?: AbortSignal): Promise<boolean> {
  const calls = { made: false };
  const queue = await chooseTurns(d, g, round, calls, signal);
  d.groups.updateRound(g, round, { queue, planned: true });
  return calls.made;
}

async function chooseTurns(d: RoundDeps, g: GroupDoc, round: RoundRecord, calls: { made: boolean }, signal: AbortSignal | undefined): Promise<PlannedTurn[]> {
  const cfg = g.config;
  const ps = g.participants;
  const turn = (agentId: string, reason: PlannedTurn['reason']): PlannedTurn => ({ agentId, reason, depth: 0 });
  if (ps.length === 1) return [turn(ps[0]!, 'direct')];

  const addressed = round.addressed.filter((a) => ps.includes(a));
  if (addressed.length > 0) {
    const ordered = cfg.last_speaker && addressed.includes(cfg.last_speaker) ? [...addressed.filter((a) => a !== cfg.last_speaker), cfg.last_speaker] : addressed;
    return ordered.map((a) => turn(a, 'addressed'));
  }
  if (round.forced) return [];

  const sticky = cfg.sticky && g.state.sticky && ps.includes(g.state.sticky) ? g.state.sticky : null;
  switch (cfg.reply_strategy) {
    case 'mention_only':
      return sticky ? [turn(sticky, 'sticky')] : [];
    case 'round_robin': {
      const eligible = ps.filter((p) => !g.state.muted.includes(p));
      if (eligible.length === 0) return [];
      const next = d.groups.nextInRotation(g, eligible);
      return [turn(next, 'rotation')];
    }
    case 'selector': {
      calls.made = true;
      const chosen = await select(d, g, signal);
      if (chosen) return chosen.map((a) => turn(a, 'selected'));
      return voluntaryPlan(d, g, round, sticky, turn);
    }
    case 'hybrid':
    default:
      return voluntaryPlan(d, g, round, sticky, turn);
  }
}

function voluntaryPlan(d: RoundDeps, g: GroupDoc, round: RoundRecord, sticky: string | null, turn: (a: string, r: PlannedTurn['reason']) => PlannedTurn): PlannedTurn[] {
  const out: PlannedTurn[] = sticky ? [turn(sticky, 'sticky')] : [];
  const candidates = g.participants.filter((p) => p !== sticky);
  const talk = (id: string) => d.agents.get(id)?.talkativeness ?? DEFAULT_TALKATIVENESS;
  const order = voluntaryOrder(candidates, roundSeq(round), g.state.repliedUpTo ?? {}, talk);
  d.logger.debug({ group: g.id, round: round.id, order }, 'voluntary order');
  for (const p of order) out.push(turn(p, 'voluntary'));
  return out;
}

const DEFAULT_TALKATIVENESS = 0.5;

/**
 * The weight of an agent's wait: 0.25 (talkativeness 0) … 1 (0.5) … 1.75 (1). A quiet agent is
 * asked later than a talkative one that waited as long, but never starved: its wait keeps growing
 * while others speak, so it comes first once it has waited 7× as long as the most talkative one.
 */
export function talkWeight(talkativeness: number): number {
  return 0.25 + 1.5 * Math.min(1, Math.max(0, talkativeness));
}

/**
 * The order voluntary candidates are asked in: longest wait first, where the wait is
 * the number of transcript entries since the agent's last delivered reply (`repliedUpTo`, which
 * is written with that reply), times its talkativeness weight. Agents that never replied come
 * first (the more talkative first); ties keep participant order. A pure function of the round and
 * the stored state — no clock — so a restart derives the same plan, and with
 * `max_voluntary_responders: 1` and nobody passing every agent gets its turn.
 */
export function voluntaryOrder(candidates: string[], at: number, repliedUpTo: Record<string, number>, talkativeness: (id: string) => number): string[] {
  const scored = candidates.map((id, i) => {
    const last = repliedUpTo[id];
    const w = talkWeight(talkativeness(id));
    return { id, i, never: last === undefined, score: last === undefined ? w : Math.max(0, at - last) * w };
  });
  scored.sort((a, b) => Number(b.never) - Number(a.never) || b.score - a.score || a.i - b.i);
  return scored.map((s) => s.id);
}

/** The newest transcript seq the round answers (its id carries it when it has no trigger). */
function roundSeq(round: RoundRecord): number {
  const seqs = round.triggerIds.map(seqOfId);
  return seqs.length > 0 ? Math.max(...seqs) : Number(round.id.replace(/^r/, '')) || 0;
}

/**
 * One cheap call picks the speakers. Returns null when the call fails (the caller falls back to
 * hybrid); names that are not participants are ignored.
 */
async function select(d: RoundDeps, g: GroupDoc, signal: AbortSignal | undefined): Promise<string[] | null> {
  const agents = g.participants.map((p) => d.agents.get(p)).filter((a) => !!a && !g.state.muted.includes(a.id));
  // Reaction notes say nothing about who should answer: they would only crowd out messages.
  const recent = g.transcript.filter((e) => isObservable(e) && !e.reactionOf).slice(-SELECTOR_CONTEXT).map(observationLine).join('\n');
  const roster = agents.map((a) => `- @${a!.id} (${a!.name}): ${a!.persona.trim().split('\n')[0]}`).join('\n');
  const prompt = `Participants:\n${roster}\n\nRecent conversation:\n${recent}\n\nWho should answer the last message? Reply with the handles of at most ${Math.max(1, g.config.max_agent_turns_per_message)} participants, most relevant first, separated by spaces — or NONE if nobody needs to.`;
  try {
    const res = await d.gate.call(
      {
        purpose: 'selector',
        model: d.models.summaryModel ?? d.models.model,
        system: 'You route messages in a group chat to the participants best placed to answer. Answer only with handles like @name, or NONE.',
        messages: [{ role: 'user', content: prompt }],
        maxTokens: 64,
        groupId: g.id,
      },
      g.config.voluntary_timeout_seconds * 1000,
      signal,
    );
    // The selector's cost is the group's too; /group usage lists it on its own line.
    d.groups.addGroupUsage(g, '(selector)', res);
    const ids: string[] = [];
    const words = [...findHandles(res.text), ...res.text.split(/[^\p{L}\p{N}_-]+/u)];
    for (const w of words) {
      for (const id of d.handles.resolve(w, g.participants)) {
        if (!ids.includes(id) && agents.some((a) => a!.id === id) && w.toLowerCase() !== 'all' && w.toLowerCase() !== 'everyone') ids.push(id);
      }
    }
    d.logger.debug({ group: g.id, chosen: ids, answer: res.text.slice(0, 100) }, 'selector chose');
    return ids.slice(0, Math.max(1, g.config.max_agent_turns_per_message));
  } catch (err) {
    d.logger.warn({ group: g.id, err: describeError(err) }, 'selector failed; falling back to hybrid');
    return null;
  }
}
