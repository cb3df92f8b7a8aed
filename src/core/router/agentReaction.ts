/**
 * An agent reacts instead of replying. On a voluntary turn whose round has a person's message
 * (the newest one, the round's trigger), the prompt offers `[REACT 👍]`; a reply that posts nothing
 * but carried that token (core/text/reactToken.ts, core/router/pass.ts) is a reaction:
 *
 * - recorded as a reaction by the agent (`byKey` `agent:<id>`, its name) on the trigger, with the
 *   note for the agents (carrying the agent's id: its own mailbox skips it), in one record with
 *   the turn's outcome — the agent's history gets `[REACT 👍]` as its turn, its cursor advances
 *   as for a pass — and a quiet decision line ("Analyst reacted 👍") that carries the turn's
 *   prompt reference, as a pass line does;
 * - then shown natively (`Channel.react`) in each chat of the room that has the message: the one
 *   it was written in, by that platform's id of it, and its copies in the others (one posted later
 *   gets it as it is posted, rooms/ChatDelivery.ts); where no channel can (Telegram's fixed set of
 *   emoji, Discord without `agent_reactions: bot`) it stays recorded, the web page shows it, and a
 *   debug line says so.
 *
 * A reaction is not a message: it does not count towards `max_voluntary_responders` or the turn
 * cap, and does not start the agent's cooldown. A message that takes no reaction (deleted
 * meanwhile, or it has all the emoji it may carry) makes the turn a pass.
 */
import type { GroupDoc, RoundRecord } from '../records.js';
import type { AgentDef, PromptRef, TranscriptEntry } from '../types.js';
import { reactToken } from '../text/reactToken.js';
import { decision } from './decisions.js';
import type { RoundDeps } from './RoundDeps.js';
import type { RoundTally } from './RoundTally.js';

export interface AgentReactionTurn {
  g: GroupDoc;
  round: RoundRecord;
  agent: AgentDef;
  emoji: string;
  /** The message reacted to: the round's newest message from a person. */
  trigger: TranscriptEntry;
  tally: RoundTally;
  /** Write the agent's turn (history with what it said, cursor, usage, the round's queue). */
  turn(said: string): void;
  /** Record the turn as a pass instead. */
  passed(): Promise<void>;
  /** The turn's prompt reference, carried by its line. */
  ref(): PromptRef;
  /** The outcome is appended: the next turn of a parallel batch may settle. */
  decided(): void;
}

export async function recordAgentReaction(d: RoundDeps, r: AgentReactionTurn): Promise<void> {
  const { g, agent, emoji } = r;
  let added = false;
  await d.reactions.byAgent(g, r.trigger.id, agent, emoji, async (how) => {
    if (!d.groups.usable(g)) return; // reloaded after a failed write meanwhile
    if (how === null) return r.passed();
    r.turn(reactToken(emoji));
    r.tally.reacted.push(agent.id);
    const line = decision(d, 'react', agent.id, `${agent.name} reacted ${emoji}`, r.round.id);
    const recorded = d.recorder.record(g, { entries: [{ ...line, decision: { ...line.decision!, emoji, prompt: r.ref() } }] });
    r.decided();
    await recorded;
    added = how === 'added';
  });
  if (!added || !d.groups.usable(g)) return;
  const native = await d.recorder.showReaction(g, agent, r.trigger, emoji);
  if (!native) d.logger.debug({ group: g.id, agent: agent.id, entry: r.trigger.id, emoji }, `${agent.name}'s reaction ${emoji} is not shown natively in this channel; recorded (the web page shows it)`);
}
