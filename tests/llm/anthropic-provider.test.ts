import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import { AnthropicProvider, buildAnthropicParams } from '../../src/llm/AnthropicProvider.js';
import { ManualClock, REQUEST_OVERHEAD_TOKENS, TTL_5M_MS, startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { TEST_KEY, TEST_MODEL, conversation, llmConfig, longPrefix, request } from './support.js';

let fake: FakeAnthropicServer;
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock();
  fake = await startFakeAnthropic({ now: clock.now, apiKey: TEST_KEY });
});
afterEach(async () => {
  await fake.close();
});

function provider(over: Parameters<typeof llmConfig>[0] = {}, logger = silentLogger) {
  return new AnthropicProvider({ config: llmConfig({ base_url: fake.url, ...over }), logger });
}

async function rejection(p: Promise<unknown>): Promise<LlmError> {
  const err = await p.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LlmError);
  return err as LlmError;
}

/** Every `cache_control` marker in a logged body, as paths. */
function breakpointPaths(body: Record<string, unknown>): string[] {
  const out: string[] = [];
  const sys = body['system'] as Array<Record<string, unknown>>;
  sys.forEach((b, i) => b['cache_control'] && out.push(`system[${i}]`));
  (body['messages'] as Array<{ content: Array<Record<string, unknown>> }>).forEach((m, i) =>
    m.content.forEach((b, j) => b['cache_control'] && out.push(`messages[${i}].content[${j}]`)),
  );
  if (body['cache_control']) out.push('top-level');
  return out;
}

