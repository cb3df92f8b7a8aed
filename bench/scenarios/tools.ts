/**
 * What Chorus adds around one tool call: the same @analyst message
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

export interface ToolTokensResult {
  /** Prompt tokens one step adds to the turn's next call (the call and its result), median. */
  stepTokens: number;
  /** Share of the step call's prompt read from the cache, median. */
  stepCachedShare: number;
  /** Prompt tokens the tool definitions add to a turn's first call. */
  definitionTokens: number;
}

/** Tokens per step: the real Anthropic provider against the fake Messages API, whose cache accounting follows the documented rules. */
export async function toolTokensRun(o: { turns: number }): Promise<ToolTokensResult> {
  const { startFakeAnthropic, callTool } = await import('../../tests/fakes/anthropic/index.js');
  const { AnthropicProvider } = await import('../../src/llm/AnthropicProvider.js');
  const { silentLogger } = await import('../../tests/helpers/logger.js');
  const lastIsToolResult = (body: Record<string, unknown>): boolean => {
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    const last = messages.at(-1)?.content;
    return Array.isArray(last) && last.some((b: { type?: string }) => b.type === 'tool_result');
  };
  const fake = await startFakeAnthropic({ reply: (req) => (lastIsToolResult(req.body) ? 'Order 42 shipped on Monday; it should arrive on Thursday.' : callTool(LOOKUP.name, { id: '42' }, { text: 'Let me look it up.' })) });
  const provider = new AnthropicProvider({ config: { provider: 'anthropic', api_key: 'sk-ant-bench-0000', base_url: fake.url, model: 'claude-opus-4-5', summary_model: 'claude-haiku-4-5', max_concurrency: 4, timeout_seconds: 10, max_retries: 0, max_tokens: 512, prices: {} }, logger: silentLogger });
  const firstCall = async (tools: ToolHost | undefined): Promise<{ step: number[]; cached: number[]; first: number }> => {
    const b = await benchApp({ llm: provider, agents: 3, personaTokens: 1000, model: 'claude-opus-4-5', tools, group: { reply_strategy: 'mention_only' } });
    const start = fake.messages().length;
    try {
      const { router } = b.app;
      await router.gateway.createGroup({ title: 'Tool tokens', participants: ['analyst', 'writer', 'critic'], id: 'tokens' });
      for (let i = 0; i < o.turns; i++) {
        const res = await router.receive(inbound('tokens', `@analyst where is order 42 (question ${i})?`));
        if (res.status !== 'recorded') throw new Error(`tool tokens: not recorded (${res.status})`);
        await router.idle();
      }
    } finally {
      await b.close();
    }
    const calls = fake.messages().slice(start).filter((r) => r.cache);
    const total = (r: (typeof calls)[number]) => r.cache!.totalTokens;
    const step: number[] = [];
    const cached: number[] = [];
    for (let i = 1; i < calls.length; i++) {
      if (!lastIsToolResult(calls[i]!.body)) continue;
      step.push(total(calls[i]!) - total(calls[i - 1]!));
      cached.push(calls[i]!.cache!.usage.cache_read_input_tokens / total(calls[i]!));
    }
    return { step, cached, first: total(calls[0]!) };
  };
  try {
    const plain = await firstCall(undefined);
    const withTools = await firstCall(new InstantTools());
    return { stepTokens: percentile(withTools.step, 50), stepCachedShare: percentile(withTools.cached, 50), definitionTokens: withTools.first - plain.first };
  } finally {
    await fake.close();
  }
}
