/**
 * The LlmGate at unit level: the fair model-call slots (caps per group and per agent
 * inside the global one, round-robin between groups, nothing left taken), a time limit that
 * counts the wait for a slot, the reply byte budget enforced on any provider, and the UTF-8
 * helpers it rests on.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { configDeprecations, idleTimeoutSeconds, replyTimeoutSeconds, summaryModelOf } from '../../src/config/schema.js';
import { LlmError } from '../../src/core/errors.js';
import { noMetrics } from '../../src/core/metrics.js';
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import { FairSlots, defaultShares } from '../../src/core/router/FairSlots.js';
import { BYTES_PER_TOKEN_CEILING, CUT_MARKER, LlmGate, cutMarker } from '../../src/core/router/LlmGate.js';
import { cutUtf8, utf8Length } from '../../src/core/text/utf8.js';
import { FakeClock } from '../helpers/fake-clock.js';

const tick = () => new Promise((r) => setImmediate(r));
const unexpected = (): never => {
  throw new Error('expected the call to fail');
};
const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 };
const agent = (id: string) => ({ id, name: id, persona: 'p', model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5 });

/** A provider whose calls stay open until the test settles them; records what is running. */
class HeldProvider implements LlmProvider {
  readonly name = 'held';
  readonly running: Array<{ req: LlmRequest; settle: (text: string) => void }> = [];
  maxRunning = 0;
  complete(req: LlmRequest): Promise<LlmResponse> {
    return new Promise((resolve, reject) => {
      const entry = {
        req,
        settle: (text: string) => {
          this.running.splice(this.running.indexOf(entry), 1);
          resolve({ text, model: req.model, usage });
        },
      };
      this.running.push(entry);
      this.maxRunning = Math.max(this.maxRunning, this.running.length);
      req.signal?.addEventListener('abort', () => {
        const i = this.running.indexOf(entry);
        if (i >= 0) this.running.splice(i, 1);
        reject(req.signal!.reason);
      });
    });
  }
}

function gate(provider: LlmProvider, settings: ConstructorParameters<typeof LlmGate>[1], clock = new FakeClock()) {
  return { gate: new LlmGate(provider, settings, clock, noMetrics, new AbortController().signal), clock };
}

const turn = (group: string, agentId: string, extra: Partial<LlmRequest> = {}): Omit<LlmRequest, 'signal'> => ({
  purpose: 'turn',
  model: 'm',
  system: 's',
  messages: [{ role: 'user', content: 'hi' }],
  groupId: group,
  agent: agentId ? agent(agentId) : undefined,
  ...extra,
});

