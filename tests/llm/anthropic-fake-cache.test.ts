/**
 * The fake's cache model itself, driven through the real SDK with hand-placed breakpoints, so the
 * provider tests can trust its figures.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOOKBACK_BLOCKS, ManualClock, REQUEST_OVERHEAD_TOKENS, TTL_5M_MS, startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { TEST_KEY, TEST_MODEL, longPrefix } from './support.js';

let fake: FakeAnthropicServer;
let clock: ManualClock;
let client: Anthropic;

beforeEach(async () => {
  clock = new ManualClock();
  fake = await startFakeAnthropic({ now: clock.now });
  client = new Anthropic({ apiKey: TEST_KEY, baseURL: fake.url, maxRetries: 0 });
});
afterEach(async () => {
  await fake.close();
});

const cc = { type: 'ephemeral' } as const;
type Msg = Anthropic.MessageParam;

/** `n` short alternating messages, starting and ending with a user message when n is odd. */
function chat(n: number, tag = 'm'): Msg[] {
  return Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: [{ type: 'text', text: `${tag} ${i}` }] }) as Msg);
}

function markLast(msgs: Msg[]): Msg[] {
  return msgs.map((m, i) => {
    if (i !== msgs.length - 1) return m;
    const blocks = m.content as Anthropic.TextBlockParam[];
    return { ...m, content: blocks.map((b, j) => (j === blocks.length - 1 ? { ...b, cache_control: cc } : b)) } as Msg;
  });
}

async function usage(params: Partial<Anthropic.MessageCreateParamsNonStreaming> & { messages: Msg[] }) {
  const m = await client.messages.create({ model: TEST_MODEL, max_tokens: 100, ...params });
  return m.usage;
}

