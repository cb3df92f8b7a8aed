/**
 * A config reload as the router applies it: agents, aliases and group defaults are replaced in
 * place, because the rounds, commands, outbox and channels all hold these same objects; the next
 * round sees the new ones.
 */
import type { AgentDef, GroupConfig } from '../types.js';

export interface Reconfiguration {
  agents: AgentDef[];
  aliases: Record<string, string[]>;
  groupDefaults: GroupConfig;
  /** New fair shares of the model-call slots, when `llm.max_concurrency` changed. */
  shares?: { perGroup: number; perAgent: number } | undefined;
}

/** Make `held` hold what `next` says, keeping the same objects. */
export function replaceInPlace(held: { agents: AgentDef[]; agentMap: Map<string, AgentDef>; aliases: Record<string, string[]>; groupDefaults: GroupConfig }, next: Reconfiguration): void {
  held.agents.splice(0, held.agents.length, ...next.agents);
  held.agentMap.clear();
  for (const a of next.agents) held.agentMap.set(a.id, a);
  for (const k of Object.keys(held.aliases)) delete held.aliases[k];
  Object.assign(held.aliases, next.aliases);
  // Replaced, not merged: a key the new file leaves out goes back to its default there.
  for (const k of Object.keys(held.groupDefaults)) delete (held.groupDefaults as unknown as Record<string, unknown>)[k];
  Object.assign(held.groupDefaults, next.groupDefaults);
}