describe('fair model-call slots', () => {
  it('new shares (a reload added agents) apply at once: calls that now fit start, never above the total', async () => {
    const slots = new FairSlots({ total: 4, perGroup: 4, perAgent: 1 });
    const started: string[] = [];
    for (const g of ['g1', 'g2', 'g3', 'g4', 'g5']) void slots.acquire({ group: g, agent: 'analyst' }).then(() => started.push(g));
    await tick();
    expect(started).toEqual(['g1']);
    slots.setShares({ perGroup: 4, perAgent: 99 });
    await tick();
    expect(started).toEqual(['g1', 'g2', 'g3', 'g4']);
    expect([slots.running, slots.queued, slots.limits.perAgent]).toEqual([4, 1, 4]);
  });

  it('keeps the global, per-group and per-agent caps, and a blocked call never blocks the calls behind it', async () => {
    const slots = new FairSlots({ total: 4, perGroup: 2, perAgent: 2 });
    const held = new Map<string, () => void>();
    const order: string[] = [];
    const ask = (group: string, agentId: string) =>
      slots.acquire({ group, agent: agentId }).then((release) => {
        order.push(`${group}/${agentId}`);
        held.set(`${group}/${agentId}`, release);
      });
    // Agent "hung" asks in four groups; only two get a slot (its cap), two slots stay free.
    void ask('g1', 'hung');
    void ask('g2', 'hung');
    void ask('g3', 'hung');
    void ask('g4', 'hung');
    await tick();
    expect(order).toEqual(['g1/hung', 'g2/hung']);
    expect([slots.running, slots.queued]).toEqual([2, 2]);
    // g3's next call is for another agent: it passes the blocked "hung" call queued before it.
    void ask('g3', 'writer');
    void ask('g5', 'writer');
    void ask('g5', 'critic');
    void ask('g5', 'analyst');
    await tick();
    expect(order).toEqual(['g1/hung', 'g2/hung', 'g3/writer', 'g5/writer']);
    expect(slots.running).toBe(4);
    expect(slots.queued).toBe(4);
    // g1/hung gives its slot back: "hung" has room again, and g4 has waited longest.
    held.get('g1/hung')!();
    await tick();
    expect(order.at(-1)).toBe('g4/hung');
    // g3/writer gives its slot back: g3's "hung" call is still at its agent cap, so g5 goes next.
    held.get('g3/writer')!();
    await tick();
    expect(order.at(-1)).toBe('g5/critic');
    // g2/hung gives its slot back: "hung" has room for g3's call again.
    held.get('g2/hung')!();
    await tick();
    expect(order.at(-1)).toBe('g3/hung');
    // g5/writer gives its slot back: g5 is under its group cap again.
    held.get('g5/writer')!();
    await tick();
    expect(order.at(-1)).toBe('g5/analyst');
    expect(order).toHaveLength(8);
    expect(slots.queued).toBe(0);
  });

  it('serves waiting groups round-robin: a backlog in one group cannot starve another', async () => {
    const slots = new FairSlots({ total: 1, perGroup: 1, perAgent: 1 });
    const order: string[] = [];
    const first = await slots.acquire({ group: 'busy', agent: 'a0' });
    const done: Promise<void>[] = [];
    for (let i = 1; i <= 5; i++) done.push(slots.acquire({ group: 'busy', agent: `a${i}` }).then((r) => (order.push(`busy${i}`), r())));
    done.push(slots.acquire({ group: 'quiet', agent: 'q' }).then((r) => (order.push('quiet'), r())));
    first();
    await Promise.all(done);
    // "quiet" asked last, behind five of "busy", and is served second.
    expect(order.indexOf('quiet')).toBe(1);
  });

  it('an abort while waiting leaves no trace, and no slot stays taken', async () => {
    const slots = new FairSlots({ total: 1, perGroup: 1, perAgent: 1 });
    const held = await slots.acquire({ group: 'g', agent: 'a' });
    const ac = new AbortController();
    const waiting = slots.acquire({ group: 'h', agent: 'b' }, ac.signal);
    ac.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(slots.queued).toBe(0);
    held();
    held(); // twice is harmless
    expect(slots.running).toBe(0);
    const again = await slots.acquire({ group: 'h', agent: 'b' });
    again();
  });

  it('default shares: a quarter per group; half per agent when there are several', () => {
    expect(defaultShares(16, 3)).toEqual({ perGroup: 4, perAgent: 8 });
    expect(defaultShares(16, 1)).toEqual({ perGroup: 4, perAgent: 16 });
    expect(defaultShares(16, 10)).toEqual({ perGroup: 4, perAgent: 8 });
    expect(defaultShares(1, 5)).toEqual({ perGroup: 1, perAgent: 1 });
  });

  it('a share larger than llm.max_concurrency is refused, naming the key', () => {
    const yaml = 'agents:\n  - { id: a, name: A, persona: p }\nllm: { max_concurrency: 4, max_concurrency_per_group: 5, max_concurrency_per_agent: 8 }\n';
    let problems: string[] = [];
    try {
      parseConfigText(yaml, 'test.yaml', {});
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems.map((p) => `${p.path}: ${p.message}`);
    }
    expect(problems.sort()).toEqual([
      'llm.max_concurrency_per_agent: must be at most llm.max_concurrency (4); it is a share of it',
      'llm.max_concurrency_per_group: must be at most llm.max_concurrency (4); it is a share of it',
    ]);
    const ok = parseConfigText('agents:\n  - { id: a, name: A, persona: p }\nllm: { max_reply_bytes: 65536, max_concurrency_per_agent: 2 }\n', 'test.yaml', {}).config.llm;
    expect([ok.max_reply_bytes, ok.max_concurrency_per_agent, ok.max_concurrency_per_group]).toEqual([65536, 2, undefined]);
  });
});

