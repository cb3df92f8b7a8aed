/**
 * Agents' tools without MCP servers, for tests that run the real app: a tool host in memory that
 * counts the calls it runs, and a model that asks for tool calls by a script (what it asks for may
 * depend on the request: the last message, the steps of the turn so far).
 */
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import type { ToolCallResult, ToolHost, ToolInfo } from '../../src/core/toolPorts.js';
import type { ToolCall } from '../../src/core/types.js';

/** A tool as the host describes it; `name` is `server__tool`, and it needs approval when it changes things. */
export function toolInfo(server: string, tool: string, opts: Partial<Pick<ToolInfo, 'readOnly' | 'idempotent' | 'confirm' | 'approvers' | 'description'>> = {}): ToolInfo {
  return {
    name: `${server}__${tool}`,
    description: opts.description ?? `${server}.${tool}`,
    inputSchema: { type: 'object' },
    server,
    tool,
    readOnly: opts.readOnly ?? false,
    idempotent: opts.idempotent ?? false,
    confirm: opts.confirm ?? 'auto',
    approvers: opts.approvers ?? 'admins',
  };
}

type Answer = (tool: string, input: Record<string, unknown>) => ToolCallResult | string | Promise<ToolCallResult | string>;

/** Tools in memory: every call is counted (`count`) as it starts, and answered by `answer` (which may take its time). */
export class MemoryTools implements ToolHost {
  /** `server.tool` (and `server.tool:<input.id>` when the input has an id) → calls run. */
  readonly calls = new Map<string, number>();

  constructor(
    private readonly list: readonly ToolInfo[],
    private readonly answer: Answer,
    /** The agents that have these tools (all when unset). */
    private readonly agents?: readonly string[],
  ) {}

  toolsFor(agentId: string): readonly ToolInfo[] {
    return !this.agents || this.agents.includes(agentId) ? this.list : [];
  }

  count(key: string): number {
    return this.calls.get(key) ?? 0;
  }

  async call(req: { server: string; tool: string; input: Record<string, unknown>; timeoutMs: number; signal: AbortSignal }): Promise<ToolCallResult> {
    const key = `${req.server}.${req.tool}`;
    this.calls.set(key, this.count(key) + 1);
    if (req.input.id !== undefined) this.calls.set(`${key}:${String(req.input.id)}`, this.count(`${key}:${String(req.input.id)}`) + 1);
    const out = await this.answer(req.tool, req.input);
    return typeof out === 'string' ? { outcome: 'ok', content: out, bytes: Buffer.byteLength(out) } : out;
  }
}

/** What the model does on one call: answer (a string) or ask for tools, with what it says first. */
export type Step = string | { calls: ToolCall[]; text?: string };

const USAGE = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

/**
 * A model whose turns follow `script(req)`; other calls (summaries, selectors) and agents the
 * script leaves out (`null`) pass or, when they must reply, say "ok". With `toolChoice: 'none'`
 * (the step cap) a step that asks for tools becomes a short answer. A turn's text is streamed
 * (one chunk) before the call returns, tool calls or not.
 */
export class ScriptedToolLlm implements LlmProvider {
  readonly name = 'scripted-tools';
  readonly requests: LlmRequest[] = [];

  constructor(private readonly script: (req: LlmRequest) => Step | null) {}

  async complete(req: LlmRequest): Promise<LlmResponse> {
    const step = req.purpose === 'turn' ? this.script(req) : null;
    if (step === null) return { text: req.mustReply ? `ok from ${req.agent?.id ?? 'model'}` : '[PASS]', model: req.model, usage: USAGE };
    this.requests.push(req);
    const text = typeof step === 'string' ? step : req.toolChoice === 'none' ? 'answer without tools' : (step.text ?? '');
    // Streamed in one chunk, as a provider that streams would (what it says before calling tools too).
    if (text) req.onDelta?.(text);
    if (typeof step === 'string' || req.toolChoice === 'none') return { text, model: req.model, usage: USAGE };
    return { text, model: req.model, usage: USAGE, toolCalls: step.calls };
  }
}

/** The text of the newest message the model is shown in `req`. */
export function lastMessage(req: LlmRequest): string {
  return req.messages.at(-1)?.content ?? '';
}
