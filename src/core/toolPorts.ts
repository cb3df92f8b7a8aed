/**
 * The port to the agents' tools: the MCP servers, as the core sees them (implemented in
 * src/tools). Its own file beside ports.ts, which holds the channel, store and model ports.
 */
import type { Attachment } from './fileTypes.js';
import type { ToolOutcome, ToolSpec } from './toolTypes.js';

/** A tool an agent may call, as the tool host describes it. */
export interface ToolInfo extends ToolSpec {
  /** The MCP server's name in `tools:` and the tool's own name there (`server.tool` in the room). */
  server: string;
  tool: string;
  /** MCP annotations: the tool only reads (`readOnlyHint`); calling it twice does no more than once (`idempotentHint`). */
  readOnly: boolean;
  idempotent: boolean;
  /** `tools.<server>.confirm`: when a person must approve a call. */
  confirm: 'auto' | 'always' | 'never';
  /** `tools.<server>.approvers`: who may approve (`admins`: chat admins, Discord admins, web token holders). */
  approvers: 'admins' | 'anyone';
}

/** What a tool call gave back. `content` is already cut to `limits.max_tool_result_bytes`, with a visible marker. */
export interface ToolCallResult {
  outcome: Extract<ToolOutcome, 'ok' | 'error' | 'timeout' | 'unavailable' | 'cancelled'>;
  content: string;
  /** Size in bytes of the whole answer before the cut. */
  bytes: number;
  /**
   * Images (and PDFs) the tool returned, already kept (`Files.keep`): the agent posts them with its
   * reply under its own identity. Their lines stand in `content` for the model.
   */
  attachments?: Attachment[] | undefined;
}

/** The MCP servers, as the core sees them. */
export interface ToolHost {
  /** The tools `agentId` may call, in a stable order; empty when it has none or none is reachable. */
  toolsFor(agentId: string): readonly ToolInfo[];
  /**
   * Call one tool. Never throws: a server that is down answers `unavailable`, a slow one
   * `timeout` (after `timeoutMs`), an aborted `signal` cancels the call on the server (`cancelled`).
   */
  call(req: { server: string; tool: string; input: Record<string, unknown>; timeoutMs: number; signal: AbortSignal }): Promise<ToolCallResult>;
}
