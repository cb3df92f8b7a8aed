/**
 * Tool fakes shared by the core's tool-turn tests and the channels' tool tests: a tool host in
 * memory and a model scripted per call (the analyst's turns follow a list of steps).
 */
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import type { ToolCallResult, ToolHost, ToolInfo } from '../../src/core/toolPorts.js';
import type { ToolCall } from '../../src/core/toolTypes.js';

/** Tools in memory: `lookup` only reads, `cancel` changes something (counted), `hang` never answers until aborted. */
export class MemoryTools implements ToolHost {
  /** Every call run, with the arguments it ran with, in order. */
  readonly ran: Array<{ tool: string; input: Record<string, unknown> }> = [];
  cancelled = 0;
  lookups = 0;
  hung: Array<() => void> = [];
  aborted = 0;
  answer = (tool: string, input: Record<string, unknown>): string => (tool === 'lookup' ? `order ${String(input.id)} shipped` : `cancelled ${String(input.id)}`);
  private readonly list: ToolInfo[] = [
    { name: 'orders__lookup', description: 'Look an order up', inputSchema: { type: 'object' }, server: 'orders', tool: 'lookup', readOnly: true, idempotent: false, confirm: 'auto', approvers: 'admins' },
    { name: 'orders__cancel', description: 'Cancel an order', inputSchema: { type: 'object' }, server: 'orders', tool: 'cancel', readOnly: false, idempotent: false, confirm: 'auto', approvers: 'admins' },
    { name: 'orders__hang', description: 'Never answers', inputSchema: { type: 'object' }, server: 'orders', tool: 'hang', readOnly: false, idempotent: false, confirm: 'never', approvers: 'admins' },
    { name: 'orders__peek', description: 'Reads, never answers', inputSchema: { type: 'object' }, server: 'orders', tool: 'peek', readOnly: true, idempotent: false, confirm: 'auto', approvers: 'admins' },
  ];
  toolsFor(agentId: string): readonly ToolInfo[] {
    return agentId === 'analyst' ? this.list : [];
  }
  async call(req: { server: string; tool: string; input: Record<string, unknown>; timeoutMs: number; signal: AbortSignal }): Promise<ToolCallResult> {
    this.ran.push({ tool: req.tool, input: req.input });
    if (req.tool === 'cancel') this.cancelled++;
    if (req.tool === 'lookup') this.lookups++;
    if (req.tool === 'hang' || (req.tool === 'peek' && this.hung.length === 0 && this.lookups === 0)) {
      if (req.tool === 'peek') this.lookups++;
      return new Promise((resolve) => {
        this.hung.push(() => resolve({ outcome: 'ok', content: 'late', bytes: 4 }));
        req.signal.addEventListener('abort', () => {
          this.aborted++;
          resolve({ outcome: 'cancelled', content: 'cancelled', bytes: 0 });
        });
      });
    }
    const content = this.answer(req.tool, req.input);
    return { outcome: 'ok', content, bytes: content.length };
  }
}

export type Step = { calls: ToolCall[]; text?: string } | string;

/** A model that answers each of the analyst's calls from a list (tool calls or text); others pass or say ok. */
export class StepLlm implements LlmProvider {
  readonly name = 'steps';
  readonly requests: LlmRequest[] = [];
  private n = 0;
  /** `ignoresNone`: calls tools even when told to answer in text, as some servers let a model do. */
  constructor(
    private readonly steps: Step[],
    private readonly opts: { ignoresNone?: boolean } = {},
  ) {}
  async complete(req: LlmRequest): Promise<LlmResponse> {
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
    if (req.purpose !== 'turn' || req.agent?.id !== 'analyst') return { text: req.mustReply ? `ok from ${req.agent?.id}` : '[PASS]', model: req.model, usage };
    this.requests.push(req);
    const step = this.steps[Math.min(this.n++, this.steps.length - 1)]!;
    if (typeof step === 'string' || (req.toolChoice === 'none' && !this.opts.ignoresNone)) return { text: typeof step === 'string' ? step : 'answer without tools', model: req.model, usage };
    return { text: step.text ?? '', model: req.model, usage, toolCalls: step.calls };
  }
}

// ---------------------------------------------------------------------------------------------
// For tests of the whole app (the page): tools described by `toolInfo`, answered by a function
// and counted per tool and per id; a model that follows a script of the request.

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
export class CountingTools implements ToolHost {
  /** `server.tool` (and `server.tool:<input.id>` when the input has an id) → calls run. */
  readonly calls = new Map<string, number>();
  /** Every call run, with the arguments it ran with, in order. */
  readonly ran: Array<{ tool: string; input: Record<string, unknown> }> = [];

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
    this.ran.push({ tool: req.tool, input: req.input });
    this.calls.set(key, this.count(key) + 1);
    if (req.input.id !== undefined) this.calls.set(`${key}:${String(req.input.id)}`, this.count(`${key}:${String(req.input.id)}`) + 1);
    const out = await this.answer(req.tool, req.input);
    return typeof out === 'string' ? { outcome: 'ok', content: out, bytes: Buffer.byteLength(out) } : out;
  }
}

const SCRIPT_USAGE = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

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
    if (step === null) return { text: req.mustReply ? `ok from ${req.agent?.id ?? 'model'}` : '[PASS]', model: req.model, usage: SCRIPT_USAGE };
    this.requests.push(req);
    const text = typeof step === 'string' ? step : req.toolChoice === 'none' ? 'answer without tools' : (step.text ?? '');
    // Streamed in one chunk, as a provider that streams would (what it says before calling tools too).
    if (text) req.onDelta?.(text);
    if (typeof step === 'string' || req.toolChoice === 'none') return { text, model: req.model, usage: SCRIPT_USAGE };
    return { text, model: req.model, usage: SCRIPT_USAGE, toolCalls: step.calls };
  }
}

/** The text of the newest message the model is shown in `req`. */
export function lastMessage(req: LlmRequest): string {
  return req.messages.at(-1)?.content ?? '';
}
