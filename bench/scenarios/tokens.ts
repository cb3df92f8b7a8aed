/**
 * Token cost and call count: what Chorus spends on the model per message.
 *
 * - cache: a 30-turn, 3-agent conversation through the real router and the real Anthropic provider
 *   (official SDK, streaming) against the fake Messages API, whose cache accounting follows the
 *   documented rules. Effective input cost with caching (uncached input at the input price, cache
 *   writes at ×1.25, cache reads at ×0.1, from `estimateCost`) divided by the cost of the same
 *   tokens all billed as plain input. Output tokens are the same either way and left out.
 * - voluntary: LLM calls caused by one unaddressed message in an 8-agent group, for `hybrid` (every
 *   participant may be asked; here all pass, the worst case) and `selector` (one cheap call picks
 *   the speakers; here it picks one).
 */
import { AnthropicProvider } from '../../src/llm/AnthropicProvider.js';
import { estimateCost } from '../../src/llm/pricing.js';
import type { ChorusConfig } from '../../src/config/schema.js';
import { startFakeAnthropic } from '../../tests/fakes/anthropic/index.js';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { silentLogger } from '../../tests/helpers/logger.js';
import { AGENT_IDS, benchApp, inbound } from '../lib.js';

const MODEL = 'claude-opus-4-5';

export interface CacheResult {
  ratio: number;
  calls: number;
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export async function cacheRun(o: { turns: number; personaTokens: number }): Promise<CacheResult> {
  const fake = await startFakeAnthropic({
    reply: (_req, n) => `Point ${n}: the figures hold up, but the second quarter depends on one customer renewing, so treat the forecast as a range rather than a number.`,
  });
  const llmConfig: ChorusConfig['llm'] = {
    provider: 'anthropic',
    api_key: 'sk-ant-bench-0000',
    base_url: fake.url,
    model: MODEL,
    summary_model: 'claude-haiku-4-5',
    max_concurrency: 4,
    timeout_seconds: 10,
    max_retries: 0,
    max_tokens: 512,
    prices: {},
  };
  const provider = new AnthropicProvider({ config: llmConfig, logger: silentLogger });
  const b = await benchApp({ llm: provider, agents: 3, personaTokens: o.personaTokens, model: MODEL });
  try {
    const { router } = b.app;
    const ids = ['analyst', 'writer', 'critic'];
    await router.gateway.createGroup({ title: 'Market team', participants: ids, id: 'cache-room' });
    for (let i = 0; i < o.turns; i++) {
      const res = await router.receive(inbound('cache-room', `@${ids[i % 3]} what do you make of point ${i} in the plan?`));
      if (res.status !== 'recorded') throw new Error(`cache: not recorded (${res.status})`);
      await router.idle();
    }
    const usage = Object.values(router.gateway.getGroup('cache-room')!.usage);
    const sum = (k: 'inputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'calls') => usage.reduce((n, u) => n + u[k], 0);
    const inputTokens = sum('inputTokens');
    const cacheReadTokens = sum('cacheReadTokens');
    const cacheWriteTokens = sum('cacheWriteTokens');
    const withCache = estimateCost(MODEL, { inputTokens, cacheReadTokens, cacheWriteTokens, outputTokens: 0 })!;
    const without = estimateCost(MODEL, { inputTokens: inputTokens + cacheReadTokens + cacheWriteTokens, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })!;
    return { ratio: withCache / without, calls: sum('calls'), inputTokens, cacheReadTokens, cacheWriteTokens };
  } finally {
    await b.close();
    await fake.close();
  }
}

/** Calls per unaddressed message, one number per message sent. */
export async function voluntaryRun(o: { strategy: 'hybrid' | 'selector'; messages: number }): Promise<number[]> {
  const llm = new FakeLlm({ selector: '@analyst' });
  const b = await benchApp({ llm, agents: 8, group: { reply_strategy: o.strategy } });
  try {
    const { router } = b.app;
    await router.gateway.createGroup({ title: 'Eight', participants: [...AGENT_IDS], id: 'eight' });
    const out: number[] = [];
    for (let i = 0; i < o.messages; i++) {
      const before = llm.calls.length;
      await router.receive(inbound('eight', `Thinking out loud about option ${i} for the launch.`));
      await router.idle();
      out.push(llm.calls.filter((c, k) => k >= before && c.purpose !== 'summary').length);
    }
    return out;
  } finally {
    await b.close();
  }
}