describe('AnthropicProvider: requests and prompt caching', () => {
  it('puts breakpoints on the stable prefix, the summary block and the last block of the last user message only', async () => {
    const p = provider();
    const messages = conversation(2);
    await p.complete(request({ messages, summary: 'Earlier: Maya asked about AAPL.' }));
    const [logged] = fake.messages();
    const body = logged!.body;
    // The summary has its own breakpoint: prefix + summary stay cached while old turns are left out.
    expect(breakpointPaths(body)).toEqual(['system[0]', 'system[1]', `messages[${messages.length - 1}].content[0]`]);
    const system = body['system'] as Array<{ text: string; cache_control?: unknown }>;
    expect(system).toHaveLength(2);
    expect(system[0]!.text).toBe(longPrefix(1500));
    expect(system[0]!.cache_control).toEqual({ type: 'ephemeral' });
    expect(system[1]).toEqual({ type: 'text', text: 'Earlier: Maya asked about AAPL.', cache_control: { type: 'ephemeral' } });
    // The history is sent verbatim, in order.
    const sent = (body['messages'] as Array<{ role: string; content: Array<{ text: string }> }>).map((m) => ({ role: m.role, content: m.content[0]!.text }));
    expect(sent).toEqual(messages);
    expect(body['model']).toBe(TEST_MODEL);
    expect(body['max_tokens']).toBe(512);
    expect(logged!.headers['x-api-key'] ?? logged!.headers['authorization']).toContain(TEST_KEY);
  });

  it('has no summary block when there is no summary, and uses the request max_tokens', async () => {
    const params = buildAnthropicParams(request({ messages: conversation(0), summary: null, maxTokens: 64 }), 1024);
    expect(params.system).toHaveLength(1);
    expect(params.max_tokens).toBe(64);
  });

  it('is a pure function of the request: the same turn builds byte-identical parameters', () => {
    const req = request({ messages: conversation(3), summary: 'S' });
    expect(JSON.stringify(buildAnthropicParams(req, 100))).toBe(JSON.stringify(buildAnthropicParams(req, 100)));
  });

  it('the second turn of a session reads the first turn from cache, and the figures add up', async () => {
    const p = provider();
    const turn1 = conversation(0);
    const r1 = await p.complete(request({ messages: turn1 }));
    expect(r1.usage.cacheReadTokens).toBe(0);
    expect(r1.usage.cacheWriteTokens).toBeGreaterThan(1500);
    const total1 = fake.messages()[0]!.cache!.totalTokens;
    expect(r1.usage.inputTokens + r1.usage.cacheWriteTokens + r1.usage.cacheReadTokens).toBe(total1);

    const turn2 = [...turn1, { role: 'assistant' as const, content: r1.text }, ...conversation(1).slice(2)];
    const r2 = await p.complete(request({ messages: turn2 }));
    // Everything turn 1 wrote is read back; only the new assistant + user turn is written.
    expect(r2.usage.cacheReadTokens).toBe(r1.usage.cacheWriteTokens);
    expect(r2.usage.cacheWriteTokens).toBeGreaterThan(0);
    expect(r2.usage.cacheWriteTokens).toBeLessThan(100);
    expect(r2.usage.inputTokens).toBe(REQUEST_OVERHEAD_TOKENS);
    const total2 = fake.messages()[1]!.cache!.totalTokens;
    expect(r2.usage.inputTokens + r2.usage.cacheWriteTokens + r2.usage.cacheReadTokens).toBe(total2);

    // And the third turn reads the second's entry.
    const turn3 = [...turn2, { role: 'assistant' as const, content: r2.text }, { role: 'user' as const, content: 'and now?' }];
    const r3 = await p.complete(request({ messages: turn3 }));
    expect(r3.usage.cacheReadTokens).toBe(r2.usage.cacheReadTokens + r2.usage.cacheWriteTokens);
  });

  it('a new session with the same persona reads the stable prefix through the system breakpoint', async () => {
    const p = provider();
    await p.complete(request({ messages: conversation(0, 'first') }));
    const r = await p.complete(request({ messages: conversation(0, 'other session'), summary: 'a summary that changed' }));
    expect(r.usage.cacheReadTokens).toBe(1500);
  });

  it('a different persona does not read another agent’s cache', async () => {
    const p = provider();
    await p.complete(request({ messages: conversation(0) }));
    const r = await p.complete(request({ system: longPrefix(1500, 'writer'), messages: conversation(0) }));
    expect(r.usage.cacheReadTokens).toBe(0);
  });

  it('a prompt shorter than the minimum cacheable length is not cached', async () => {
    const p = provider();
    const short = request({ system: 'You are Analyst.', messages: [{ role: 'user', content: 'hi' }] });
    const r1 = await p.complete(short);
    const r2 = await p.complete({ ...short, messages: [...short.messages, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'again' }] });
    for (const r of [r1, r2]) {
      expect(r.usage.cacheReadTokens).toBe(0);
      expect(r.usage.cacheWriteTokens).toBe(0);
      expect(r.usage.inputTokens).toBeGreaterThan(0);
    }
    expect(fake.cache.snapshot()).toHaveLength(0);
  });

  it('the minimum depends on the model: a 1500-token prompt caches on Sonnet, not on Haiku', async () => {
    const p = provider();
    const sonnet = await p.complete(request({ model: 'claude-sonnet-4-6', messages: conversation(0) }));
    const haiku = await p.complete(request({ model: 'claude-haiku-4-5', messages: conversation(0) }));
    expect(sonnet.usage.cacheWriteTokens).toBeGreaterThan(0);
    expect(haiku.usage.cacheWriteTokens).toBe(0);
  });

  it('entries expire after five minutes unless read; a read refreshes them', async () => {
    const p = provider();
    const turn1 = conversation(0);
    const r1 = await p.complete(request({ messages: turn1 }));
    clock.advance(4 * 60_000);
    const turn2 = conversation(1);
    const r2 = await p.complete(request({ messages: turn2 }));
    expect(r2.usage.cacheReadTokens).toBe(r1.usage.cacheWriteTokens);
    // Four more minutes: eight since the write, four since the refreshing read.
    clock.advance(4 * 60_000);
    const r3 = await p.complete(request({ messages: conversation(0, 'new topic') }));
    expect(r3.usage.cacheReadTokens).toBe(1500);
    // Past the TTL with no reads: nothing is left.
    clock.advance(TTL_5M_MS + 1);
    const r4 = await p.complete(request({ messages: conversation(2) }));
    expect(r4.usage.cacheReadTokens).toBe(0);
    expect(r4.usage.cacheWriteTokens).toBe(fake.messages()[3]!.cache!.totalTokens - REQUEST_OVERHEAD_TOKENS);
  });

  it('returns the text, the model, usage and a cost priced with cache write ×1.25 and read ×0.1', async () => {
    const p = provider();
    // The server answers with a dated id of the family; it is priced as claude-sonnet-4-6 ($3 / $15; not claude-sonnet-4-5, which the SDK warns about on every call).
    fake.reply = () => ({ text: 'Revenue grew 8% year over year.', model: 'claude-sonnet-4-6-20260217' });
    const r1 = await p.complete(request({ model: 'claude-sonnet-4-6', messages: conversation(0) }));
    expect(r1.text).toBe('Revenue grew 8% year over year.');
    expect(r1.model).toBe('claude-sonnet-4-6-20260217');
    const u1 = r1.usage;
    expect(r1.costUsd).toBeCloseTo((u1.inputTokens * 3 + u1.outputTokens * 15 + u1.cacheWriteTokens * 3.75) / 1e6, 12);
    const r2 = await p.complete(request({ model: 'claude-sonnet-4-6', messages: conversation(1) }));
    const u2 = r2.usage;
    expect(u2.cacheReadTokens).toBeGreaterThan(0);
    expect(r2.costUsd).toBeCloseTo((u2.inputTokens * 3 + u2.outputTokens * 15 + u2.cacheWriteTokens * 3.75 + u2.cacheReadTokens * 0.3) / 1e6, 12);
  });

  it('uses configured prices and gives null cost for unknown models', async () => {
    const p = provider({ prices: { [TEST_MODEL]: { input: 10, output: 20, cache_write: 11, cache_read: 1 } } });
    const r = await p.complete(request({ messages: conversation(0) }));
    const u = r.usage;
    expect(r.costUsd).toBeCloseTo((u.inputTokens * 10 + u.outputTokens * 20 + u.cacheWriteTokens * 11) / 1e6, 12);
    const unknown = await p.complete(request({ model: 'claude-mystery-9', messages: conversation(0) }));
    expect(unknown.costUsd).toBeNull();
  });
});

