/**
 * One tools/call through a connected client, mapped to the outcomes the core knows. The SDK does
 * the protocol work: its `timeout` and `signal` request options both send MCP
 * `notifications/cancelled` to the server, so an abandoned call stops there too.
 *
 * A result with `isError` is the tool's own failure (`error`); an MCP error answer (bad arguments,
 * unknown tool) is also `error`; a connection that closed or a transport that failed is
 * `unavailable`; the caller's abort is `cancelled`; the time limit is `timeout`.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCallResult } from '../core/toolPorts.js';
import { renderResult, type ToolResultLike } from './content.js';
import { describe } from './errors.js';
import { keepToolFiles } from './toolFiles.js';
import type { Files } from '../core/fileTypes.js';
import type { Logger } from '../core/ports.js';

export interface CallRequest {
  server: string;
  tool: string;
  input: Record<string, unknown>;
  timeoutMs: number;
  signal: AbortSignal;
  maxBytes: number;
  /** Where images a tool returns are kept (toolFiles.ts); without it they stay lines. */
  files?: { keeper: Pick<Files, 'keep' | 'maxPerMessage'>; logger: Logger } | undefined;
}

/** A result this host wrote itself (not the tool's answer). */
export function said(outcome: ToolCallResult['outcome'], content: string): ToolCallResult {
  return { outcome, content, bytes: Buffer.byteLength(content, 'utf8') };
}

export function unavailable(server: string, reason: string): ToolCallResult {
  return said('unavailable', `the MCP server "${server}" is unavailable: ${reason}`);
}

/**
 * `downReason` is asked when the connection closed during the call: by then the supervisor knows
 * why (the process exited, with its last words). `transportFailed` is told when the failure was
 * not an answer from the server, so an HTTP server can be checked and reconnected.
 */
export async function callTool(client: Client, req: CallRequest, hooks: { downReason(): string | undefined; transportFailed(err: unknown): void }): Promise<ToolCallResult> {
  const label = `${req.server}.${req.tool}`;
  if (req.signal.aborted) return said('cancelled', `${label} was cancelled before it started`);
  // The SDK adds an abort listener per request and never removes it; a signal that lives for a
  // whole turn would collect them. A per-call controller is dropped with the call.
  const local = new AbortController();
  const onAbort = () => local.abort(req.signal.reason);
  req.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await client.callTool({ name: req.tool, arguments: req.input }, undefined, { signal: local.signal, timeout: Math.max(1, req.timeoutMs) });
    const { content, bytes } = renderResult(result as ToolResultLike, req.maxBytes);
    const attachments = req.files ? await keepToolFiles(result as ToolResultLike, req.files.keeper, label, req.files.logger) : [];
    return { outcome: result.isError === true ? 'error' : 'ok', content: content || '(the tool returned nothing)', bytes, ...(attachments.length > 0 ? { attachments } : {}) };
  } catch (err) {
    if (req.signal.aborted) return said('cancelled', `${label} was cancelled`);
    if (err instanceof McpError) {
      if (err.code === ErrorCode.RequestTimeout) return said('timeout', `${label} did not answer within ${seconds(req.timeoutMs)}`);
      if (err.code === ErrorCode.ConnectionClosed) return unavailable(req.server, hooks.downReason() ?? 'the connection closed during the call');
      return said('error', `${label} failed: ${describe(err)}`);
    }
    hooks.transportFailed(err);
    const reason = describe(err);
    return unavailable(req.server, reason === 'Not connected' ? (hooks.downReason() ?? 'not connected') : reason);
  } finally {
    req.signal.removeEventListener('abort', onAbort);
  }
}

/** 30000 → "30 s", 1500 → "1.5 s". */
function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
