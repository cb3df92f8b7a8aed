/**
 * Model calls through the real SDKs: the LlmGate's streaming time limits on the real providers
 * against the fake servers (real clock, generous bounds — the exact semantics are proven with the
 * fake clock in tests/unit/llm-gate.test.ts), thinking that never becomes reply text, replies cut
 * at max_tokens, and failures classified into the reasons people see.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { LlmError } from '../../src/core/errors.js';
import { noMetrics } from '../../src/core/metrics.js';
import type { LlmProvider, LlmRequest } from '../../src/core/ports.js';
import { LlmGate, type GateSettings } from '../../src/core/router/LlmGate.js';
import { describeFailure } from '../../src/core/router/failures.js';
import { AnthropicProvider } from '../../src/llm/AnthropicProvider.js';
import { OpenAiProvider } from '../../src/llm/OpenAiProvider.js';
import { ThinkFilter, stripThinking } from '../../src/llm/thinking.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { TEST_KEY, TEST_MODEL, conversation, llmConfig } from './support.js';

let servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function openai(logger = silentLogger): Promise<{ fake: FakeOpenAiServer; p: OpenAiProvider }> {
  const fake = await startFakeOpenAi();
  servers.push(fake);
  return { fake, p: new OpenAiProvider({ config: llmConfig({ provider: 'openai', api_key: null, base_url: fake.url, model: 'qwen3:8b', max_retries: 0 }), logger }) };
}

async function anthropic(logger = silentLogger): Promise<{ fake: FakeAnthropicServer; p: AnthropicProvider }> {
  const fake = await startFakeAnthropic({ apiKey: TEST_KEY });
  servers.push(fake);
  return { fake, p: new AnthropicProvider({ config: llmConfig({ base_url: fake.url, max_retries: 0 }), logger }) };
}

function gateOver(p: LlmProvider, s: Partial<GateSettings> = {}): LlmGate {
  return new LlmGate(p, { maxConcurrency: 4, ...s }, systemClock, noMetrics, new AbortController().signal, silentLogger);
}

const turn = (model: string, over: Partial<LlmRequest> = {}): Omit<LlmRequest, 'signal'> => ({
  purpose: 'turn',
  model,
  system: 'You are Analyst, in the group "Market team".',
  messages: conversation(0),
  groupId: 'g',
  ...over,
});

async function failure(p: Promise<unknown>): Promise<LlmError> {
  const err = await p.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LlmError);
  return err as LlmError;
}

describe('streaming time limits on the real providers', () => {
  it('openai: a reply streaming slowly for longer than the first-token limit is not killed', async () => {
    const { fake, p } = await openai();
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `);
    fake.queue({ chunks: words, chunkDelayMs: 100 });
    const g = gateOver(p, { idleTimeoutMs: 2_000, replyTimeoutMs: 60_000 });
    const deltas: string[] = [];
    const t0 = Date.now();
    const res = await g.call(turn('qwen3:8b', { onDelta: (d) => deltas.push(d) }), 3_000);
    // It took longer than the first-token limit (so that limit was really passed), and is whole.
    expect(Date.now() - t0).toBeGreaterThan(3_000);
    expect(res.text).toBe(words.join(''));
    expect(res.cut).toBeUndefined();
    expect(deltas.join('')).toBe(res.text);
  });

  it('openai: a stream that stalls after it began ends at the idle limit, and the request is closed', async () => {
    const { fake, p } = await openai();
    fake.queue({ chunks: ['Well, ', 'let ', 'me ', 'see'], stallAfter: 2 });
    const g = gateOver(p, { idleTimeoutMs: 500, replyTimeoutMs: 60_000 });
    const err = await failure(g.call(turn('qwen3:8b', { onDelta: () => undefined }), 10_000));
    expect(err.code).toBe('timeout');
    expect(err.message).toMatch(/stalled.*llm\.idle_timeout_seconds/);
    await expect.poll(() => fake.requests[0]!.closedEarly, { timeout: 5_000 }).toBe(true);
  });

  it('anthropic: a stream that stalls after it began ends at the idle limit too', async () => {
    const { fake, p } = await anthropic();
    fake.queue({ text: 'a b c', hang: 'body' });
    const g = gateOver(p, { idleTimeoutMs: 500, replyTimeoutMs: 60_000 });
    const err = await failure(g.call(turn(TEST_MODEL, { onDelta: () => undefined }), 10_000));
    expect(err.code).toBe('timeout');
    await expect.poll(() => fake.messages()[0]!.closedEarly, { timeout: 5_000 }).toBe(true);
  });

  it('openai: at the overall cap a reply still streaming is kept as far as it got, ending in "…"', async () => {
    const { fake, p } = await openai();
    fake.queue({ chunks: Array.from({ length: 200 }, (_, i) => `w${i} `), chunkDelayMs: 50 });
    const g = gateOver(p, { idleTimeoutMs: 2_000, replyTimeoutMs: 1_500 });
    const deltas: string[] = [];
    const res = await g.call(turn('qwen3:8b', { onDelta: (d) => deltas.push(d) }), 10_000);
    expect(res.cut).toBe('timeout');
    expect(res.text.startsWith('w0 w1 ')).toBe(true);
    expect(res.text.endsWith('…')).toBe(true);
    expect(res.text.length).toBeLessThan(200 * 4);
    expect(deltas.join('')).toBe(res.text);
    await expect.poll(() => fake.requests[0]!.closedEarly, { timeout: 5_000 }).toBe(true);
  });

  it('thinking keeps a call alive: anthropic thinking blocks and openai reasoning_content longer than the first-token limit', async () => {
    const long = Array.from({ length: 30 }, (_, i) => `step${i}`).join(' ');
    const a = await anthropic();
    a.fake.queue({ thinking: long, text: 'Yes: buy.', chunkDelayMs: 100 });
    const ra = await gateOver(a.p, { idleTimeoutMs: 1_500 }).call(turn(TEST_MODEL, { onDelta: () => undefined }), 1_500);
    expect(ra.text).toBe('Yes: buy.');
    const o = await openai();
    o.fake.queue({ reasoning: long, text: 'Yes: sell.', chunkDelayMs: 100 });
    const ro = await gateOver(o.p, { idleTimeoutMs: 1_500 }).call(turn('qwen3:8b', { onDelta: () => undefined }), 1_500);
    expect(ro.text).toBe('Yes: sell.');
  });
});

describe('thinking is never reply text', () => {
  it('anthropic: thinking and redacted_thinking blocks are neither streamed nor returned, streamed or not', async () => {
    const { fake, p } = await anthropic();
    fake.queue({ thinking: 'The user wants a number. 8% it is.', redactedThinking: true, text: 'Revenue grew 8%.' });
    const deltas: string[] = [];
    let activity = 0;
    const streamed = await p.complete({ ...turn(TEST_MODEL), onDelta: (d) => deltas.push(d), onActivity: () => activity++ });
    expect(streamed.text).toBe('Revenue grew 8%.');
    expect(deltas.join('')).toBe('Revenue grew 8%.');
    // Every block of output counted as the model working, the thinking ones included.
    expect(activity).toBeGreaterThan(deltas.length + 5);
    fake.queue({ thinking: 'Private reasoning.', redactedThinking: true, text: 'Plain answer.' });
    const whole = await p.complete(turn(TEST_MODEL));
    expect(whole.text).toBe('Plain answer.');
  });

  it('anthropic: a reply that only thought (max_tokens spent thinking) is "empty", and says why', async () => {
    const { fake, p } = await anthropic();
    fake.queue({ thinking: 'Hmm. Let me consider every angle…', text: '', stopReason: 'max_tokens' });
    const err = await failure(p.complete({ ...turn(TEST_MODEL), onDelta: () => undefined }));
    expect(err.code).toBe('empty');
    expect(err.message).toMatch(/max_tokens thinking/);
  });

  it('openai: reasoning_content deltas are not text', async () => {
    const { fake, p } = await openai();
    fake.queue({ reasoning: 'First, recall the figures.', text: 'Margins fell.' });
    const deltas: string[] = [];
    const r = await p.complete({ ...turn('qwen3:8b'), onDelta: (d) => deltas.push(d) });
    expect([r.text, deltas.join('')]).toEqual(['Margins fell.', 'Margins fell.']);
    fake.queue({ reasoning: 'Recall.', text: 'Margins rose.' });
    expect((await p.complete(turn('qwen3:8b'))).text).toBe('Margins rose.');
  });

  it('openai: an inline <think> block is stripped from the stream and the text, also when its tags are split across chunks', async () => {
    const { fake, p } = await openai();
    fake.queue({ chunks: ['<thi', 'nk>\nThe user', ' asks about AAPL.</th', 'ink>\n\n', 'AAPL ', 'is up.'] });
    const deltas: string[] = [];
    const r = await p.complete({ ...turn('qwen3:8b'), onDelta: (d) => deltas.push(d) });
    expect(r.text).toBe('AAPL is up.');
    expect(deltas.join('')).toBe('AAPL is up.');
    expect(deltas.join('')).not.toMatch(/think|user asks/);
    // Not streamed (Ollama, `stream: false`): the same.
    fake.queue({ text: '<think>plan</think>\n\nDone.' });
    expect((await p.complete(turn('qwen3:8b'))).text).toBe('Done.');
    // Cut off while still thinking: nothing to show, and the error says why.
    fake.queue({ chunks: ['<think>Let me ', 'think about it at length'], finishReason: 'length' });
    const err = await failure(p.complete({ ...turn('qwen3:8b'), onDelta: () => undefined }));
    expect([err.code, err.message]).toEqual(['empty', 'OpenAI-compatible: the model returned no text: it spent max_tokens thinking']);
  });

  it('ThinkFilter: any split of the stream gives the same visible text as the whole; only a leading block counts', () => {
    const cases: Array<[string, string]> = [
      ['<think>a</think>\n\nHello <b>world</b>', 'Hello <b>world</b>'],
      ['  <think>a</think> <think>b</think>Two blocks', 'Two blocks'],
      ['No thinking, <think> mentioned later</think> stays.', 'No thinking, <think> mentioned later</think> stays.'],
      ['\n\nLeading space kept', '\n\nLeading space kept'],
      ['<thinking>is not the tag', '<thinking>is not the tag'],
      ['<thi', '<thi'],
      ['<think>never closed', ''],
      ['<3 emoticon', '<3 emoticon'],
    ];
    for (const [input, want] of cases) {
      expect(stripThinking(input).text).toBe(want);
      for (let cut1 = 0; cut1 <= input.length; cut1++) {
        for (let cut2 = cut1; cut2 <= input.length; cut2 += 3) {
          const f = new ThinkFilter();
          const out = f.push(input.slice(0, cut1)) + f.push(input.slice(cut1, cut2)) + f.push(input.slice(cut2)) + f.end();
          expect(out, JSON.stringify([input, cut1, cut2])).toBe(want);
        }
      }
    }
  });
});

describe('replies cut at max_tokens', () => {
  it('both providers map the stop to cut: "max_tokens"; through the gate the text and the stream end in "…"', async () => {
    const o = await openai();
    o.fake.queue({ text: 'The figures show a rise in', finishReason: 'length' });
    const od: string[] = [];
    const ro = await gateOver(o.p).call(turn('qwen3:8b', { onDelta: (d) => od.push(d) }), 10_000);
    expect([ro.cut, ro.text, od.join('')]).toEqual(['max_tokens', 'The figures show a rise in…', 'The figures show a rise in…']);
    o.fake.queue({ text: 'Not streamed and cut', finishReason: 'length' });
    expect((await o.p.complete(turn('qwen3:8b'))).cut).toBe('max_tokens');

    const a = await anthropic();
    a.fake.queue({ text: 'Revenue grew by', stopReason: 'max_tokens' });
    const ad: string[] = [];
    const ra = await gateOver(a.p).call(turn(TEST_MODEL, { onDelta: (d) => ad.push(d) }), 10_000);
    expect([ra.cut, ra.text, ad.join('')]).toEqual(['max_tokens', 'Revenue grew by…', 'Revenue grew by…']);
    a.fake.queue({ text: 'Whole but cut', stopReason: 'max_tokens' });
    expect((await a.p.complete(turn(TEST_MODEL))).cut).toBe('max_tokens');
  });
});

describe('failures say what happened', () => {
  it('classifies the answers of both SDKs and of Ollama into reasons with the right hint', async () => {
    const o = await openai();
    o.fake.queue(
      { status: 404, body: { error: 'model "qwen3:8b" not found, try pulling it first' } },
      { status: 404, message: 'The model `gpt-9` does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
      { status: 401, message: 'Incorrect API key provided', code: 'invalid_api_key' },
      { status: 429, message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
      { status: 500, message: 'CUDA error: out of memory', type: 'server_error' },
      { status: 404, body: '404 page not found' },
    );
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push((await failure(o.p.complete(turn('qwen3:8b')))).code);
    expect(codes).toEqual(['model_not_found', 'model_not_found', 'auth', 'rate_limited', 'server', 'not_found']);

    const a = await anthropic();
    a.fake.queue(
      { status: 404, type: 'not_found_error', message: 'model: claude-sonnet-9' },
      { status: 401, type: 'authentication_error', message: 'invalid x-api-key' },
      { status: 429, type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' },
      { status: 529, type: 'overloaded_error', message: 'Overloaded' },
    );
    const acodes: string[] = [];
    for (let i = 0; i < 4; i++) acodes.push((await failure(a.p.complete(turn(TEST_MODEL)))).code);
    expect(acodes).toEqual(['model_not_found', 'auth', 'rate_limited', 'overloaded']);

    expect(describeFailure('model_not_found')).toEqual({ reason: 'model not found', hint: 'check the model name and llm.base_url' });
    expect(describeFailure('auth').hint).toMatch(/check the API key/);
    expect(describeFailure('context_too_long').hint).toMatch(/history_turns|context_tokens/);
    expect(describeFailure('context_too_long').hint).not.toMatch(/model name/);
    expect(describeFailure('something new')).toEqual({ reason: 'error', hint: null });
  });

  it("a context-size answer (llama.cpp exceed_context_size_error) is logged with the context hint, never 'check the model name'", async () => {
    const logger = new CapturingLogger();
    const fake = await startFakeOpenAi({ nCtx: 16 });
    servers.push(fake);
    const p = new OpenAiProvider({ config: llmConfig({ provider: 'openai', api_key: null, base_url: fake.url, model: 'qwen3:8b', max_retries: 0 }), logger });
    const err = await failure(p.complete(turn('qwen3:8b')));
    expect(err.code).toBe('context_too_long');
    const first = logger.lines.find((l) => l.level === 'error')!;
    expect(first.msg).toMatch(/history_turns|context_tokens/);
    expect(first.msg).not.toMatch(/model name/);
  });

  it("the provider's first-failure log line carries the hint of the failure's own kind", async () => {
    const logger = new CapturingLogger();
    const { fake, p } = await openai(logger);
    fake.queue({ status: 404, body: { error: 'model "qwen3:8b" not found, try pulling it first' } });
    await failure(p.complete(turn('qwen3:8b')));
    const first = logger.lines.find((l) => l.level === 'error')!;
    expect(first.msg).toContain('model_not_found');
    expect(first.msg).toContain('(check the model name and llm.base_url)');
  });
});
