/**
 * Model-call failures at the router: what a round does with a model call that fails, that is cut
 * short, or that streams for a long time — quiet decision lines for voluntary turns, a notice
 * with the real reason for addressed ones and the right hint in the log, a marked cut reply, and
 * no timeout for a reply that keeps streaming.
 */
import { describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CapturingLogger } from '../helpers/logger.js';
import { makeRouter } from '../helpers/router-harness.js';

const tick = () => new Promise((r) => setImmediate(r));
const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

describe('failures that say what happened', () => {
  it('"anyone hungry?": voluntary turns that fail are quiet decision lines, not ⚠ notices', async () => {
    const logger = new CapturingLogger();
    const h = await makeRouter({
      logger,
      llm: { fallback: () => Promise.reject(new LlmError('OpenAI-compatible endpoint: 404 "model \\"qwen3\\" not found, try pulling it first"', 'model_not_found', false)) },
    });
    await h.say('anyone hungry?');
    expect(h.channel.posts).toEqual([]);
    const decisions = h.transcript().filter((e) => e.kind === 'decision' && e.decision?.type === 'error');
    expect(decisions.map((e) => e.text)).toEqual(['Analyst could not reply (model not found)', 'Writer could not reply (model not found)', 'Critic could not reply (model not found)']);
    expect(decisions.every((e) => e.hiddenFromAgents)).toBe(true);
    expect(h.transcript().filter((e) => e.kind === 'system')).toEqual([]);
    // The log says what to check.
    const lines = logger.lines.filter((l) => l.level === 'warn' && typeof l.msg === 'string' && l.msg.includes('could not reply'));
    expect(lines).toHaveLength(3);
    expect(lines[0]!.msg).toContain('check the model name and llm.base_url');
    expect(lines[0]!.obj).toMatchObject({ code: 'model_not_found', turn: 'voluntary', hint: 'check the model name and llm.base_url' });
  });

  it('an addressed turn that fails gets a notice with the real reason, and the log the matching hint', async () => {
    const reasons: Array<[LlmError, string, RegExp | null]> = [
      [new LlmError('Anthropic: 401 invalid x-api-key', 'auth', false), 'API key rejected', /check the API key/],
      [new LlmError('Anthropic: 429 rate limited', 'rate_limited', true), 'rate limited', /llm\.max_concurrency/],
      [new LlmError('OpenAI-compatible endpoint: 500 CUDA out of memory', 'server', true), 'server error', /server/],
      [new LlmError('prompt is too long: 210000 tokens > 200000 maximum', 'context_too_long', false), "the conversation did not fit the model's context window", /history_turns/],
      [new LlmError('no answer within 30s', 'timeout', true), 'timeout', /agent_reply_timeout_seconds/],
    ];
    for (const [err, reason, hint] of reasons) {
      const logger = new CapturingLogger();
      const h = await makeRouter({ logger, llm: { replies: { analyst: () => Promise.reject(err) } } });
      await h.say('@analyst numbers please');
      expect(h.channel.texts(null)).toEqual([`⚠ Analyst could not reply (${reason})`]);
      const line = logger.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Analyst could not reply'))!;
      expect(line.msg).toContain(err.message);
      if (hint) expect(line.msg).toMatch(hint);
      // A context error never sends the operator to the model name.
      if (err.code === 'context_too_long') expect(line.msg).not.toMatch(/model name/);
    }
  });
});

