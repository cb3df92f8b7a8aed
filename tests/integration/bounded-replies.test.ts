/**
 * A runaway model cannot flood Chorus. The whole app runs against the
 * OpenAI-compatible fake (the real `openai` client), which streams a 10 MB reply: the reply is cut
 * at `llm.max_reply_bytes` while it streams and marked, the HTTP stream to the model is closed
 * early, and nothing larger reaches the SSE deltas, the transcript, the files on disk, the
 * agent's session or the next prompt; the heap does not grow with the reply. The Anthropic
 * provider is held to the same budget on the real SDK, and `max_tokens` is sent and a reply
 * stopped by it is marked as cut.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { GatewayEvent } from '../../src/core/readModels.js';
import { CUT_MARKER } from '../../src/core/router/LlmGate.js';
import { utf8Length } from '../../src/core/text/utf8.js';
import { AnthropicProvider } from '../../src/llm/AnthropicProvider.js';
import { OpenAiProvider } from '../../src/llm/OpenAiProvider.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { openSse, type SseConnection } from '../channels/web/sse-client.js';
import { silentLogger } from '../helpers/logger.js';
import { llmConfig, request } from '../llm/support.js';

/** 1 KiB of prose with some non-ASCII, so byte and character counts differ. */
const PIECE = ('Revenue grew — and the café’s margins held; ' + 'x'.repeat(1024)).slice(0, 1000) + '€€€€€€€€'.slice(0, 8);
const PIECE_BYTES = utf8Length(PIECE);
const TIMES = Math.ceil((10 * 1024 * 1024) / PIECE_BYTES);
const REPLY_BYTES = PIECE_BYTES * TIMES; // ≈ 10 MB
const LIMIT = 32 * 1024; // the default llm.max_reply_bytes

/** A real collection before measuring the heap, when the runtime lets us have one. */
const gc: () => void = (() => {
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as () => void;
  } catch {
    return () => undefined;
  }
})();

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

describe('a 10 MB streaming reply through the whole app', () => {
  let fake: FakeOpenAiServer;
  let app: App;
  let dir: string;
  let sse: SseConnection | undefined;
  const events: GatewayEvent[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'chorus-bounded-'));
    fake = await startFakeOpenAi({
      // Paced at one piece per millisecond: the whole reply would take over 10 s, so how much was
      // written before the connection closed shows how early it closed (loopback socket buffers
      // can otherwise swallow megabytes the client never read).
      reply: (req) => (req.body['model'] === 'runaway-model' ? { repeat: { piece: PIECE, times: TIMES }, chunkDelayMs: 1 } : 'Noted.'),
    });
    // max_tokens 4096 allows 64 KiB by its token share, so the byte limit is the one that bites.
    // A 32k context: with openai's default 4096 the reply would get at most half of it.
    const { config } = parseConfigText(
      `
data_dir: ${dir}
log_level: silent
llm: { provider: openai, base_url: "${fake.url}", model: quick-model, max_tokens: 4096, max_retries: 0, context_tokens: 32768 }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers.", model: runaway-model }
  - { id: writer, name: Writer, persona: "You write prose." }
group_defaults: { cooldown_seconds: 0 }
channels: { web: { enabled: true, port: 0 } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [analyst, writer] }
`,
      'test',
      {},
    );
    app = await createApp({ config, logger: silentLogger });
    await app.start();
    app.gateway.subscribe((ev) => events.push(ev));
  });

  afterAll(async () => {
    sse?.close();
    await app?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function post(text: string): Promise<void> {
    const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
    expect(res.status).toBe(202);
  }

  it('cuts the reply at the limit while streaming, closes the stream early, and stores and publishes nothing larger', async () => {
    sse = await openSse(`${app.webUrl}/api/groups/room/events`);
    // Warm up the app's paths (a normal turn) so the heap baseline includes them.
    await post('@writer hello');
    await sse.waitFor((evs) => evs.some((e) => e.event === 'message' && e.data.entry?.agentId === 'writer'), 10_000);
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), 2);

    await post('@analyst give me everything');
    const evs = await sse.waitFor((all) => all.some((e) => e.event === 'message' && e.data.entry?.agentId === 'analyst'), 60_000);
    clearInterval(sampler);
    gc();
    const heapAfter = process.memoryUsage().heapUsed;

    // The stored entry: under the limit, marked as cut, flagged in its meta.
    const entry = evs.find((e) => e.event === 'message' && e.data.entry?.agentId === 'analyst')!.data.entry;
    const storedBytes = utf8Length(entry.text);
    expect(storedBytes).toBeLessThanOrEqual(LIMIT);
    expect(storedBytes).toBeGreaterThan(LIMIT / 2);
    expect(entry.text.endsWith(CUT_MARKER)).toBe(true);
    expect(entry.meta.cut).toBe('bytes');

    // Every delta over SSE is under the limit, and together they are the stored text.
    const deltas = evs.filter((e) => e.event === 'delta' && e.data.agentId === 'analyst').map((e) => e.data.text as string);
    expect(deltas.length).toBeGreaterThan(1);
    for (const d of deltas) expect(utf8Length(d)).toBeLessThanOrEqual(LIMIT);
    expect(deltas.join('')).toBe(entry.text);

    // The model's stream was closed long before its end; max_tokens was sent.
    const call = fake.requests.find((r) => r.body['model'] === 'runaway-model')!;
    expect(call.body['max_tokens']).toBe(4096);
    expect(call.closedEarly).toBe(true);
    expect(call.bytesSent).toBeLessThan(REPLY_BYTES / 20);

    // Nothing larger in the agent's session or the transcript kept in memory.
    const g = app.router.groups.get('room')!;
    const history = app.router.groups.session(g, 'analyst').history;
    expect(history.at(-1)!.role).toBe('assistant');
    for (const turn of history) expect(utf8Length(turn.content)).toBeLessThanOrEqual(LIMIT + 8 * 1024);
    expect(utf8Length(history.at(-1)!.content)).toBeLessThanOrEqual(LIMIT);
    for (const e of g.transcript) expect(utf8Length(e.text)).toBeLessThanOrEqual(LIMIT);

    // The next prompt that shows the reply to another agent carries the cut reply, not 10 MB.
    const before = fake.requests.length;
    await post('@writer sum up what Analyst said');
    await sse.waitFor((all) => all.filter((e) => e.event === 'message' && e.data.entry?.agentId === 'writer').length === 2, 10_000);
    const next = fake.requests.slice(before).find((r) => r.body['model'] === 'quick-model')!;
    const promptBytes = utf8Length(JSON.stringify(next.body));
    expect(JSON.stringify(next.body)).toContain('[cut: reply too long]');
    expect(promptBytes).toBeLessThan(2 * LIMIT);

    // On disk: the whole data directory stays a small multiple of the limit.
    await app.router.idle();
    const diskBytes = dirBytes(dir);
    expect(diskBytes).toBeLessThan(8 * LIMIT);

    // The heap did not grow with the reply (ratios against this run's own baseline).
    const peakGrowth = heapPeak - heapBefore;
    console.info(
      `[bounded-replies] model sent ${call.bytesSent} of ${REPLY_BYTES} bytes before the stream was closed; stored ${storedBytes} bytes (limit ${LIMIT}); ${deltas.length} deltas; next prompt ${promptBytes} bytes; data dir ${diskBytes} bytes; heapUsed ${(heapBefore / 1e6).toFixed(1)} → peak ${(heapPeak / 1e6).toFixed(1)} → after ${(heapAfter / 1e6).toFixed(1)} MB`,
    );
    // The peak is sampled between collections, so it holds a few MB of the run's own garbage (HTTP,
    // SSE, JSON; more when the machine is busy and collections come later): what it must never
    // reach is the size of the reply, which a process that held the reply would.
    expect(peakGrowth / REPLY_BYTES).toBeLessThan(1);
    expect(heapAfter / heapBefore).toBeLessThan(1.5);
  }, 90_000);
});

