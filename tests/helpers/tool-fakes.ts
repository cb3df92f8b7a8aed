/**
 * Tool fakes shared by the core's tool-turn tests and the channels' tool tests: a tool host in
 * memory and a model scripted per call (the analyst's turns follow a list of steps).
 */
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import type { ToolCallResult, ToolHost, ToolInfo } from '../../src/core/toolPorts.js';
import type { ToolCall } from '../../src/core/types.js';

/** Tools in memory: `lookup` only reads, `cancel` changes something (counted), `hang` never answers until aborted. */
export class MemoryTools implements ToolHost {
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
  constructor(private readonly steps: Step[]) {}
  async complete(req: LlmRequest): Promise<LlmResponse> {
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
    if (req.purpose !== 'turn' || req.agent?.id !== 'analyst') return { text: req.mustReply ? `ok from ${req.agent?.id}` : '[PASS]', model: req.model, usage };
    this.requests.push(req);
    const step = this.steps[Math.min(this.n++, this.steps.length - 1)]!;
    if (typeof step === 'string' || req.toolChoice === 'none') return { text: typeof step === 'string' ? step : 'answer without tools', model: req.model, usage };
    return { text: step.text ?? '', model: req.model, usage, toolCalls: step.calls };
  }
}
