/**
 * What Chorus adds around one tool call (issue: agents that act): the same @analyst message
 * answered with and without one read-only tool step, the model and the tool both instant, through
 * the real router and the file store (fsync as configured). The difference of the medians is what
 * one step costs Chorus: recording the call before it runs (one durable write), its result and
 * its transcript line after (another), and a second model call.
 */
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import type { ToolCallResult, ToolHost, ToolInfo } from '../../src/core/toolPorts.js';
import { benchApp, inbound, now, percentile } from '../lib.js';

const LOOKUP: ToolInfo = { name: 'orders__lookup', description: 'Look an order up by id', inputSchema: { type: 'object', properties: { id: { type: 'string' } } }, server: 'orders', tool: 'lookup', readOnly: true, idempotent: true, confirm: 'auto', approvers: 'admins' };

/** One instant read-only tool. */
class InstantTools implements ToolHost {
  toolsFor(): readonly ToolInfo[] {
    return [LOOKUP];
  }
  async call(req: { input: Record<string, unknown> }): Promise<ToolCallResult> {
    const content = `order ${String(req.input.id)}: shipped on Monday, tracking 1Z999`;
    return { outcome: 'ok', content, bytes: content.length };
  }
}

/** Instant model: with `tool`, the analyst's first call of a turn asks for the lookup, the second answers. */
class InstantModel implements LlmProvider {
  readonly name = 'instant';
  constructor(private readonly tool: boolean) {}
  async complete(req: LlmRequest): Promise<LlmResponse> {
    const usage = { inputTokens: 100, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0 };
    if (req.purpose !== 'turn') return { text: 'NONE', model: req.model, usage };
    if (this.tool && !req.toolSteps?.length && req.tools?.length) return { text: '', model: req.model, usage, toolCalls: [{ id: `c${Math.random()}`, name: LOOKUP.name, input: { id: '42' } }] };
    return { text: 'Order 42 shipped on Monday.', model: req.model, usage };
  }
}

export interface ToolOverheadResult {
  /** Median ms from receive to the reply delivered, with one tool step and without. */
  withTool: number;
  without: number;
  /** What one step adds (median difference). */
  perStep: number;
}

async function timed(tool: boolean, o: { messages: number; warmup: number }): Promise<number> {
  const b = await benchApp({ llm: new InstantModel(tool), agents: 3, tools: new InstantTools(), group: { reply_strategy: 'mention_only' } });
  try {
    const { router } = b.app;
    await router.gateway.createGroup({ title: 'Tools', participants: ['analyst', 'writer', 'critic'], id: 'room' });
    const samples: number[] = [];
    for (let i = 0; i < o.warmup + o.messages; i++) {
      const t0 = now();
      const res = await router.receive(inbound('room', `@analyst where is order ${i}?`));
      if (res.status !== 'recorded') throw new Error(`tools: message not recorded (${res.status})`);
      await router.idle();
      if (i >= o.warmup) samples.push(now() - t0);
    }
    return percentile(samples, 50);
  } finally {
    await b.close();
  }
}

export async function toolOverheadRun(o: { messages: number; warmup: number }): Promise<ToolOverheadResult> {
  const without = await timed(false, o);
  const withTool = await timed(true, o);
  return { withTool, without, perStep: withTool - without };
}