describe('AnthropicProvider: streaming', () => {
  it('forwards text deltas whose concatenation is the final text, with usage from the stream', async () => {
    const p = provider();
    const text = 'Revenue grew 8% year over year, driven by services. Margins held.';
    fake.queue({ text });
    const deltas: string[] = [];
    const r = await p.complete(request({ messages: conversation(0), onDelta: (d) => deltas.push(d) }));
    expect(fake.messages()[0]!.stream).toBe(true);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(text);
    expect(r.text).toBe(text);
    expect(r.usage.outputTokens).toBe(Math.ceil(text.length / 4));
    expect(r.usage.cacheWriteTokens).toBe(fake.messages()[0]!.cache!.usage.cache_creation_input_tokens);
    expect(r.usage.cacheWriteTokens).toBeGreaterThan(0);
  });

  it('a streamed second turn reports the cache read too', async () => {
    const p = provider();
    await p.complete(request({ messages: conversation(0), onDelta: () => {} }));
    const r = await p.complete(request({ messages: conversation(1), onDelta: () => {} }));
    expect(r.usage.cacheReadTokens).toBe(fake.messages()[1]!.cache!.usage.cache_read_input_tokens);
    expect(r.usage.cacheReadTokens).toBeGreaterThan(1500);
  });

  it('a mid-stream error event becomes an LlmError (after the deltas already received)', async () => {
    const p = provider({ max_retries: 0 });
    fake.queue({ text: 'one two three four', streamErrorAfter: 2, streamErrorType: 'overloaded_error' });
    const deltas: string[] = [];
    const err = await rejection(p.complete(request({ messages: conversation(0), onDelta: (d) => deltas.push(d) })));
    expect(err.code).toBe('overloaded');
    expect(err.retryable).toBe(true);
    expect(deltas).toEqual(['one ', 'two ']);
  });

  it('a mid-stream api_error is a retryable server error', async () => {
    const p = provider({ max_retries: 0 });
    fake.queue({ text: 'one two', streamErrorAfter: 0, streamErrorType: 'api_error' });
    const err = await rejection(p.complete(request({ messages: conversation(0), onDelta: () => {} })));
    expect(err.code).toBe('server');
  });
});