describe('providers hold the byte budget and report max_tokens stops', () => {
  let anthropic: FakeAnthropicServer;
  let openai: FakeOpenAiServer;

  beforeAll(async () => {
    anthropic = await startFakeAnthropic();
    openai = await startFakeOpenAi();
  });

  afterAll(async () => {
    await anthropic?.close();
    await openai?.close();
  });

  it('Anthropic: a 10 MB stream is aborted at the budget and comes back cut', async () => {
    const budget = 16 * 1024;
    anthropic.queue({ repeat: { piece: PIECE, times: TIMES }, chunkDelayMs: 1 });
    const provider = new AnthropicProvider({ config: llmConfig({ base_url: anthropic.url, max_retries: 0 }), logger: silentLogger });
    const deltas: string[] = [];
    const res = await provider.complete(request({ messages: [{ role: 'user', content: 'everything' }], maxReplyBytes: budget, onDelta: (d) => deltas.push(d) }));
    expect(res.cut).toBe('bytes');
    expect(utf8Length(res.text)).toBeLessThanOrEqual(budget);
    expect(utf8Length(res.text)).toBeGreaterThan(budget - PIECE_BYTES);
    expect(deltas.join('')).toBe(res.text);
    const call = anthropic.messages().at(-1)!;
    await new Promise((r) => setTimeout(r, 50));
    expect(call.closedEarly).toBe(true);
    expect(call.bytesSent).toBeLessThan(REPLY_BYTES / 20);
  });

  it('Anthropic: a reply stopped at max_tokens is marked as cut; max_tokens is sent', async () => {
    anthropic.queue({ text: 'The figures show a rise in', stopReason: 'max_tokens' });
    const provider = new AnthropicProvider({ config: llmConfig({ base_url: anthropic.url, max_retries: 0, max_tokens: 64 }), logger: silentLogger });
    const res = await provider.complete(request({ messages: [{ role: 'user', content: 'go' }], onDelta: () => undefined }));
    expect(res.cut).toBe('max_tokens');
    expect(anthropic.messages().at(-1)!.body['max_tokens']).toBe(64);
  });

  it('OpenAI-compatible: a JSON reply over the budget comes back cut; finish_reason length is a max_tokens cut', async () => {
    const provider = new OpenAiProvider({ config: llmConfig({ provider: 'openai', base_url: openai.url, max_retries: 0 }), logger: silentLogger });
    openai.queue({ repeat: { piece: PIECE, times: 100 } }, { text: 'The figures show a rise in', finishReason: 'length' });
    const big = await provider.complete(request({ messages: [{ role: 'user', content: 'everything' }], maxReplyBytes: 4096 }));
    expect(big.cut).toBe('bytes');
    expect(utf8Length(big.text)).toBeLessThanOrEqual(4096);
    const short = await provider.complete(request({ messages: [{ role: 'user', content: 'go' }], onDelta: () => undefined }));
    expect(short.cut).toBe('max_tokens');
  });
});
