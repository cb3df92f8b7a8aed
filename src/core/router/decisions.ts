/**
 * Quiet decision lines (a pass, a cooldown, the turn cap… — hidden from the agents, shown on the
 * page) and taking a turn off the round's queue: what both the round and its turns write. Kept
 * apart so RoundRunner and TurnRunner share them without importing each other.
 */
import type { GroupDoc, PlannedTurn, RoundRecord } from '../records.js';
import type { DecisionType } from '../types.js';
import type { NewEntry } from './Recorder.js';
import type { RoundDeps } from './RoundDeps.js';

/** Take `t` off the round's remaining turns (the caller's next record makes it durable). */
export function drop(d: Pick<RoundDeps, 'groups'>, g: GroupDoc, round: RoundRecord, t: PlannedTurn): void {
  d.groups.updateRound(g, round, { queue: round.queue.filter((x) => x !== t) });
}

/** A decision entry, to record together with other entries. Named after the agent, or Chorus. */
export function decision(d: Pick<RoundDeps, 'agents' | 'logger'>, type: DecisionType, agentId: string | undefined, detail: string, roundId: string): NewEntry {
  const name = agentId ? (d.agents.get(agentId)?.name ?? agentId) : 'Chorus';
  d.logger.debug({ round: roundId, agent: agentId, decision: type }, detail);
  return { kind: 'decision', authorId: 'system', authorName: name, text: detail, decision: { type, agentId, detail }, hiddenFromAgents: true, roundId };
}

/** A quiet decision line, recorded with the round's progress. */
export async function decide(d: Pick<RoundDeps, 'agents' | 'logger' | 'recorder'>, g: GroupDoc, round: RoundRecord, type: DecisionType, agentId: string | undefined, detail: string): Promise<void> {
  await d.recorder.record(g, { entries: [decision(d, type, agentId, detail, round.id)] });
}