describe('LlmGate: time limits and slots', () => {
  it('the wait for a slot counts against the waiting call’s own time limit; hung calls free their slots', async () => {
    const provider = new HeldProvider();
    const { gate: g, clock } = gate(provider, { maxConcurrency: 2, maxConcurrencyPerAgent: 1 });
    // The hung agent holds its one slot (30 s limit) and has a second call waiting.
    const hung = g.call(turn('g1', 'hung'), 30_000).catch((e: unknown) => e);
    const hungQueued = g.call(turn('g2', 'hung'), 30_000).catch((e: unknown) => e);
    await tick();
    // Another agent's call starts at once: the hung agent cannot take the second slot.
    const other = g.call(turn('g3', 'writer'), 5_000);
    await tick();
    expect(provider.running.map((r) => r.req.groupId)).toEqual(['g1', 'g3']);
    provider.running.find((r) => r.req.groupId === 'g3')!.settle('fine');
    expect((await other).text).toBe('fine');

    // With the global cap full, a waiting call times out on its own limit with a clear message.
    const blocker = g.call(turn('g4', 'critic'), 60_000).catch((e: unknown) => e);
    await tick();
    const starved = g.call(turn('g5', 'writer'), 5_000).catch((e: unknown) => e);
    await tick();
    await clock.advance(5_000);
    const err = (await starved) as LlmError;
    expect(err).toBeInstanceOf(LlmError);
    expect(err.code).toBe('timeout');
    expect(err.message).toBe('no free model slot within 5s');
    // The hung calls end on their limit (the queued one included) and nothing stays taken.
    await clock.advance(25_000);
    expect(((await hung) as LlmError).code).toBe('timeout');
    expect(((await hungQueued) as LlmError).message).toMatch(/within 30s/);
    await clock.advance(30_000);
    expect(((await blocker) as LlmError).code).toBe('timeout');
    expect(g.depth).toBe(0);
    expect(provider.running).toHaveLength(0);
  });
});

/**
 * A provider the test drives chunk by chunk: `text()` streams visible text, `think()` reports
 * thinking (output that is not text), `finish()` ends the reply. Aborts reject like an SDK.
 */
class Streaming implements LlmProvider {
  readonly name = 'streaming';
  req: LlmRequest | undefined;
  aborted: unknown;
  private resolve: ((r: LlmResponse) => void) | undefined;
  private said = '';
  complete(req: LlmRequest): Promise<LlmResponse> {
    this.req = req;
    this.said = '';
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      req.signal?.addEventListener('abort', () => {
        this.aborted = req.signal!.reason;
        reject(req.signal!.reason);
      });
    });
  }
  text(t: string): void {
    this.said += t;
    this.req!.onActivity?.();
    this.req!.onDelta?.(t);
  }
  think(): void {
    this.req!.onActivity?.();
  }
  finish(cut?: LlmResponse['cut']): void {
    this.resolve!({ text: this.said, model: this.req!.model, usage, cut });
  }
}

