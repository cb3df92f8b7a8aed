/**
 * A scripted LLM for tests: per agent a fixed text, a list consumed in order, or a function of
 * the request; records every call. Throwing from a function simulates a provider failure.
 */
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';

export type FakeReply = string | ((req: LlmRequest, callIndex: number) => string | Promise<string>);

export interface FakeLlmOptions {
  /** agentId → reply (or list of replies, used in order; the last one repeats). */
  replies?: Record<string, FakeReply | FakeReply[]>;
  /** Reply for agents not listed. Default: '[PASS]' for voluntary turns, 'ok from <id>' when addressed. */
  fallback?: FakeReply;
  /** Reply for purpose 'summary' / 'selector' calls. */
  summary?: FakeReply;
  selector?: FakeReply;
  /** Artificial latency per call in ms (real timers). */
  latencyMs?: number;
}

export class FakeLlm implements LlmProvider {
  readonly name = 'fake';
  readonly calls: LlmRequest[] = [];
  private readonly perAgent = new Map<string, number>();

  constructor(private readonly opts: FakeLlmOptions = {}) {}

  /** Calls made for one agent (turns only). */
  callsFor(agentId: string): LlmRequest[] {
    return this.calls.filter((c) => c.purpose === 'turn' && c.agent?.id === agentId);
  }

  async complete(req: LlmRequest): Promise<LlmResponse> {
    this.calls.push(req);
    if (this.opts.latencyMs) await new Promise((r) => setTimeout(r, this.opts.latencyMs));
    let reply: FakeReply | undefined;
    if (req.purpose === 'summary') reply = this.opts.summary ?? 'summary of earlier turns';
    else if (req.purpose === 'selector') reply = this.opts.selector ?? 'NONE';
    else {
      const id = req.agent?.id ?? '';
      const n = this.perAgent.get(id) ?? 0;
      this.perAgent.set(id, n + 1);
      const r = this.opts.replies?.[id];
      if (Array.isArray(r)) reply = r[Math.min(n, r.length - 1)];
      else reply = r ?? this.opts.fallback ?? ((q) => (q.mustReply ? `ok from ${q.agent?.id}` : '[PASS]'));
    }
    const n = this.calls.length - 1;
    const text = typeof reply === 'function' ? await reply(req, n) : (reply ?? '');
    req.onDelta?.(text);
    return {
      text,
      model: req.model,
      usage: { inputTokens: 10, outputTokens: Math.ceil(text.length / 4), cacheReadTokens: 0, cacheWriteTokens: 0 },
      costUsd: null,
    };
  }
}