describe('AnthropicProvider: retries and errors', () => {
  it('a 429 is retried by the SDK (honouring retry-after) and the call succeeds', async () => {
    const p = provider({ max_retries: 2 });
    fake.queue({ status: 429, type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit', headers: { 'retry-after': '0.001' } }, 'after the wait');
    const r = await p.complete(request({ messages: conversation(0) }));
    expect(r.text).toBe('after the wait');
    expect(fake.messages().map((m) => m.status)).toEqual([429, 200]);
  });

  it('a streamed request is retried too when the error comes before the stream starts', async () => {
    const p = provider({ max_retries: 2 });
    fake.queue({ status: 529, type: 'overloaded_error', message: 'Overloaded', headers: { 'retry-after': '0.001' } }, 'streamed after retry');
    const deltas: string[] = [];
    const r = await p.complete(request({ messages: conversation(0), onDelta: (d) => deltas.push(d) }));
    expect(r.text).toBe('streamed after retry');
    expect(deltas.join('')).toBe(r.text);
    expect(fake.messages().map((m) => m.status)).toEqual([529, 200]);
  });

  it('a persistent 529 becomes a retryable "overloaded" LlmError after max_retries + 1 attempts', async () => {
    const p = provider({ max_retries: 2 });
    fake.reply = () => ({ status: 529, type: 'overloaded_error', message: 'Overloaded', headers: { 'retry-after': '0.001' } });
    const err = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(err.code).toBe('overloaded');
    expect(err.retryable).toBe(true);
    expect(fake.messages()).toHaveLength(3);
  });

  it('a persistent 500 is a retryable server error; a 400 is not retried', async () => {
    const p = provider({ max_retries: 1 });
    fake.reply = () => ({ status: 500, type: 'api_error', message: 'Internal server error', headers: { 'retry-after': '0.001' } });
    const e500 = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(e500.code).toBe('server');
    expect(e500.retryable).toBe(true);
    expect(fake.messages()).toHaveLength(2);

    fake.reply = () => ({ status: 400, type: 'invalid_request_error', message: 'max_tokens: must be at most 128000' });
    const e400 = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(e400.code).toBe('bad_request');
    expect(e400.retryable).toBe(false);
    expect(fake.messages()).toHaveLength(3);
  });

  it('a model the API does not serve (404 not_found_error "model: …") is "model_not_found", not retried', async () => {
    const p = provider({ max_retries: 1 });
    fake.reply = () => ({ status: 404, type: 'not_found_error', message: 'model: claude-sonnet-9' });
    const e = await rejection(p.complete(request({ messages: conversation(0), model: 'claude-sonnet-9' })));
    expect([e.code, e.retryable]).toEqual(['model_not_found', false]);
    expect(fake.messages()).toHaveLength(1);
    // A 404 that names no model is a wrong URL, not a wrong model.
    fake.reply = () => ({ status: 404, type: 'not_found_error', message: 'no route POST /v1/v1/messages' });
    expect((await rejection(p.complete(request({ messages: conversation(0) })))).code).toBe('not_found');
  });

  it('a wrong key is an "auth" error, not retried', async () => {
    const p = provider({ api_key: 'sk-ant-test-wrong-key-000000' });
    const err = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(err.code).toBe('auth');
    expect(err.retryable).toBe(false);
    expect(fake.messages()).toHaveLength(1);
  });

  it('an empty reply is an "empty" LlmError', async () => {
    const p = provider();
    fake.queue({ text: '' });
    const err = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(err.code).toBe('empty');
    fake.queue({ text: '' });
    const streamed = await rejection(p.complete(request({ messages: conversation(0), onDelta: () => {} })));
    expect(streamed.code).toBe('empty');
  });

  it('no messages is a bad_request before anything is sent', async () => {
    const err = await rejection(provider().complete(request({ messages: [] })));
    expect(err.code).toBe('bad_request');
    expect(fake.messages()).toHaveLength(0);
  });

  it('the caller’s abort signal ends a slow call with "aborted"', async () => {
    const p = provider({ max_retries: 0 });
    fake.queue({ text: 'late', delayMs: 5_000 });
    const ac = new AbortController();
    const pending = p.complete(request({ messages: conversation(0), signal: ac.signal }));
    setTimeout(() => ac.abort(), 20);
    const err = await rejection(pending);
    expect(err.code).toBe('aborted');
    expect(err.retryable).toBe(false);
  });

  it('an abort in the middle of a stream is "aborted" too', async () => {
    const p = provider({ max_retries: 0 });
    fake.queue({ text: 'a b c d e f g h', chunkDelayMs: 30 });
    const ac = new AbortController();
    const deltas: string[] = [];
    const err = await rejection(
      p.complete(
        request({
          messages: conversation(0),
          signal: ac.signal,
          onDelta: (d) => {
            deltas.push(d);
            ac.abort();
          },
        }),
      ),
    );
    expect(err.code).toBe('aborted');
    expect(deltas).toEqual(['a ']);
  });

  it('a deadline signal (AbortSignal.timeout) is reported as "timeout"', async () => {
    const p = provider({ max_retries: 0 });
    fake.queue({ text: 'late', delayMs: 5_000 });
    const err = await rejection(p.complete(request({ messages: conversation(0), signal: AbortSignal.timeout(20) })));
    expect(err.code).toBe('timeout');
    expect(err.retryable).toBe(true);
  });

  it("llm.reply_timeout_seconds (the SDK's per-attempt backstop) bounds a silent server: 'timeout'", async () => {
    const p = provider({ max_retries: 0, reply_timeout_seconds: 0.05 });
    fake.queue({ text: 'late', delayMs: 5_000 });
    const err = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(err.code).toBe('timeout');
  });

  // A stream that stalls after its headers is the LlmGate's to end (llm.idle_timeout_seconds): see
  // tests/llm/model-calls.test.ts › *a stream that stalls after it began…*.

  it('a streamed attempt that times out before its headers is retried by the SDK', async () => {
    const p = provider({ max_retries: 1, reply_timeout_seconds: 0.1 });
    fake.queue({ text: 'too late', delayMs: 5_000 }, 'second attempt');
    const deltas: string[] = [];
    const r = await p.complete(request({ messages: conversation(0), onDelta: (d) => deltas.push(d) }));
    expect(r.text).toBe('second attempt');
    expect(deltas.join('')).toBe('second attempt');
    expect(fake.messages().map((m) => m.status)).toEqual([499, 200]);
  });

  it('an unreachable endpoint is a "network" error', async () => {
    const url = fake.url;
    await fake.close();
    const p = new AnthropicProvider({ config: llmConfig({ base_url: url, max_retries: 0 }), logger: silentLogger });
    const err = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(err.code).toBe('network');
    expect(err.retryable).toBe(true);
  });
});

describe('AnthropicProvider: logging', () => {
  it('the first failure says what was tried and why, once; the key never appears', async () => {
    const logger = new CapturingLogger();
    const p = provider({ max_retries: 0 }, logger);
    fake.reply = () => ({ status: 529, type: 'overloaded_error', message: 'Overloaded' });
    await rejection(p.complete(request({ messages: conversation(0) })));
    await rejection(p.complete(request({ messages: conversation(0) })));
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toContain(fake.url);
    expect(errors[0]!.msg).toContain(TEST_MODEL);
    expect(errors[0]!.msg).toContain('overloaded');
    expect(errors[0]!.obj).toMatchObject({ baseUrl: fake.url, model: TEST_MODEL, code: 'overloaded', status: 529 });
    expect(logger.text()).not.toContain(TEST_KEY);
  });

  it('redacts the key even when the endpoint echoes it back in an error', async () => {
    await fake.close();
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-test-the-right-one', echoKeyInErrors: true });
    const logger = new CapturingLogger();
    const p = provider({ max_retries: 0 }, logger);
    const err = await rejection(p.complete(request({ messages: conversation(0) })));
    expect(err.code).toBe('auth');
    expect(err.message).toContain('***');
    expect(err.message).not.toContain(TEST_KEY);
    expect(logger.text()).toContain('invalid x-api-key');
    expect(logger.text()).not.toContain(TEST_KEY);
  });

  it('a caller abort is not logged as a provider failure', async () => {
    const logger = new CapturingLogger();
    const p = provider({ max_retries: 0 }, logger);
    fake.queue({ text: 'late', delayMs: 5_000 });
    const ac = new AbortController();
    const pending = p.complete(request({ messages: conversation(0), signal: ac.signal }));
    setTimeout(() => ac.abort(), 20);
    await rejection(pending);
    expect(logger.lines.filter((l) => l.level === 'error')).toHaveLength(0);
  });
});