describe('LlmGate: time limits that match streaming', () => {
  const limits = { maxConcurrency: 2, idleTimeoutMs: 10_000, replyTimeoutMs: 120_000 };

  it('a reply that keeps streaming is not ended by the first-token limit, however long it takes in all', async () => {
    const p = new Streaming();
    const { gate: g, clock } = gate(p, limits);
    const deltas: string[] = [];
    const call = g.call(turn('g', 'a', { onDelta: (d) => deltas.push(d) }), 15_000);
    await tick();
    await clock.advance(14_000); // first token just inside the 15 s limit
    p.text('Lunch ');
    // 822 deltas, one every 100 ms: 82 s in all, far past the first-token limit, never idle.
    for (let i = 0; i < 822; i++) {
      await clock.advance(100);
      p.text('x');
    }
    p.finish();
    const res = await call;
    expect(res.text).toBe('Lunch ' + 'x'.repeat(822));
    expect(res.cut).toBeUndefined();
    expect(deltas.join('')).toBe(res.text);
  });

  it('ends with a timeout when nothing comes within the first-token limit, and when a begun reply stalls past the idle limit', async () => {
    const p1 = new Streaming();
    const { gate: g1, clock: c1 } = gate(p1, limits);
    const silent = g1.call(turn('g', 'a', { onDelta: () => undefined }), 15_000).then(unexpected, (e: unknown) => e as LlmError);
    await tick();
    await c1.advance(14_999);
    expect(p1.aborted).toBeUndefined();
    await c1.advance(1);
    expect(await silent).toMatchObject({ code: 'timeout', message: 'no answer within 15s' });

    const p2 = new Streaming();
    const { gate: g2, clock: c2 } = gate(p2, limits);
    const stalled = g2.call(turn('g', 'a', { onDelta: () => undefined }), 15_000).then(unexpected, (e: unknown) => e as LlmError);
    await tick();
    await c2.advance(1_000);
    p2.text('Well, ');
    await c2.advance(9_000);
    p2.text('maybe'); // 9 s of silence: inside the 10 s idle limit
    await c2.advance(9_999);
    expect(p2.aborted).toBeUndefined();
    await c2.advance(1);
    const err = await stalled;
    expect(err).toMatchObject({ code: 'timeout' });
    expect(err.message).toMatch(/stalled: no output for 10s \(llm\.idle_timeout_seconds\)/);
    expect(p2.aborted).toBe(err); // the provider's request was aborted with the same reason
  });

  it('the idle limit applies from the first chunk, even when the first-token limit is longer', async () => {
    const p = new Streaming();
    const { gate: g, clock } = gate(p, limits);
    const call = g.call(turn('g', 'a', { onDelta: () => undefined }), 60_000).then(unexpected, (e: unknown) => e as LlmError);
    await tick();
    await clock.advance(1_000);
    p.text('Hm');
    await clock.advance(9_999);
    expect(p.aborted).toBeUndefined();
    await clock.advance(1); // 11 s in: 10 s after the chunk, long before the 60 s first-token limit
    expect((await call).message).toMatch(/stalled/);
  });

  it('thinking counts as output: a model that thinks for a minute before its first word is not cut off', async () => {
    const p = new Streaming();
    const { gate: g, clock } = gate(p, limits);
    const call = g.call(turn('g', 'a', { onDelta: () => undefined }), 15_000);
    await tick();
    await clock.advance(5_000);
    for (let i = 0; i < 12; i++) {
      p.think();
      await clock.advance(5_000);
    }
    p.text('After some thought: yes.');
    p.finish();
    expect((await call).text).toBe('After some thought: yes.');
  });

  it('the overall cap ends a reply still streaming: the text so far is kept and marked "…", in the stream too', async () => {
    const p = new Streaming();
    const { gate: g, clock } = gate(p, limits);
    const deltas: string[] = [];
    const call = g.call(turn('g', 'a', { onDelta: (d) => deltas.push(d) }), 15_000);
    await tick();
    for (let t = 0; t < 120; t++) {
      p.text(`w${t} `);
      await clock.advance(1_000);
    }
    const res = await call;
    expect(p.aborted).toBeDefined();
    expect(res.cut).toBe('timeout');
    expect(res.text.startsWith('w0 w1 ')).toBe(true);
    expect(res.text.endsWith('w119 …')).toBe(true);
    expect(deltas.join('')).toBe(res.text);
    expect(res.costUsd).toBeNull();
  });

  it('at the cap a model that only thought has nothing to keep: a timeout that says so', async () => {
    const p = new Streaming();
    const { gate: g, clock } = gate(p, limits);
    const call = g.call(turn('g', 'a', { onDelta: () => undefined }), 15_000).then(unexpected, (e: unknown) => e as LlmError);
    await tick();
    for (let t = 0; t < 120; t++) {
      p.think();
      await clock.advance(1_000);
    }
    const err = await call;
    expect(err.code).toBe('timeout');
    expect(err.message).toMatch(/still thinking.*120s cap \(llm\.reply_timeout_seconds\)/);
  });

  it("a caller's signal cancels its call alone — waiting for a slot or mid-stream — and gives the slot back", async () => {
    const p = new Streaming();
    const { gate: g } = gate(p, { ...limits, maxConcurrency: 1 });
    const stop = new AbortController();
    const running = g.call(turn('g', 'a', { onDelta: () => undefined }), 15_000, stop.signal).then(unexpected, (e: unknown) => e as LlmError);
    await tick();
    const waiting = g.call(turn('g', 'b'), 15_000, stop.signal).then(unexpected, (e: unknown) => e as LlmError);
    const other = new AbortController();
    const untouched = g.call(turn('h', 'c'), 15_000, other.signal);
    await tick();
    p.text('half a');
    stop.abort(new Error('stopped by Maya'));
    expect(await running).toMatchObject({ code: 'aborted', message: 'stopped by Maya' });
    expect(await waiting).toMatchObject({ code: 'aborted', message: 'stopped by Maya' });
    // The third call (another group, its own signal) gets the slot and runs normally.
    await tick();
    expect(p.req!.groupId).toBe('h');
    p.text('fine');
    p.finish();
    expect(await untouched).toMatchObject({ text: 'fine' });
    expect(g.depth).toBe(0);
    // A signal that already fired refuses at once.
    await expect(g.call(turn('g', 'a'), 15_000, stop.signal)).rejects.toMatchObject({ code: 'aborted' });
  });
});