describe('fake Anthropic cache model', () => {
  it('input + cache read + cache write always equals the request total', async () => {
    const system = [{ type: 'text' as const, text: longPrefix(1200), cache_control: cc }];
    for (const n of [1, 3, 5]) {
      const u = await usage({ system, messages: markLast(chat(n)) });
      const total = fake.messages().at(-1)!.cache!.totalTokens;
      expect(u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0)).toBe(total);
    }
  });

  it('string content and a single text block are the same prefix; markers are not part of it', async () => {
    const system = longPrefix(1200);
    // Strings everywhere; top-level cache_control marks the message.
    await usage({ cache_control: cc, system, messages: [{ role: 'user', content: 'hi' }] });
    // The same content as blocks, with the marker placed on the block instead.
    const u = await usage({ system: [{ type: 'text', text: system }], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: cc }] }] });
    expect(u.cache_read_input_tokens).toBe(1201);
    expect(u.cache_creation_input_tokens).toBe(0);
  });

  it('reads through the lookback window but not beyond it', async () => {
    const system = [{ type: 'text' as const, text: longPrefix(1200) }];
    const first = markLast(chat(1));
    const w = await usage({ system, messages: first });
    expect(w.cache_creation_input_tokens).toBeGreaterThan(1200);

    // The entry sits at block 1 (system, first message). A breakpoint LOOKBACK_BLOCKS later still finds it…
    const near = markLast([...chat(1), ...chat(LOOKBACK_BLOCKS + 1, 'x').slice(1)]);
    expect(near).toHaveLength(LOOKBACK_BLOCKS + 1);
    const hit = await usage({ system, messages: near });
    expect(hit.cache_read_input_tokens).toBe(w.cache_creation_input_tokens);

    // …one block further is out of reach, even though the prefix is identical.
    fake.cache.clear();
    await usage({ system, messages: first });
    const far = markLast([...chat(1), ...chat(LOOKBACK_BLOCKS + 2, 'x').slice(1)]);
    expect(far).toHaveLength(LOOKBACK_BLOCKS + 2);
    const miss = await usage({ system, messages: far });
    expect(miss.cache_read_input_tokens).toBe(0);
  });

  it('an earlier breakpoint closer to the change keeps long conversations cached', async () => {
    const system = [{ type: 'text' as const, text: longPrefix(1200), cache_control: cc }];
    const msgs = chat(41);
    const u1 = await usage({ system, messages: markLast(msgs) });
    expect(u1.cache_creation_input_tokens).toBeGreaterThan(0);
    // Change only the last message: the system breakpoint still reads its own entry.
    const changed = markLast([...msgs.slice(0, 40), { role: 'user', content: [{ type: 'text', text: 'different' }] }]);
    const u2 = await usage({ system, messages: changed });
    expect(u2.cache_read_input_tokens).toBe(1200);
  });

  it('writes only past the read point, at breakpoints long enough to cache', async () => {
    const system = [
      { type: 'text' as const, text: longPrefix(500), cache_control: cc },
      { type: 'text' as const, text: longPrefix(800, 'summary') },
    ];
    const u = await usage({ system, messages: markLast(chat(1)) });
    // 500 tokens at the first breakpoint: below the minimum, not written; the second one is.
    const out = fake.messages().at(-1)!.cache!;
    expect(out.breakpoints).toHaveLength(2);
    expect(out.written).toEqual([out.breakpoints[1]]);
    expect(u.cache_creation_input_tokens).toBe(out.totalTokens - REQUEST_OVERHEAD_TOKENS);
    expect(u.input_tokens).toBe(REQUEST_OVERHEAD_TOKENS);
  });

  it('respects the minimum per model (Haiku 2048) and an injected override', async () => {
    const system = [{ type: 'text' as const, text: longPrefix(1500), cache_control: cc }];
    expect((await usage({ model: 'claude-haiku-4-5', system, messages: chat(1) })).cache_creation_input_tokens).toBe(0);
    const big = [{ type: 'text' as const, text: longPrefix(2100), cache_control: cc }];
    expect((await usage({ model: 'claude-haiku-4-5', system: big, messages: chat(1) })).cache_creation_input_tokens).toBe(2100);

    await fake.close();
    fake = await startFakeAnthropic({ now: clock.now, minCacheTokens: () => 4096 });
    client = new Anthropic({ apiKey: TEST_KEY, baseURL: fake.url, maxRetries: 0 });
    expect((await usage({ system: big, messages: chat(1) })).cache_creation_input_tokens).toBe(0);
  });

  it('caches are per model', async () => {
    const system = [{ type: 'text' as const, text: longPrefix(1500), cache_control: cc }];
    await usage({ system, messages: chat(1) });
    expect((await usage({ model: 'claude-opus-4-1', system, messages: chat(1) })).cache_read_input_tokens).toBe(0);
    expect((await usage({ system, messages: chat(1) })).cache_read_input_tokens).toBe(1500);
  });

  it('5-minute entries expire on the injected clock; 1-hour entries outlive them', async () => {
    const five = [{ type: 'text' as const, text: longPrefix(1500, 'five'), cache_control: cc }];
    const hour = [{ type: 'text' as const, text: longPrefix(1500, 'hour'), cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } }];
    const w = await usage({ system: hour, messages: chat(1) });
    expect(w.cache_creation?.ephemeral_1h_input_tokens).toBe(1500);
    await usage({ system: five, messages: chat(1) });
    clock.advance(TTL_5M_MS - 1);
    expect((await usage({ system: five, messages: chat(1) })).cache_read_input_tokens).toBe(1500);
    clock.advance(TTL_5M_MS + 1);
    expect((await usage({ system: five, messages: chat(1) })).cache_read_input_tokens).toBe(0);
    expect((await usage({ system: hour, messages: chat(1) })).cache_read_input_tokens).toBe(1500);
  });

  it('top-level cache_control (automatic caching) marks the last block', async () => {
    const msgs = [{ role: 'user' as const, content: longPrefix(1300, 'auto') }];
    const u1 = await usage({ cache_control: cc, messages: msgs });
    expect(u1.cache_creation_input_tokens).toBe(1300);
    const u2 = await usage({ cache_control: cc, messages: [...msgs, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }] });
    expect(u2.cache_read_input_tokens).toBe(1300);
  });

  it('rejects more than four breakpoints and empty text blocks with invalid_request_error', async () => {
    const system = Array.from({ length: 5 }, (_, i) => ({ type: 'text' as const, text: `part ${i}`, cache_control: cc }));
    await expect(usage({ system, messages: chat(1) })).rejects.toMatchObject({ status: 400, type: 'invalid_request_error' });
    await expect(usage({ messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] })).rejects.toMatchObject({ status: 400 });
  });

  it('logs every request with headers and body', async () => {
    await usage({ messages: chat(1) });
    const [r] = fake.requests;
    expect(r!.path).toBe('/v1/messages');
    expect(r!.headers['anthropic-version']).toBeTruthy();
    expect((r!.body['messages'] as unknown[]).length).toBe(1);
    expect(r!.status).toBe(200);
  });
});
