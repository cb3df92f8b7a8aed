/**
 * The checks that may skip a turn before any model call: the agent already answered this round's
 * messages, it is muted, the round has its voluntary replies or reached its turn cap, the agent is
 * cooling down (a person's @mention waits it out instead), or a bot pair used its budget. A
 * skipped turn leaves the queue, with a quiet decision line where one explains it.
 */
import type { GroupDoc, PlannedTurn, RoundRecord } from '../records.js';
import type { AgentDef, TranscriptEntry } from '../types.js';
import { seqOfId } from '../groups/evolve.js';
import type { RoundDeps } from './RoundDeps.js';
import { decide, drop } from './decisions.js';

/** Human-caused turns are always answered and wait out cooldowns; the others can be skipped. */
export const HUMAN_CAUSED = new Set<PlannedTurn['reason']>(['addressed', 'sticky', 'rotation', 'direct']);

export interface TurnCheck {
  g: GroupDoc;
  round: RoundRecord;
  t: PlannedTurn;
  agent: AgentDef;
  /** Tool calls of this turn are recorded: it resumes (after an approval, a restart). */
  resuming: boolean;
  /** The round's newest human message, if any (read when needed: a cooldown wait may see it change). */
  trigger: () => TranscriptEntry | undefined;
  /** Ends a cooldown wait: `/stop`. */
  stop: AbortSignal;
}

/** True when the turn goes on to its model call; false when it was skipped (and dropped). */
export async function mayRun(d: RoundDeps, c: TurnCheck, notes: Set<string>): Promise<boolean> {
  const { g, round, t, agent } = c;
  const cfg = g.config;
  if (HUMAN_CAUSED.has(t.reason) && !round.forced && !c.resuming && alreadySeen(round, g.state.repliedUpTo?.[agent.id] ?? 0)) {
    // A reply the agent delivered had already seen this round's message(s); no need to wait
    // out a cooldown first. A pass or a failure never counts as an answer.
    drop(d, g, round, t);
    await decide(d, g, round, 'batch', agent.id, `${agent.name} already answered this together with an earlier message`);
    return false;
  }
  const cooldownLeft = (g.state.lastSpoke[agent.id] ?? -Infinity) + cfg.cooldown_seconds * 1000 - d.clock.now();
  if (!HUMAN_CAUSED.has(t.reason)) {
    if (!(await mayRunUnasked(d, c, notes, cooldownLeft))) return false;
  } else if (cooldownLeft > 0) {
    // A human's @mention is never dropped: wait the cooldown out.
    try {
      await d.mailbox.outside(g.id, () => d.clock.sleep(cooldownLeft, AbortSignal.any([d.shutdown, c.stop])));
    } catch {
      return false;
    }
  }
  if (round.asked.includes(agent.id) && t.reason === 'voluntary') return dropped(d, c);
  // Only a turn that calls the model counts against its pair's budget (see rooms/BotPairs).
  const bot = c.trigger();
  const refused = bot?.authorKind === 'bot' && !c.resuming && d.botPairs.answerRefused(g.id, bot, agent, d.clock.now());
  if (refused) {
    drop(d, g, round, t);
    await decide(d, g, round, 'cap', agent.id, refused);
    return false;
  }
  if (t.reason === 'voluntary') d.groups.updateRound(g, round, { asked: [...round.asked, agent.id] });
  return true;
}

/** A turn nobody asked for (voluntary, a reaction, selected): muted, capped or cooling down skips it. */
async function mayRunUnasked(d: RoundDeps, c: TurnCheck, notes: Set<string>, cooldownLeft: number): Promise<boolean> {
  const { g, round, t, agent } = c;
  const cfg = g.config;
  if (t.reason === 'voluntary' && g.state.muted.includes(agent.id)) return dropped(d, c);
  if (t.reason === 'voluntary' && round.voluntary >= cfg.max_voluntary_responders) return dropped(d, c);
  if (round.capped >= cfg.max_agent_turns_per_message) {
    drop(d, g, round, t);
    if (!notes.has('cap')) {
      notes.add('cap');
      await decide(d, g, round, 'cap', undefined, `turn cap reached (${cfg.max_agent_turns_per_message} agent replies for this message)`);
    }
    return false;
  }
  if (cooldownLeft > 0) {
    drop(d, g, round, t);
    await decide(d, g, round, 'cooldown', agent.id, `${agent.name} is cooling down (${Math.ceil(cooldownLeft / 1000)}s left)`);
    return false;
  }
  return true;
}

function dropped(d: RoundDeps, c: TurnCheck): false {
  drop(d, c.g, c.round, c.t);
  return false;
}

/** Every message of the round is at or below `upTo` (what the agent's last delivered reply had seen). */
function alreadySeen(round: RoundRecord, upTo: number): boolean {
  if (round.triggerIds.length === 0) return false;
  return Math.max(...round.triggerIds.map(seqOfId)) <= upTo;
}
