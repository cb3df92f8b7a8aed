/**
 * Tool calling on the Anthropic provider, through the real SDK against the fake Messages API:
 * what is sent (tools, tool_choice, a turn's tool steps), what comes back (calls parsed from
 * streamed JSON pieces), and how the prompt cache behaves with tools in the prefix.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { ToolStep } from '../../src/core/toolTypes.js';
import { AnthropicProvider, buildAnthropicParams } from '../../src/llm/AnthropicProvider.js';
import { INVALID_JSON_KEY } from '../../src/llm/toolInput.js';
import { ManualClock, REQUEST_OVERHEAD_TOKENS, callTool, startFakeAnthropic, type FakeAnthropicServer, type LoggedRequest } from '../fakes/anthropic/index.js';
import { silentLogger } from '../helpers/logger.js';
import { TEST_KEY, TEST_MODEL, TOOLS, conversation, llmConfig, request } from './support.js';

let fake: FakeAnthropicServer;
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock();
  fake = await startFakeAnthropic({ now: clock.now, apiKey: TEST_KEY });
});
afterEach(async () => {
  await fake.close();
});

function provider(over: Parameters<typeof llmConfig>[0] = {}) {
  return new AnthropicProvider({ config: llmConfig({ base_url: fake.url, max_retries: 0, ...over }), logger: silentLogger });
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

const streamed = (over: Partial<LlmRequest> = {}): LlmRequest => request({ messages: conversation(0), tools: TOOLS, onDelta: () => undefined, ...over });

type Block = Record<string, unknown>;
const messagesOf = (r: LoggedRequest) => r.body['messages'] as Array<{ role: string; content: Block[] }>;

describe('AnthropicProvider: tools in the request', () => {
  it('sends the tools in order as {name, description, input_schema}, before the system prompt, with tool_choice auto', async () => {
    await provider().complete(streamed());
    const body = fake.messages()[0]!.body;
    expect(body['tools']).toEqual(TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })));
    expect(body['tool_choice']).toEqual({ type: 'auto' });
    // The key order of the body is the API's cache order: tools, then system, then messages.
    const keys = Object.keys(body);
    expect(keys.indexOf('tools')).toBeLessThan(keys.indexOf('system'));
    // No breakpoint on the tools: the system prompt's caches both.
    expect((body['tools'] as Block[]).some((t) => 'cache_control' in t)).toBe(false);
    expect((body['system'] as Block[])[0]!['cache_control']).toEqual({ type: 'ephemeral' });
  });

  it("toolChoice 'none' still sends the tools, with tool_choice {type: 'none'}; no tools means neither is sent", async () => {
    const p = provider();
    await p.complete(streamed({ toolChoice: 'none' }));
    const body = fake.messages()[0]!.body;
    expect(body['tools']).toHaveLength(2);
    expect(body['tool_choice']).toEqual({ type: 'none' });
    for (const tools of [undefined, []]) {
      const params = buildAnthropicParams(request({ messages: conversation(0), tools, toolChoice: 'none' }), 100);
      expect('tools' in params).toBe(false);
      expect('tool_choice' in params).toBe(false);
    }
  });

  it("renders the turn's tool steps after the messages: assistant text + tool_use, then the tool_results; the fake accepts them", async () => {
    const steps: ToolStep[] = [
      {
        text: 'Let me check both.',
        calls: [
          { id: 'toolu_01', name: 'quotes_lookup', input: { symbol: 'AAPL' } },
          { id: 'toolu_02', name: 'news_search', input: { q: 'Apple earnings', days: 7 } },
        ],
        results: [
          { callId: 'toolu_01', content: 'AAPL 187.30 (+1.2%)', isError: false },
          { callId: 'toolu_02', content: 'search service unavailable', isError: true },
        ],
      },
      { text: '', calls: [{ id: 'toolu_03', name: 'news_search', input: { q: 'Apple' } }], results: [{ callId: 'toolu_03', content: '', isError: false }] },
    ];
    const messages = conversation(1);
    fake.queue('AAPL is at 187.30.');
    const r = await provider().complete(streamed({ messages, toolSteps: steps }));
    expect(r.text).toBe('AAPL is at 187.30.');
    expect(r.toolCalls).toBeUndefined();
    const sent = messagesOf(fake.messages()[0]!);
    expect(sent).toHaveLength(messages.length + 4);
    expect(sent.slice(messages.length)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check both.' },
          { type: 'tool_use', id: 'toolu_01', name: 'quotes_lookup', input: { symbol: 'AAPL' } },
          { type: 'tool_use', id: 'toolu_02', name: 'news_search', input: { q: 'Apple earnings', days: 7 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: 'AAPL 187.30 (+1.2%)', is_error: false },
          { type: 'tool_result', tool_use_id: 'toolu_02', content: 'search service unavailable', is_error: true },
        ],
      },
      // A step with no text has no text block (the API refuses empty ones); an empty result is said so.
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_03', name: 'news_search', input: { q: 'Apple' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_03', content: '(empty)', is_error: false, cache_control: { type: 'ephemeral' } }] },
    ]);
    // The conversation breakpoint moved to the last tool_result: the user turn before the steps has none.
    expect(sent[messages.length - 1]!.content[0]!['cache_control']).toBeUndefined();
  });

  it('the fake refuses what the API refuses: a result for a call that is not in the message before, a call without a result, a tool name with a dot', async () => {
    const p = provider();
    const wrongId: ToolStep = {
      text: '',
      calls: [{ id: 'toolu_a', name: 'quotes_lookup', input: {} }],
      results: [
        { callId: 'toolu_a', content: 'x', isError: false },
        { callId: 'toolu_b', content: 'y', isError: false },
      ],
    };
    const e1 = await rejection(p.complete(streamed({ toolSteps: [wrongId] })));
    expect(e1.code).toBe('bad_request');
    expect(e1.message).toMatch(/unexpected `tool_use_id` found in `tool_result` blocks: toolu_b/);
    const noResult: ToolStep = { text: '', calls: [{ id: 'toolu_a', name: 'quotes_lookup', input: {} }], results: [] };
    expect((await rejection(p.complete(streamed({ toolSteps: [noResult] })))).message).toMatch(/without `tool_result` blocks immediately after: toolu_a/);
    const dotted = [{ ...TOOLS[0]!, name: 'quotes.lookup' }];
    expect((await rejection(p.complete(streamed({ tools: dotted })))).message).toMatch(/tools\.0\.custom\.name/);
    expect(fake.messages().map((m) => m.status)).toEqual([400, 400, 400]);
  });
});

describe('AnthropicProvider: tool calls in the reply', () => {
  it('a streamed call: JSON split across input_json_delta events is parsed; the text before it is the text; the JSON is activity, not text', async () => {
    fake.queue(callTool('news_search', { q: 'Apple "Vision" {pro}', days: 7 }, { text: 'Let me search.' }));
    const deltas: string[] = [];
    let activity = 0;
    const r = await provider().complete(streamed({ onDelta: (d) => deltas.push(d), onActivity: () => activity++ }));
    expect(r.text).toBe('Let me search.');
    expect(deltas.join('')).toBe('Let me search.');
    expect(r.toolCalls).toEqual([{ id: 'toolu_fake_0_0', name: 'news_search', input: { q: 'Apple "Vision" {pro}', days: 7 } }]);
    // Text: start + 3 deltas; the call: start + an empty delta + 6 pieces of 7 characters.
    const json = JSON.stringify({ q: 'Apple "Vision" {pro}', days: 7 });
    expect(activity).toBe(1 + 3 + 1 + 1 + Math.ceil(json.length / 7));
    expect(r.cut).toBeUndefined();
    expect(r.usage.outputTokens).toBeGreaterThan(Math.ceil('Let me search.'.length / 4));
  });

  it('pieces split anywhere (inside a string, an escape, a number) make the same input', async () => {
    fake.queue({ toolCalls: [{ name: 'news_search', jsonChunks: ['{"q', '":"a\\', '\\', '\\"b"', ',"days"', ':1', '2}'] }] });
    const r = await provider().complete(streamed());
    expect(r.toolCalls![0]!.input).toEqual({ q: 'a\\"b', days: 12 });
    expect(r.text).toBe('');
  });

  it('two calls in one reply come back in order, streamed or not', async () => {
    const reply = { text: 'Both at once.', toolCalls: [{ name: 'quotes_lookup', input: { symbol: 'AAPL' } }, { name: 'quotes_lookup', input: { symbol: 'MSFT' } }] };
    fake.queue(reply, reply);
    const p = provider();
    const a = await p.complete(streamed());
    const b = await p.complete({ ...streamed(), onDelta: undefined });
    expect(fake.messages().map((m) => m.stream)).toEqual([true, false]);
    for (const [r, i] of [[a, 0], [b, 1]] as const) {
      expect(r.text).toBe('Both at once.');
      expect(r.toolCalls).toEqual([
        { id: `toolu_fake_${i}_0`, name: 'quotes_lookup', input: { symbol: 'AAPL' } },
        { id: `toolu_fake_${i}_1`, name: 'quotes_lookup', input: { symbol: 'MSFT' } },
      ]);
    }
  });

  it('a call without arguments has input {}; arguments that are not a JSON object are kept under _invalid_json, the reply is not failed', async () => {
    fake.queue({
      toolCalls: [
        { name: 'quotes_lookup', jsonChunks: [] },
        { name: 'news_search', rawJson: '{"q": "Apple", days: seven}' },
        { name: 'news_search', rawJson: '["Apple"]' },
      ],
    });
    const r = await provider().complete(streamed());
    expect(r.toolCalls!.map((c) => c.input)).toEqual([{}, { [INVALID_JSON_KEY]: '{"q": "Apple", days: seven}' }, { [INVALID_JSON_KEY]: '["Apple"]' }]);
    // Sent back in the next step as it came, the request is valid.
    const step: ToolStep = { text: '', calls: r.toolCalls!, results: r.toolCalls!.map((c) => ({ callId: c.id, content: 'invalid arguments', isError: true })) };
    await provider().complete(streamed({ toolSteps: [step] }));
    expect(fake.messages()[1]!.status).toBe(200);
  });

  it('maxReplyBytes counts the text only: a call with large arguments is whole and the reply is not cut', async () => {
    const big = { q: 'x'.repeat(5_000) };
    fake.queue(callTool('news_search', big, { text: 'Searching.' }));
    const r = await provider().complete(streamed({ maxReplyBytes: 64 }));
    expect(r.cut).toBeUndefined();
    expect(r.text).toBe('Searching.');
    expect(r.toolCalls![0]!.input).toEqual(big);
    // Text past the budget still cuts, and a reply cut there carries no calls.
    fake.queue(callTool('news_search', { q: 'a' }, { text: 'one two three four five six seven eight nine ten' }));
    const cut = await provider().complete(streamed({ maxReplyBytes: 12 }));
    expect([cut.cut, cut.text, cut.toolCalls]).toEqual(['bytes', 'one two thre', undefined]);
  });

  it('a call cut off at max_tokens is not handed on: the text comes back cut, or the reply is "empty" and says why', async () => {
    fake.queue({ text: 'Let me look', toolCalls: [{ name: 'news_search', rawJson: '{"q": "App' }], stopReason: 'max_tokens' });
    const r = await provider().complete(streamed());
    expect([r.text, r.cut, r.toolCalls]).toEqual(['Let me look', 'max_tokens', undefined]);
    fake.queue({ toolCalls: [{ name: 'news_search', rawJson: '{"q": "App' }], stopReason: 'max_tokens' });
    const err = await rejection(provider().complete(streamed()));
    expect(err.code).toBe('empty');
    expect(err.message).toMatch(/max_tokens, in the middle of a tool call/);
  });

  it('an abort while the arguments stream is "aborted", and the connection is closed', async () => {
    fake.queue({ toolCalls: [{ name: 'news_search', input: { q: 'a fairly long query about Apple and its suppliers' } }], chunkDelayMs: 30 });
    const ac = new AbortController();
    let activity = 0;
    const err = await rejection(
      provider().complete(
        streamed({
          signal: ac.signal,
          onActivity: () => {
            // The block start, then the first two argument pieces.
            if (++activity === 3) ac.abort();
          },
        }),
      ),
    );
    expect(err.code).toBe('aborted');
    await expect.poll(() => fake.messages()[0]!.closedEarly, { timeout: 5_000 }).toBe(true);
  });
});

describe('the fake streams tool calls as the API does', () => {
  it("the SDK's own MessageStream assembles the same message from the stream as the JSON answer", async () => {
    const reply = { text: 'Looking.', toolCalls: [{ name: 'quotes_lookup', input: { symbol: 'AAPL' } }, { name: 'news_search', input: { q: 'Apple', days: 3 } }] };
    fake.queue(reply, reply);
    const client = new Anthropic({ apiKey: TEST_KEY, baseURL: fake.url, maxRetries: 0 });
    const params = { model: TEST_MODEL, max_tokens: 100, tools: TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema as Anthropic.Tool.InputSchema })), messages: [{ role: 'user' as const, content: 'hi' }] };
    const viaStream = await client.messages.stream(params).finalMessage();
    const whole = await client.messages.create(params);
    const strip = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'tool_use' ? { ...b, id: b.id.replace(/_\d+_/, '_N_') } : b));
    expect(viaStream.stop_reason).toBe('tool_use');
    expect(whole.stop_reason).toBe('tool_use');
    expect(strip(viaStream)).toEqual(strip(whole));
    expect(whole.content.map((b) => b.type)).toEqual(['text', 'tool_use', 'tool_use']);
  });
});

describe('AnthropicProvider: prompt caching with tools', () => {
  /** Tokens of the tools and the system blocks of a logged request: the prefix breakpoint 1 caches. */
  const prefixTokens = (r: LoggedRequest) => r.cache!.blocks.filter((b) => !b.path.startsWith('messages')).reduce((n, b) => n + b.tokens, 0);

  it('each step of a turn reads the previous call from cache, tools included; the figures add up', async () => {
    const p = provider();
    fake.queue(callTool('quotes_lookup', { symbol: 'AAPL' }, { text: 'Checking.' }), callTool('news_search', { q: 'Apple' }), 'AAPL is up on strong iPhone sales.');
    const r1 = await p.complete(streamed());
    const first = fake.messages()[0]!;
    expect(r1.usage.cacheReadTokens).toBe(0);
    expect(r1.usage.cacheWriteTokens).toBe(first.cache!.totalTokens - REQUEST_OVERHEAD_TOKENS);
    expect(prefixTokens(first)).toBeGreaterThan(1500); // the tools are part of the cached prefix

    const step1: ToolStep = { text: r1.text, calls: r1.toolCalls!, results: [{ callId: r1.toolCalls![0]!.id, content: 'AAPL 187.30', isError: false }] };
    const r2 = await p.complete(streamed({ toolSteps: [step1] }));
    // All of the first call is read back; only the step is written.
    expect(r2.usage.cacheReadTokens).toBe(r1.usage.cacheWriteTokens);
    expect(r2.usage.cacheWriteTokens).toBeGreaterThan(0);
    expect(r2.usage.cacheWriteTokens).toBeLessThan(100);
    expect(r2.usage.inputTokens).toBe(REQUEST_OVERHEAD_TOKENS);

    const step2: ToolStep = { text: '', calls: r2.toolCalls!, results: [{ callId: r2.toolCalls![0]!.id, content: 'Apple beats estimates', isError: false }] };
    const r3 = await p.complete(streamed({ toolSteps: [step1, step2] }));
    expect(r3.text).toBe('AAPL is up on strong iPhone sales.');
    expect(r3.usage.cacheReadTokens).toBe(r2.usage.cacheReadTokens + r2.usage.cacheWriteTokens);
    const total3 = fake.messages()[2]!.cache!.totalTokens;
    expect(r3.usage.inputTokens + r3.usage.cacheReadTokens + r3.usage.cacheWriteTokens).toBe(total3);
  });

  it('a new session with the same persona and tools reads tools + system through the system breakpoint', async () => {
    const p = provider();
    await p.complete(streamed({ messages: conversation(0, 'first') }));
    const r = await p.complete(streamed({ messages: conversation(0, 'other session') }));
    expect(r.usage.cacheReadTokens).toBe(prefixTokens(fake.messages()[1]!));
  });

  it('other tools miss the whole cache; the same tools with tool_choice none still read tools + system', async () => {
    const p = provider();
    const r1 = await p.complete(streamed());
    const changed = await p.complete(streamed({ tools: [TOOLS[1]!, TOOLS[0]!] }));
    expect(changed.usage.cacheReadTokens).toBe(0);
    const fewer = await p.complete(streamed({ tools: [TOOLS[0]!] }));
    expect(fewer.usage.cacheReadTokens).toBe(0);
    const none = await p.complete(streamed({ toolChoice: 'none' }));
    // tool_choice is cached with the messages: those miss, the prefix does not.
    expect(none.usage.cacheReadTokens).toBe(prefixTokens(fake.messages()[3]!));
    expect(none.usage.cacheReadTokens).toBeLessThan(r1.usage.cacheWriteTokens);
    const again = await p.complete(streamed());
    expect(again.usage.cacheReadTokens).toBe(r1.usage.cacheWriteTokens);
  });
});
