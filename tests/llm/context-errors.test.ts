/**
 * "Prompt too long" answers come out of both real providers (official SDKs, local fake
 * servers) as `context_too_long` with the figures the server gave, not as a bad request.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/llm/AnthropicProvider.js';
import { OpenAiProvider } from '../../src/llm/OpenAiProvider.js';
import { ContextTooLongError } from '../../src/core/session/contextBudget.js';
import { LlmError } from '../../src/core/errors.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { silentLogger } from '../helpers/logger.js';
import { llmConfig, request, TEST_KEY } from './support.js';

let anthropic: FakeAnthropicServer | undefined;
let openai: FakeOpenAiServer | undefined;
afterEach(async () => {
  await anthropic?.close();
  await openai?.close();
  anthropic = openai = undefined;
});

async function failure(p: Promise<unknown>): Promise<LlmError> {
  try {
    await p;
  } catch (err) {
    return err as LlmError;
  }
  throw new Error('expected a failure');
}

describe('context too long', () => {
  it('Anthropic: 400 "prompt is too long: N tokens > M maximum" (streamed or not)', async () => {
    anthropic = await startFakeAnthropic({ apiKey: TEST_KEY, reply: () => ({ status: 400, type: 'invalid_request_error', message: 'prompt is too long: 208310 tokens > 200000 maximum' }) });
    const p = new AnthropicProvider({ config: llmConfig({ base_url: anthropic.url, max_retries: 0 }), logger: silentLogger });
    for (const onDelta of [undefined, () => undefined]) {
      const e = await failure(p.complete(request({ messages: [{ role: 'user', content: 'hi' }], onDelta })));
      expect(e).toBeInstanceOf(ContextTooLongError);
      expect(e.code).toBe('context_too_long');
      expect(e.retryable).toBe(false);
      expect(e).toMatchObject({ limit: 200000, promptTokens: 208310 });
      expect(e.message).not.toContain(TEST_KEY);
    }
    // Any other 400 stays a bad request.
    anthropic.queue({ status: 400, type: 'invalid_request_error', message: 'messages: roles must alternate' });
    const other = await failure(p.complete(request({ messages: [{ role: 'user', content: 'hi' }] })));
    expect(other.code).not.toBe('context_too_long');
  });

  it("OpenAI-compatible: llama.cpp's exceed_context_size_error with n_ctx and n_prompt_tokens", async () => {
    openai = await startFakeOpenAi({ nCtx: 64 });
    const p = new OpenAiProvider({ config: llmConfig({ provider: 'openai', base_url: openai.url, model: 'local', max_retries: 0 }), logger: silentLogger });
    for (const onDelta of [undefined, () => undefined]) {
      const e = await failure(p.complete({ purpose: 'turn', model: 'local', system: 'S', messages: [{ role: 'user', content: 'x'.repeat(400) }], onDelta }));
      expect(e).toBeInstanceOf(ContextTooLongError);
      expect(e).toMatchObject({ code: 'context_too_long', limit: 64, promptTokens: 101 });
    }
    expect(openai.requests.every((r) => r.status === 400 && r.overflow)).toBe(true);
    // Under the window the same server answers.
    const ok = await p.complete({ purpose: 'turn', model: 'local', system: 'S', messages: [{ role: 'user', content: 'short' }] });
    expect(ok.usage.inputTokens).toBe(3);
  });

  it('OpenAI: context_length_exceeded', async () => {
    openai = await startFakeOpenAi({
      reply: () => ({ status: 400, code: 'context_length_exceeded', type: 'invalid_request_error', message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages." }),
    });
    const p = new OpenAiProvider({ config: llmConfig({ provider: 'openai', base_url: openai.url, model: 'gpt-x', max_retries: 0 }), logger: silentLogger });
    const e = await failure(p.complete({ purpose: 'turn', model: 'gpt-x', system: 'S', messages: [{ role: 'user', content: 'hi' }] }));
    expect(e).toMatchObject({ code: 'context_too_long', limit: 8192, promptTokens: 9000 });
  });
});

describe('the summary block keeps its own cache entry', () => {
  it('when the context budget leaves the oldest turns out, prefix + summary are still read from cache', async () => {
    const { ManualClock } = await import('../fakes/anthropic/index.js');
    const clock = new ManualClock();
    anthropic = await startFakeAnthropic({ now: clock.now, apiKey: TEST_KEY });
    const p = new AnthropicProvider({ config: llmConfig({ base_url: anthropic.url, max_retries: 0 }), logger: silentLogger });
    const { longPrefix } = await import('./support.js');
    const summary = `## Earlier in this conversation (summary)\n${longPrefix(1200, 'summary')}`;
    const turns = Array.from({ length: 7 }, (_, i) => ({ role: i % 2 ? ('assistant' as const) : ('user' as const), content: `turn ${i} ` + 'x'.repeat(400) }));
    await p.complete(request({ summary, messages: turns.slice(0, 5) }));
    // Next turn: the oldest pair no longer fits and is left out, two new turns are added.
    const second = await p.complete(request({ summary, messages: turns.slice(2, 7) }));
    // The prefix (1500) and the summary (1200) come from cache; only the turns are new.
    expect(second.usage.cacheReadTokens).toBeGreaterThanOrEqual(2700);

    // Without the summary's breakpoint (the old layout) only the prefix would be read.
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const { buildAnthropicParams } = await import('../../src/llm/AnthropicProvider.js');
    const client = new Anthropic({ apiKey: TEST_KEY, baseURL: anthropic.url, maxRetries: 0 });
    const old = (messages: typeof turns) => {
      const params = buildAnthropicParams(request({ summary: summary.replace('summary', 'recap'), messages }), 100);
      delete (params.system as Array<{ cache_control?: unknown }>)[1]!.cache_control;
      return client.messages.create(params);
    };
    await old(turns.slice(0, 5));
    const without = await old(turns.slice(2, 7));
    expect(without.usage.cache_read_input_tokens ?? 0).toBeLessThan(1600);
  });
});
