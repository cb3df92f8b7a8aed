/**
 * The prom-client side of the Metrics port: each app has its own registry, and a model call's
 * report lands in the right series (tokens and cost only for successes, an unpriced model counted
 * apart instead of silently adding nothing).
 */
import { describe, expect, it } from 'vitest';
import { PromMetrics } from '../../src/ops/metrics.js';

const setup = { agents: ['analyst'], channels: ['web'] as const, models: ['m1', 'local'] };
const usage = { inputTokens: 100, outputTokens: 20, cacheReadTokens: 5, cacheWriteTokens: 0 };

function sample(text: string, series: string): number | undefined {
  const escaped = series.replace(/[{}()[\].*+?^$|\\]/g, '\\$&');
  const m = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

describe('PromMetrics', () => {
  it('keeps two instances apart (own registry each)', async () => {
    const a = new PromMetrics({ ...setup, channels: [...setup.channels] });
    const b = new PromMetrics({ ...setup, channels: [...setup.channels] });
    a.messageRecorded('web');
    a.messageRecorded('web');
    expect(sample(await a.text(), 'chorus_messages_total{channel="web"}')).toBe(2);
    expect(sample(await b.text(), 'chorus_messages_total{channel="web"}')).toBe(0);
  });

  it('adds tokens and cost for successes only, and counts calls of unpriced models', async () => {
    const m = new PromMetrics({ ...setup, channels: [...setup.channels] });
    m.llmCall({ purpose: 'turn', model: 'm1', outcome: 'ok', seconds: 1.5, firstTokenSeconds: 0.2, usage, costUsd: 0.0012 });
    m.llmCall({ purpose: 'turn', model: 'local', outcome: 'ok', seconds: 0.5, usage, costUsd: null });
    m.llmCall({ purpose: 'summary', model: 'm1', outcome: 'timeout', seconds: 30 });
    m.turnFailed('analyst', 'timeout');
    const t = await m.text();
    expect(sample(t, 'chorus_llm_tokens_total{model="m1",kind="input"}')).toBe(100);
    expect(sample(t, 'chorus_llm_tokens_total{model="m1",kind="cache_read"}')).toBe(5);
    expect(sample(t, 'chorus_llm_tokens_total{model="m1",kind="cache_write"}')).toBe(0);
    expect(sample(t, 'chorus_llm_cost_usd_total{model="m1"}')).toBeCloseTo(0.0012, 9);
    expect(sample(t, 'chorus_llm_cost_usd_total{model="local"}')).toBe(0);
    expect(sample(t, 'chorus_llm_unpriced_calls_total{model="local"}')).toBe(1);
    expect(sample(t, 'chorus_llm_unpriced_calls_total{model="m1"}')).toBe(0);
    // Failures are timed too, under their outcome; they add no tokens.
    expect(sample(t, 'chorus_llm_call_duration_seconds_count{purpose="summary",outcome="timeout"}')).toBe(1);
    expect(sample(t, 'chorus_llm_call_duration_seconds_sum{purpose="summary",outcome="timeout"}')).toBe(30);
    expect(sample(t, 'chorus_llm_call_duration_seconds_bucket{le="2",purpose="turn",outcome="ok"}')).toBe(2);
    expect(sample(t, 'chorus_llm_first_token_seconds_count{purpose="turn"}')).toBe(1);
    expect(sample(t, 'chorus_turn_failures_total{agent="analyst",reason="timeout"}')).toBe(1);
    expect(sample(t, 'chorus_turn_failures_total{agent="analyst",reason="auth"}')).toBe(0);
  });

  it('gauges read their sources at scrape time; before they are wired they read 0', async () => {
    const m = new PromMetrics({ ...setup, channels: [...setup.channels] });
    expect(sample(await m.text(), 'chorus_queue_depth')).toBe(0);
    let queued = 3;
    m.watch({
      load: () => ({ queuedRounds: queued, llmCalls: 1, groups: 2 }),
      readiness: () => ({
        ready: false,
        store: { ok: true, writable: true, error: null },
        channels: { telegram: { ok: false, bots: { analyst: { ok: true }, writer: { ok: false, error: '401' } } } },
      }),
    });
    let t = await m.text();
    expect(sample(t, 'chorus_queue_depth')).toBe(3);
    expect(sample(t, 'chorus_channel_connected{channel="telegram"}')).toBe(0);
    expect(sample(t, 'chorus_channel_part_connected{channel="telegram",part="analyst"}')).toBe(1);
    expect(sample(t, 'chorus_channel_part_connected{channel="telegram",part="writer"}')).toBe(0);
    queued = 0;
    t = await m.text();
    expect(sample(t, 'chorus_queue_depth')).toBe(0);
  });
});
