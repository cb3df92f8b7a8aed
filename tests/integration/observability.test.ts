/**
 * Metrics and logs an operator can rely on: `/metrics` scraped over HTTP from a real
 * app (real Anthropic SDK against the fake, real pino), parsed as Prometheus exposition text.
 * Series exist at zero from the start, move with a round, and have the right types; durations
 * are histograms in seconds; each round leaves one info line; requests leave a debug access
 * line; no secret reaches a log line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { createLogger } from '../../src/logger.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';

const API_KEY = 'sk-ant-test-observability-key';
const WEB_TOKEN = 'web-secret-token-1234';

/** One parsed exposition: `# TYPE` per family and every sample with its labels. */
interface Exposition {
  types: Map<string, string>;
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Exposition['samples'] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The value of one sample; labels must match exactly the ones given (others ignored). */
function value(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const hit = e.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hit?.value;
}

let fake: FakeAnthropicServer;
let app: App;
let dir: string;
const logLines: Array<Record<string, unknown>> = [];
let rawLog = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-obs-'));
  fake = await startFakeAnthropic({
    apiKey: API_KEY,
    reply: (req) => {
      const system = JSON.stringify(req.body['system'] ?? '');
      const last = JSON.stringify(req.body['messages'] ?? '');
      if (system.includes('You are Writer (@writer)')) return '[PASS]';
      if (last.includes('please fail')) return { status: 400, type: 'invalid_request_error', message: 'this request is broken' };
      return { text: 'Revenue grew eight percent.', chunks: ['Revenue ', 'grew ', 'eight percent.'] };
    },
  });
  const { config } = parseConfigText(
    `
data_dir: ${JSON.stringify(dir)}
log_level: debug
llm: { provider: anthropic, api_key: ${API_KEY}, base_url: "${fake.url}", model: claude-opus-4-5, max_retries: 0 }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write prose." }
group_defaults: { cooldown_seconds: 0 }
channels: { web: { enabled: true, port: 0, host: 127.0.0.1, auth_token: ${WEB_TOKEN} } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [analyst, writer] }
`,
    'test',
  );
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      rawLog += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.trim()) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  app = await createApp({ config, logger: createLogger('debug', sink) });
  await app.start();
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${WEB_TOKEN}` };

async function scrape(): Promise<{ text: string; e: Exposition; contentType: string | null }> {
  const res = await fetch(`${app.webUrl}/metrics`, { headers: auth });
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, e: parseExposition(text), contentType: res.headers.get('content-type') };
}

async function say(text: string): Promise<void> {
  const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya' }) });
  expect(res.status).toBe(202);
  await app.router.idle();
}

describe('/metrics', () => {
  let before: Exposition;
  let after: Exposition;
  let afterText = '';

  beforeAll(async () => {
    before = (await scrape()).e;
    await say('How are the numbers this quarter?');
    const s = await scrape();
    after = s.e;
    afterText = s.text;
  });

  it('exposes every series with its type, counters at zero before anything happened', () => {
    const expected: Record<string, string> = {
      chorus_messages_total: 'counter',
      chorus_replies_total: 'counter',
      chorus_passes_total: 'counter',
      chorus_turn_failures_total: 'counter',
      chorus_llm_tokens_total: 'counter',
      chorus_llm_cost_usd_total: 'counter',
      chorus_llm_unpriced_calls_total: 'counter',
      chorus_round_duration_seconds: 'histogram',
      chorus_llm_call_duration_seconds: 'histogram',
      chorus_llm_first_token_seconds: 'histogram',
      chorus_queue_depth: 'gauge',
      chorus_llm_in_flight: 'gauge',
      chorus_groups: 'gauge',
      chorus_store_writable: 'gauge',
      chorus_channel_connected: 'gauge',
      // prom-client's default process metrics
      process_cpu_seconds_total: 'counter',
      process_resident_memory_bytes: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_heap_size_used_bytes: 'gauge',
      // the web channel's own figures
      chorus_web_http_responses_total: 'counter',
    };
    for (const [name, type] of Object.entries(expected)) expect(before.types.get(name), name).toBe(type);
    // Zero-initialised for the known label values: the agents, the enabled channel, the models,
    // every failure reason and token kind.
    expect(value(before, 'chorus_messages_total', { channel: 'web' })).toBe(0);
    for (const agent of ['analyst', 'writer']) {
      expect(value(before, 'chorus_replies_total', { agent })).toBe(0);
      expect(value(before, 'chorus_passes_total', { agent })).toBe(0);
      for (const reason of ['timeout', 'rate_limited', 'auth', 'bad_request', 'network']) expect(value(before, 'chorus_turn_failures_total', { agent, reason }), `${agent}/${reason}`).toBe(0);
    }
    for (const kind of ['input', 'output', 'cache_read', 'cache_write']) expect(value(before, 'chorus_llm_tokens_total', { model: 'claude-opus-4-5', kind })).toBe(0);
    expect(value(before, 'chorus_llm_cost_usd_total', { model: 'claude-haiku-5-5' })).toBe(0);
    expect(value(before, 'chorus_round_duration_seconds_count')).toBe(0);
    expect(value(before, 'chorus_llm_call_duration_seconds_count', { purpose: 'turn', outcome: 'ok' })).toBe(0);
    expect(value(before, 'chorus_channel_connected', { channel: 'web' })).toBe(1);
    expect(value(before, 'chorus_store_writable')).toBe(1);
    // The old hand-written series are gone.
    expect(before.types.has('chorus_llm_latency_ms_sum')).toBe(false);
  });

  it('moves with a round: +1 message, a reply, a pass, histogram counts, tokens and cost', () => {
    expect(value(after, 'chorus_messages_total', { channel: 'web' })).toBe(1);
    expect(value(after, 'chorus_replies_total', { agent: 'analyst' })).toBe(1);
    expect(value(after, 'chorus_passes_total', { agent: 'writer' })).toBe(1);
    expect(value(after, 'chorus_round_duration_seconds_count')).toBe(1);
    expect(value(after, 'chorus_round_duration_seconds_sum')).toBeGreaterThan(0);
    // Both agents' turns were model calls; both streamed their first text.
    expect(value(after, 'chorus_llm_call_duration_seconds_count', { purpose: 'turn', outcome: 'ok' })).toBe(2);
    expect(value(after, 'chorus_llm_first_token_seconds_count', { purpose: 'turn' })).toBe(2);
    // The +Inf bucket holds every observation.
    expect(value(after, 'chorus_llm_call_duration_seconds_bucket', { purpose: 'turn', outcome: 'ok', le: '+Inf' })).toBe(2);
    expect(value(after, 'chorus_llm_tokens_total', { model: 'claude-opus-4-5', kind: 'input' })).toBeGreaterThan(0);
    expect(value(after, 'chorus_llm_tokens_total', { model: 'claude-opus-4-5', kind: 'output' })).toBeGreaterThan(0);
    expect(value(after, 'chorus_llm_cost_usd_total', { model: 'claude-opus-4-5' })).toBeGreaterThan(0);
    expect(value(after, 'chorus_queue_depth')).toBe(0);
    expect(value(after, 'chorus_groups')).toBe(1);
    // Sanity of the format as a whole: one TYPE per family, a HELP for each.
    expect(afterText.match(/^# TYPE chorus_messages_total counter$/gm)).toHaveLength(1);
    expect(afterText).toMatch(/^# HELP chorus_round_duration_seconds \S/m);
  });

  it('counts a failed call in the latency histogram by outcome and as a turn failure by reason', async () => {
    await say('@analyst please fail');
    const { e } = await scrape();
    expect(value(e, 'chorus_turn_failures_total', { agent: 'analyst', reason: 'bad_request' })).toBe(1);
    expect(value(e, 'chorus_llm_call_duration_seconds_count', { purpose: 'turn', outcome: 'bad_request' })).toBe(1);
    expect(value(e, 'chorus_messages_total', { channel: 'web' })).toBe(2);
    expect(value(e, 'chorus_round_duration_seconds_count')).toBe(2);
  });

  it('needs the token like the API', async () => {
    expect((await fetch(`${app.webUrl}/metrics`)).status).toBe(401);
  });
});

describe('logs', () => {
  it('one info line per round with group, trigger, who answered and passed, latency, tokens and cost', () => {
    const rounds = logLines.filter((l) => typeof l['msg'] === 'string' && /^round r\d+ in room/.test(l['msg'] as string));
    expect(rounds.length).toBe(2);
    const first = rounds[0]!;
    expect(first['level']).toBe(30); // info
    expect(first).toMatchObject({ group: 'room', channel: 'web', trigger: 'open', answered: ['analyst'], passed: ['writer'], failed: [] });
    expect(first['latencyMs']).toEqual(expect.any(Number));
    expect((first['tokens'] as { input: number }).input).toBeGreaterThan(0);
    expect(first['costUsd']).toBeGreaterThan(0);
    expect(first['msg']).toMatch(/analyst answered; writer passed in \d+\.\d s$/);
    const second = rounds[1]!;
    expect(second).toMatchObject({ trigger: 'mention', addressed: ['analyst'], answered: [], failed: [{ agent: 'analyst', reason: 'bad_request' }] });
    // The text people wrote is not in the round line.
    expect(JSON.stringify(rounds)).not.toContain('numbers this quarter');
  });

  it('an access line per request at debug, without the query string', async () => {
    await fetch(`${app.webUrl}/api/groups?token=${WEB_TOKEN}`, { headers: auth });
    await new Promise((r) => setTimeout(r, 50));
    const access = logLines.filter((l) => l['level'] === 20 && l['method'] === 'GET' && l['path'] === '/api/groups');
    expect(access.length).toBeGreaterThan(0);
    expect(access.at(-1)).toMatchObject({ status: 200, completed: true });
    expect(access.at(-1)!['ms']).toEqual(expect.any(Number));
    expect(logLines.some((l) => l['path'] === '/metrics' && l['status'] === 401)).toBe(true);
  });

  it('never carries a secret', () => {
    expect(rawLog.length).toBeGreaterThan(0);
    expect(rawLog).not.toContain(API_KEY);
    expect(rawLog).not.toContain(WEB_TOKEN);
  });
});