describe('replies cut at max_tokens', () => {
  it('get a quiet decision line, a "…" at the end of the stored and streamed text, and a log line', async () => {
    const logger = new CapturingLogger();
    const cutting: LlmProvider = {
      name: 'cutting',
      async complete(req: LlmRequest): Promise<LlmResponse> {
        const text = req.purpose === 'turn' ? 'The figures show a rise in' : 'summary';
        req.onDelta?.(text);
        return { text, model: req.model, usage, costUsd: null, cut: req.purpose === 'turn' ? 'max_tokens' : undefined };
      },
    };
    const h = await makeRouter({ logger, llm: cutting });
    const deltas: string[] = [];
    h.router.gateway.subscribe((ev) => ev.type === 'delta' && deltas.push(ev.text));
    await h.say('@analyst trend?');
    expect(h.channel.texts('analyst')).toEqual(['The figures show a rise in…']);
    expect(deltas.join('')).toBe('The figures show a rise in…');
    const reply = h.transcript().find((e) => e.kind === 'agent')!;
    expect(reply.text).toBe('The figures show a rise in…');
    expect(reply.meta?.cut).toBe('max_tokens');
    const note = h.transcript().find((e) => e.kind === 'decision' && e.decision?.type === 'cut')!;
    expect(note).toMatchObject({ text: "Analyst's reply was cut at max_tokens", hiddenFromAgents: true, decision: { agentId: 'analyst' } });
    expect(note.seq).toBe(reply.seq + 1);
    expect(logger.lines.some((l) => l.level === 'warn' && /Analyst's reply was cut \(max_tokens reached\)/.test(l.msg ?? ''))).toBe(true);
    // Full history: the stored log has both, in order.
    const stored = await h.fullTranscript();
    expect(stored.filter((e) => e.kind === 'agent' || e.decision?.type === 'cut').map((e) => e.text)).toEqual(['The figures show a rise in…', "Analyst's reply was cut at max_tokens"]);
  });
});

describe('time limits in a round', () => {
  it("an addressed reply that keeps streaming for a minute is delivered whole, not cut off by agent_reply_timeout_seconds", async () => {
    const clock = new FakeClock();
    let push: ((t: string) => void) | undefined;
    let done: (() => void) | undefined;
    const slow: LlmProvider = {
      name: 'slow',
      complete(req: LlmRequest): Promise<LlmResponse> {
        let text = '';
        return new Promise((resolve, reject) => {
          push = (t) => {
            text += t;
            req.onDelta?.(t);
          };
          done = () => resolve({ text, model: req.model, usage });
          req.signal?.addEventListener('abort', () => reject(req.signal!.reason));
        });
      },
    };
    const h = await makeRouter({ clock, llm: slow, group: { agent_reply_timeout_seconds: 5 }, idleTimeoutMs: 3_000 });
    await h.router.receive(h.message('@analyst tell me a long story'));
    for (let i = 0; i < 50 && !push; i++) await tick();
    await clock.advance(2_000);
    for (let i = 0; i < 30; i++) {
      push!(`part${i} `);
      await clock.advance(2_000); // a chunk every 2 s for 60 s: past 5 s many times, never 3 s idle
    }
    done!();
    await h.router.idle();
    expect(h.channel.texts(null)).toEqual([]);
    expect(h.channel.texts('analyst')).toHaveLength(1);
    expect(h.channel.texts('analyst')[0]).toBe(Array.from({ length: 30 }, (_, i) => `part${i}`).join(' '));
  });
});

describe('costs', () => {
  it('a model without a known price shows "price unknown" in /group usage, never $0.0000; a mix says what it leaves out', async () => {
    const priced: LlmProvider = {
      name: 'priced',
      async complete(req: LlmRequest): Promise<LlmResponse> {
        const text = `ok from ${req.agent?.id}`;
        return { text, model: req.model, usage, costUsd: req.agent?.id === 'analyst' ? 0.0123 : null };
      },
    };
    const h = await makeRouter({ llm: priced });
    await h.say('@writer hello');
    await h.say('/group usage');
    const only = h.channel.texts(null).at(-1)!;
    expect(only).toMatch(/• Writer: 1 calls, .* out, price unknown/);
    expect(only).toMatch(/^Total: price unknown$/m);
    expect(only).not.toContain('$0.0000');
    await h.say('@analyst hello');
    await h.say('/group usage');
    const mixed = h.channel.texts(null).at(-1)!;
    expect(mixed).toMatch(/• Analyst: 1 calls, .* out, \$0\.0123/);
    expect(mixed).toMatch(/^Total: \$0\.0123 \+ 1 call of unknown price$/m);
  });
});