describe('one set of time-limit keys', () => {
  const agentYaml = 'agents:\n  - { id: a, name: A, persona: p }\n';
  const problems = (yaml: string): string[] => {
    try {
      parseConfigText(yaml, 'test.yaml', {});
      return [];
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return err.problems.map((p) => `${p.path}: ${p.message}`);
    }
  };

  it('defaults: 30 s idle, a 300 s cap, current models; no deprecation', () => {
    const { config } = parseConfigText(agentYaml, 'test.yaml', {});
    expect([idleTimeoutSeconds(config.llm), replyTimeoutSeconds(config.llm)]).toEqual([30, 300]);
    expect([config.llm.model, summaryModelOf(config.llm)]).toEqual(['claude-sonnet-5-5', 'claude-haiku-5-5']);
    expect(configDeprecations(config)).toEqual([]);
  });

  it('the old llm.timeout_seconds is read as the overall cap, with a warning that names the new keys; both at once is an error', () => {
    const { config } = parseConfigText(agentYaml + 'llm: { timeout_seconds: 600 }\n', 'test.yaml', {});
    expect(replyTimeoutSeconds(config.llm)).toBe(600);
    const [d] = configDeprecations(config);
    expect(d!.path).toBe('llm.timeout_seconds');
    expect(d!.message).toMatch(/llm\.reply_timeout_seconds.*agent_reply_timeout_seconds.*llm\.idle_timeout_seconds/);
    expect(problems(agentYaml + 'llm: { timeout_seconds: 600, reply_timeout_seconds: 900 }\n')).toEqual([
      'llm.timeout_seconds: is the deprecated name of llm.reply_timeout_seconds; set only llm.reply_timeout_seconds',
    ]);
    const ok = parseConfigText(agentYaml + 'llm: { idle_timeout_seconds: 5, reply_timeout_seconds: 900 }\n', 'test.yaml', {}).config.llm;
    expect([idleTimeoutSeconds(ok), replyTimeoutSeconds(ok)]).toEqual([5, 900]);
    expect(problems(agentYaml + 'llm: { idle_timeout_seconds: 0 }\n')).toEqual([expect.stringMatching(/^llm\.idle_timeout_seconds: /)]);
  });
});

