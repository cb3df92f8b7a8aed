/**
 * What running rounds needs from the router: the shared services a round, its turns, the
 * speaker selector (planning) and the background summaries use. Its own file so those parts
 * depend on this contract, not on each other.
 */
import type { BotPairs } from '../rooms/BotPairs.js';
import type { Clock, Logger } from '../ports.js';
import type { ToolHost } from '../toolPorts.js';
import type { GroupDoc } from '../records.js';
import type { AgentDef } from '../types.js';
import type { Files } from '../fileTypes.js';
import type { EventHub } from '../events.js';
import type { Metrics } from '../metrics.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { GroupMailbox } from '../groups/GroupMailbox.js';
import type { Reactions } from '../groups/Reactions.js';
import type { Recorder } from './Recorder.js';
import type { HandleIndex } from './mentions.js';
import type { LlmGate } from './LlmGate.js';

/** What a round needs from the router. */
/**
 * The model settings of turns. `summaryModel` null: each agent's own model summarises its history.
 * `contextTokens`: `llm.context_tokens`; `defaultContextTokens`: the provider's default window (see
 * contextBudget). `maxImagesInPrompt`: `llm.max_images_in_prompt` (absent: DEFAULT_MAX_IMAGES).
 */
export interface ModelSettings {
  model: string;
  summaryModel: string | null;
  maxTokens: number;
  contextTokens?: number | null | undefined;
  defaultContextTokens?: number | undefined;
  maxImagesInPrompt?: number | undefined;
}

export interface RoundDeps {
  groups: GroupManager;
  agents: ReadonlyMap<string, AgentDef>;
  handles: HandleIndex;
  gate: LlmGate;
  clock: Clock;
  events: EventHub;
  metrics: Metrics;
  logger: Logger;
  models: ModelSettings;
  /** Kept files: the bytes a turn's images are read from when the request is sent. */
  files: Pick<Files, 'read'>;
  shutdown: AbortSignal;
  /** The one path that records, persists, publishes and delivers entries. */
  recorder: Recorder;
  /** Agents' `[REACT 👍]`: recorded in the queue people's reactions go through (agentReaction.ts). */
  reactions: Pick<Reactions, 'byAgent'>;
  /** Show or hide the typing indicator for an agent. */
  typing(g: GroupDoc, agent: AgentDef, active: boolean): void;
  /** The agents' tools (MCP servers); a host with none when no `tools:` are configured. */
  tools: ToolHost;
  /** Secrets out of what the room is shown of tool calls, as in logs. */
  redact: (text: string) => string;
  /** How often an agent may answer a bot that is not an agent (against two bots looping). */
  botPairs: BotPairs;
  /** Each group's one writer: a round is a task of it, and steps outside for what is slow. */
  mailbox: GroupMailbox;
}
