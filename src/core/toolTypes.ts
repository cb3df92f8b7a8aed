/**
 * The shapes of tool calls: a tool as the model is offered it, a call it asks for, a model ↔ tools
 * round trip, and a step as the room sees it. Plain JSON, like everything in types.ts.
 */

/** A tool as the model is offered it. `name` suits every provider: letters, digits, `_` and `-`, at most 64. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  inputSchema: Record<string, unknown>;
}

/** A call the model asked for: the provider's call id, the tool's `ToolSpec.name`, the parsed arguments. */
export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** How a tool call ended, as the model is told and the room is shown. */
export type ToolOutcome = 'ok' | 'error' | 'timeout' | 'unavailable' | 'denied' | 'interrupted' | 'cancelled';

/**
 * One model ↔ tools round trip of a turn, as sent back to the model: what the model said before
 * calling, its calls in order, and one result per call (same order, matched by `callId`).
 */
export interface ToolStep {
  text: string;
  calls: ToolCall[];
  results: { callId: string; content: string; isError: boolean }[];
}

/** A tool step as the room sees it (a `tool` transcript entry). */
export interface ToolStepView {
  /** Chorus's id of the call (what `/approve <id>` names). */
  id: string;
  server: string;
  tool: string;
  /** The arguments, secrets redacted. */
  input: Record<string, unknown>;
  /** `waiting`: the request a person is asked to approve (its own entry; the outcome follows in another). */
  outcome: ToolOutcome | 'waiting';
  /** The result as the model got it (already cut to `limits.max_tool_result_bytes`), secrets redacted. */
  result: string;
  /** Size of the tool's whole answer before any cut. */
  resultBytes: number;
  /** Who approved or denied it, when it needed a person. */
  decidedBy?: string | undefined;
  /** A request (`waiting`): when it is refused if nobody decides (epoch ms). */
  deadline?: number | undefined;
  /** A request (`waiting`): the digest of the call a decision may name (see text/approvalText.ts). */
  digest?: string | undefined;
}