describe('LlmGate: bounded replies', () => {
  /** Streams `text` in one delta (not cooperating with the budget) unless told to stream pieces. */
  class Flooding implements LlmProvider {
    readonly name = 'flood';
    seen: LlmRequest | undefined;
    aborted = false;
    constructor(private readonly text: string, private readonly opts: { stream?: boolean; cut?: LlmResponse['cut'] } = {}) {}
    async complete(req: LlmRequest): Promise<LlmResponse> {
      this.seen = req;
      req.signal?.addEventListener('abort', () => (this.aborted = true));
      if (this.opts.stream !== false) req.onDelta?.(this.text);
      await tick();
      return { text: this.text, model: req.model, usage, cut: this.opts.cut };
    }
  }

  it('a provider that streams 10 MB in one piece is stopped; deltas and text stay within the limit and end with the marker', async () => {
    const provider = new Flooding('€'.repeat(3_500_000)); // 10.5 MB of UTF-8
    const { gate: g } = gate(provider, { maxConcurrency: 1, maxReplyBytes: 32 * 1024 });
    const deltas: string[] = [];
    const res = await g.call(turn('g', 'a', { onDelta: (d) => deltas.push(d) }), 10_000);
    expect(provider.aborted).toBe(true);
    expect(provider.seen!.maxReplyBytes).toBe(32 * 1024 - utf8Length(CUT_MARKER));
    expect(res.cut).toBe('bytes');
    expect(res.text.endsWith(CUT_MARKER)).toBe(true);
    expect(utf8Length(res.text)).toBeLessThanOrEqual(32 * 1024);
    expect(utf8Length(res.text)).toBeGreaterThan(32 * 1024 - 8);
    expect(deltas.join('')).toBe(res.text);
    for (const d of deltas) expect(utf8Length(d)).toBeLessThanOrEqual(32 * 1024);
  });

  it('a reply that was not streamed is cut to the limit too; max_tokens bounds the budget', async () => {
    const provider = new Flooding('x'.repeat(100_000), { stream: false });
    const { gate: g } = gate(provider, { maxConcurrency: 1, maxReplyBytes: 64 * 1024 });
    const res = await g.call(turn('g', 'a', { maxTokens: 64 }), 10_000);
    expect(res.cut).toBe('bytes');
    expect(utf8Length(res.text)).toBe(64 * BYTES_PER_TOKEN_CEILING);
    expect(g.replyBudget({ maxTokens: undefined })).toBe(64 * 1024 - utf8Length(CUT_MARKER));
  });

  it('a reply the model ended at max_tokens is marked; a normal reply is left alone', async () => {
    const { gate: g1 } = gate(new Flooding('The figures show a rise in', { cut: 'max_tokens' }), { maxConcurrency: 1 });
    const cut = await g1.call(turn('g', 'a', { onDelta: () => undefined }), 10_000);
    expect(cut).toMatchObject({ cut: 'max_tokens', text: 'The figures show a rise in…' });
    expect(cutMarker('max_tokens')).toBe('…');
    const { gate: g2 } = gate(new Flooding('All good.'), { maxConcurrency: 1 });
    const fine = await g2.call(turn('g', 'a', { onDelta: () => undefined }), 10_000);
    expect(fine.text).toBe('All good.');
    expect(fine.cut).toBeUndefined();
  });
});

describe('UTF-8 helpers', () => {
  const anyText = fc.string({ unit: 'binary', maxLength: 200 });

  it('utf8Length agrees with the encoder, lone surrogates included', () => {
    fc.assert(fc.property(anyText, (s) => utf8Length(s) === new TextEncoder().encode(s).length), { seed: 13, numRuns: 500 });
  });

  it('cutUtf8 gives the longest prefix that fits, never half a character', () => {
    fc.assert(
      fc.property(anyText, fc.nat(400), (s, max) => {
        const p = cutUtf8(s, max);
        if (!s.startsWith(p) || utf8Length(p) > max) return false;
        if (p.length === s.length) return true;
        const next = s.codePointAt(p.length)!;
        // The next whole code point would not have fitted.
        return utf8Length(p + String.fromCodePoint(next)) > max || (next >= 0xd800 && next <= 0xdfff && utf8Length(p) + 3 > max);
      }),
      { seed: 13, numRuns: 500 },
    );
    expect(cutUtf8('ab😀c', 5)).toBe('ab');
    expect(cutUtf8('ab😀c', 6)).toBe('ab😀');
  });
});
