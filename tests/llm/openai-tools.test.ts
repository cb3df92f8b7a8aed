/**
 * Tool calling on the OpenAI-compatible provider, through the real SDK against the fake server:
 * what is sent (tools, tool_choice, a turn's tool steps), and the calls of a reply however a server
 * streams them (OpenAI's fragments, Ollama's whole calls ending on `stop`, no ids, no index).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { ToolStep } from '../../src/core/toolTypes.js';
import { OpenAiProvider, buildOpenAiParams } from '../../src/llm/OpenAiProvider.js';
import { ToolCallCollector } from '../../src/llm/openAiTools.js';
import { INVALID_JSON_KEY } from '../../src/llm/toolInput.js';
import { callTool, startFakeOpenAi, type FakeOpenAiOptions, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { silentLogger } from '../helpers/logger.js';
import { TOOLS, conversation, llmConfig } from './support.js';

const MODEL = 'qwen3:8b';
let fake: FakeOpenAiServer | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(opts: FakeOpenAiOptions = {}) {
  fake = await startFakeOpenAi(opts);
  const p = new OpenAiProvider({ config: llmConfig({ provider: 'openai', api_key: null, base_url: fake.url, model: MODEL, max_retries: 0 }), logger: silentLogger });
  return { fake, p };
}

const req = (over: Partial<LlmRequest> = {}): LlmRequest => ({
  purpose: 'turn',
  model: MODEL,
  system: 'You are Analyst, in the group "Market team".',
  messages: conversation(0),
  tools: TOOLS,
  onDelta: () => undefined,
  ...over,
});

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

describe('OpenAiProvider: tools in the request', () => {
  it("sends the tools in order as functions with tool_choice auto; 'none' keeps the tools; no tools sends neither", async () => {
    const { fake, p } = await setup();
    await p.complete(req());
    await p.complete(req({ toolChoice: 'none' }));
    const [auto, none] = fake.requests;
    expect(auto!.body['tools']).toEqual(TOOLS.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } })));
    expect(auto!.body['tool_choice']).toBe('auto');
    expect(none!.body['tools']).toEqual(auto!.body['tools']);
    expect(none!.body['tool_choice']).toBe('none');
    // The tools are part of the prompt a server processes (and caches).
    expect(auto!.promptTokens).toBeGreaterThan(Math.ceil(JSON.stringify(auto!.body['tools']).length / 4));
    for (const tools of [undefined, []]) {
      const params = buildOpenAiParams(req({ tools, toolChoice: 'none' }), 100);
      expect('tools' in params || 'tool_choice' in params).toBe(false);
    }
  });

  it("renders the turn's steps after the messages: assistant tool_calls (content null without text), one tool message per result; the fake accepts them", async () => {
    const { fake, p } = await setup();
    const steps: ToolStep[] = [
      {
        text: 'Let me check both.',
        calls: [
          { id: 'call_a', name: 'quotes_lookup', input: { symbol: 'AAPL' } },
          { id: 'call_b', name: 'news_search', input: { q: 'Apple', days: 7 } },
        ],
        results: [
          { callId: 'call_a', content: 'AAPL 187.30', isError: false },
          { callId: 'call_b', content: 'search service unavailable', isError: true },
        ],
      },
      { text: '', calls: [{ id: 'call_c', name: 'news_search', input: {} }], results: [{ callId: 'call_c', content: 'no news', isError: false }] },
    ];
    fake.queue('AAPL is at 187.30.');
    const r = await p.complete(req({ toolSteps: steps }));
    expect(r.text).toBe('AAPL is at 187.30.');
    expect(fake.requests[0]!.status).toBe(200);
    const sent = fake.requests[0]!.body['messages'] as unknown[];
    expect(sent.slice(1 + conversation(0).length)).toEqual([
      {
        role: 'assistant',
        content: 'Let me check both.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'quotes_lookup', arguments: '{"symbol":"AAPL"}' } },
          { id: 'call_b', type: 'function', function: { name: 'news_search', arguments: '{"q":"Apple","days":7}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'AAPL 187.30' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Error: search service unavailable' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_c', type: 'function', function: { name: 'news_search', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_c', content: 'no news' },
    ]);
  });

  it('the fake refuses what OpenAI refuses: a tool message for an unknown call, a call left unanswered, a tool name with a dot', async () => {
    const { fake, p } = await setup();
    const call = { id: 'call_a', name: 'quotes_lookup', input: {} };
    const unknown = await rejection(p.complete(req({ toolSteps: [{ text: '', calls: [call], results: [{ callId: 'call_a', content: 'x', isError: false }, { callId: 'call_z', content: 'y', isError: false }] }] })));
    expect([unknown.code, unknown.message]).toEqual(['bad_request', expect.stringMatching(/role 'tool' must be a response to a preceeding message with 'tool_calls'/)]);
    const unanswered = await rejection(p.complete(req({ toolSteps: [{ text: '', calls: [call], results: [] }] })));
    expect(unanswered.message).toMatch(/did not have response messages: call_a/);
    const dotted = await rejection(p.complete(req({ tools: [{ ...TOOLS[0]!, name: 'quotes.lookup' }] })));
    expect(dotted.message).toMatch(/tools\[0\]\.function\.name/);
    expect(fake.requests.map((r) => r.status)).toEqual([400, 400, 400]);
  });
});

describe('OpenAiProvider: tool calls in the reply', () => {
  it('a call streamed in fragments (id and name first, arguments in pieces) is parsed; the text before it is the text; the fragments are activity, not text', async () => {
    const { fake, p } = await setup();
    fake.queue(callTool('news_search', { q: 'Apple "Vision" {pro}', days: 7 }, { text: 'Let me search.' }));
    const deltas: string[] = [];
    let activity = 0;
    const r = await p.complete(req({ onDelta: (d) => deltas.push(d), onActivity: () => activity++ }));
    expect(r.text).toBe('Let me search.');
    expect(deltas.join('')).toBe('Let me search.');
    expect(r.toolCalls).toEqual([{ id: 'call_fake_0_0', name: 'news_search', input: { q: 'Apple "Vision" {pro}', days: 7 } }]);
    const json = JSON.stringify({ q: 'Apple "Vision" {pro}', days: 7 });
    expect(activity).toBe(3 + 1 + Math.ceil(json.length / 6));
    // Usage is read as without tools: the final usage chunk, the arguments counted as output.
    expect(r.usage.inputTokens).toBe(fake.requests[0]!.promptTokens);
    expect(r.usage.outputTokens).toBe(Math.ceil('Let me search.'.length / 4) + Math.ceil(('news_search' + json).length / 4));
  });

  it('two calls in one reply come back in order, streamed or not', async () => {
    const { fake, p } = await setup();
    const reply = { toolCalls: [{ name: 'quotes_lookup', input: { symbol: 'AAPL' } }, { name: 'quotes_lookup', input: { symbol: 'MSFT' } }] };
    fake.queue(reply, reply);
    const a = await p.complete(req());
    const b = await p.complete(req({ onDelta: undefined }));
    expect(fake.requests.map((r) => r.stream)).toEqual([true, false]);
    for (const [r, i] of [[a, 0], [b, 1]] as const) {
      expect(r.text).toBe('');
      expect(r.toolCalls).toEqual([
        { id: `call_fake_${i}_0`, name: 'quotes_lookup', input: { symbol: 'AAPL' } },
        { id: `call_fake_${i}_1`, name: 'quotes_lookup', input: { symbol: 'MSFT' } },
      ]);
    }
  });

  it("Ollama's way: every call whole in the chunk that ends the reply with finish_reason 'stop' — the calls are returned", async () => {
    const { fake, p } = await setup();
    fake.queue({ text: 'On it.', toolCallStyle: 'whole', toolCalls: [{ name: 'quotes_lookup', input: { symbol: 'AAPL' } }, { name: 'news_search', input: { q: 'Apple' } }] });
    const r = await p.complete(req());
    expect(r.text).toBe('On it.');
    expect(r.toolCalls).toEqual([
      { id: 'call_fake_0_0', name: 'quotes_lookup', input: { symbol: 'AAPL' } },
      { id: 'call_fake_0_1', name: 'news_search', input: { q: 'Apple' } },
    ]);
  });

  it('a server that sends no ids gets call_<n>, counted over the turn; no index still separates whole calls', async () => {
    const { fake, p } = await setup();
    const earlier: ToolStep = {
      text: '',
      calls: [
        { id: 'call_0', name: 'quotes_lookup', input: { symbol: 'AAPL' } },
        { id: 'call_1', name: 'quotes_lookup', input: { symbol: 'MSFT' } },
      ],
      results: [
        { callId: 'call_0', content: '187', isError: false },
        { callId: 'call_1', content: '410', isError: false },
      ],
    };
    const calls = [{ name: 'news_search', input: { q: 'Apple' } }, { name: 'news_search', input: { q: 'Microsoft' } }];
    fake.queue({ toolCallStyle: 'whole', omitToolCallIds: true, omitToolCallIndex: true, toolCalls: calls }, { omitToolCallIds: true, toolCalls: calls });
    for (let i = 0; i < 2; i++) {
      const r = await p.complete(req({ toolSteps: [earlier] }));
      expect(r.toolCalls).toEqual([
        { id: 'call_2', name: 'news_search', input: { q: 'Apple' } },
        { id: 'call_3', name: 'news_search', input: { q: 'Microsoft' } },
      ]);
    }
  });

  it('arguments that are not a JSON object are kept under _invalid_json, and go back to the server as valid JSON', async () => {
    const { fake, p } = await setup();
    fake.queue({ toolCalls: [{ name: 'news_search', rawArguments: '{"q": "Apple", days: seven' }, { name: 'quotes_lookup', rawArguments: '' }] });
    const r = await p.complete(req());
    expect(r.toolCalls!.map((c) => c.input)).toEqual([{ [INVALID_JSON_KEY]: '{"q": "Apple", days: seven' }, {}]);
    const step: ToolStep = { text: '', calls: r.toolCalls!, results: r.toolCalls!.map((c) => ({ callId: c.id, content: 'invalid arguments', isError: true })) };
    await p.complete(req({ toolSteps: [step] }));
    expect(fake.requests[1]!.status).toBe(200);
    const args = (fake.requests[1]!.body['messages'] as Array<{ tool_calls?: Array<{ function: { arguments: string } }> }>).flatMap((m) => m.tool_calls ?? []).map((c) => JSON.parse(c.function.arguments) as unknown);
    expect(args).toEqual([{ [INVALID_JSON_KEY]: '{"q": "Apple", days: seven' }, {}]);
  });

  it('maxReplyBytes counts the text only; a reply cut at the budget carries no calls', async () => {
    const { fake, p } = await setup();
    const big = { q: 'x'.repeat(5_000) };
    fake.queue(callTool('news_search', big, { text: 'Searching.' }));
    const r = await p.complete(req({ maxReplyBytes: 64 }));
    expect([r.cut, r.text, r.toolCalls?.[0]?.input]).toEqual([undefined, 'Searching.', big]);
    fake.queue(callTool('news_search', { q: 'a' }, { text: 'one two three four five six seven' }));
    const cut = await p.complete(req({ maxReplyBytes: 12 }));
    expect([cut.cut, cut.text, cut.toolCalls]).toEqual(['bytes', 'one two thre', undefined]);
  });

  it('a reply ended for length hands on no calls: the text comes back cut, or the reply is "empty" and says why', async () => {
    const { fake, p } = await setup();
    fake.queue({ text: 'Let me look', toolCalls: [{ name: 'news_search', rawArguments: '{"q": "App' }], finishReason: 'length' });
    const r = await p.complete(req());
    expect([r.text, r.cut, r.toolCalls]).toEqual(['Let me look', 'max_tokens', undefined]);
    fake.queue({ toolCalls: [{ name: 'news_search', rawArguments: '{"q": "App' }], finishReason: 'length' });
    const err = await rejection(p.complete(req({ onDelta: undefined })));
    expect([err.code, err.message]).toEqual(['empty', 'OpenAI-compatible: the model returned no text: it ran out of max_tokens in the middle of a tool call']);
  });

  it('an abort while the arguments stream is "aborted", and the connection is closed', async () => {
    const { fake, p } = await setup();
    fake.queue({ toolCalls: [{ name: 'news_search', input: { q: 'a fairly long query about Apple and its suppliers' } }], chunkDelayMs: 30 });
    const ac = new AbortController();
    let activity = 0;
    const err = await rejection(p.complete(req({ signal: ac.signal, onActivity: () => ++activity === 3 && ac.abort() })));
    expect(err.code).toBe('aborted');
    await expect.poll(() => fake.requests[0]!.closedEarly, { timeout: 5_000 }).toBe(true);
  });
});

describe('ToolCallCollector: fragments as servers really send them', () => {
  it('every call with index 0 but its own id (an Ollama bug) makes separate calls; a continuation without index joins the last', () => {
    const c = new ToolCallCollector();
    c.push([{ index: 0, id: 'call_x', function: { name: 'quotes_lookup', arguments: '{"symbol":' } }]);
    c.push([{ function: { arguments: '"AAPL"}' } }]);
    c.push([{ index: 0, id: 'call_y', function: { name: 'quotes_lookup', arguments: '{"symbol":"MSFT"}' } }]);
    expect(c.calls(0)).toEqual([
      { id: 'call_x', name: 'quotes_lookup', input: { symbol: 'AAPL' } },
      { id: 'call_y', name: 'quotes_lookup', input: { symbol: 'MSFT' } },
    ]);
  });

  it('arguments sent as an object are taken as they are; a call that never got a name is left out', () => {
    const c = new ToolCallCollector();
    c.push([{ index: 0, id: 'call_1', function: { name: 'news_search', arguments: { q: 'Apple' } } }, { index: 1, function: { arguments: '{}' } }]);
    expect(c.calls(5)).toEqual([{ id: 'call_1', name: 'news_search', input: { q: 'Apple' } }]);
  });
});
