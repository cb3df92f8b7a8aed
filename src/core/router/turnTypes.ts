/**
 * The shapes one turn is run with (TurnRunner.ts): how its round controls it, and what each of
 * its steps — checks, prompt, call, outcome — hands the next.
 */
import type { GroupDoc, PlannedTurn, RoundRecord, SessionDoc } from '../records.js';
import type { LlmResponse } from '../ports.js';
import type { ToolInfo } from '../toolPorts.js';
import type { AgentDef, TranscriptEntry } from '../types.js';
import type { FittedPrompt, PromptParts } from '../session/contextBudget.js';
import type { RoundTally } from './RoundTally.js';
import type { ToolTurnResult } from './toolTurn.js';

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

/** What the gate answers a call with. */
export type GateResult = LlmResponse & { latencyMs: number };

/** One turn as it runs: what each of its steps needs. */
export interface Turn {
  g: GroupDoc;
  round: RoundRecord;
  t: PlannedTurn;
  agent: AgentDef;
  tally: RoundTally;
  ctl: TurnControl;
  turnId: string;
  session: SessionDoc;
  /** The last seq the prompt includes: the agent's cursor moves here with its answer. */
  seenUpTo: number;
  parts: PromptParts;
  reactTo: TranscriptEntry | undefined;
  participants: AgentDef[];
  others: AgentDef[];
  mustReply: boolean;
  model: string;
  tools: readonly ToolInfo[];
  /** The prompt as fitted and the window it was fitted to: set when the call starts. */
  prompt?: FittedPrompt | undefined;
  window: number;
}

/** An answered call: its result, its tool steps, and what the stream showed of it. */
export interface Called {
  res: GateResult;
  withTools: ToolTurnResult | undefined;
  streamed: boolean;
  /** The text held back from the stream (it could still have been a pass), now that it is a reply. */
  rest: () => string | null;
}
