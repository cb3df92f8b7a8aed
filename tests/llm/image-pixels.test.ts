/**
 * An image over `limits.max_image_pixels` is never sent to a model, through the real SDKs to the
 * fake servers: a 30000×30000 PNG kept before the limit (or before it was lowered) goes as its
 * line to an OpenAI-compatible vision model, and to Claude — also one within the 8000 pixels a
 * side Anthropic takes, and also when its attachment names no size (the header says it). An
 * image within the limit still goes as an image; the limit is the configured one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { attachmentLine } from '../../src/core/fileTypes.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { ChatTurn } from '../../src/core/types.js';
import { AnthropicProvider } from '../../src/llm/AnthropicProvider.js';
import { createProvider } from '../../src/llm/createProvider.js';
import { OpenAiProvider } from '../../src/llm/OpenAiProvider.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { blankPng } from '../files/images.js';
import { silentLogger } from '../helpers/logger.js';
import { file, reader, turnWith } from './files.js';
import { TEST_KEY, llmConfig, request } from './support.js';

const closing: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of closing.splice(0)) await c.close();
});

const bombBytes = blankPng(30000, 30000);
/** As kept before the limit: its size recorded; and as a file whose attachment names none. */
const bomb = file(bombBytes, 'image/png', 'huge.png', { width: 30000, height: 30000 });
const unsized = file(bombBytes, 'image/png', 'huge.png');
/** 7000×7000: within Anthropic's 8000 pixels a side, but 49 MP. */
const tall = file(blankPng(7000, 7000), 'image/png', 'tall.png', { width: 7000, height: 7000 });
const chart = file(blankPng(800, 600), 'image/png', 'chart.png', { width: 800, height: 600 });

const LINE = (a: typeof bomb.att, limit = '40 MP') =>
  `Image "${a.name}" shared by Maya (not shown: over the ${limit} an image may have): ${attachmentLine(a)}`;
const openAiConfig = (url: string) =>
  llmConfig({ provider: 'openai', api_key: null, base_url: url, model: 'qwen2.5-vl', max_retries: 0 });

async function openAi(maxImagePixels?: number): Promise<{ fake: FakeOpenAiServer; p: OpenAiProvider }> {
  const fake = await startFakeOpenAi();
  closing.push(fake);
  return { fake, p: new OpenAiProvider({ config: openAiConfig(fake.url), logger: silentLogger, maxImagePixels }) };
}

async function anthropic(): Promise<{ fake: FakeAnthropicServer; p: AnthropicProvider }> {
  const fake = await startFakeAnthropic({ apiKey: TEST_KEY });
  closing.push(fake);
  const config = llmConfig({ base_url: fake.url, max_retries: 0 });
  return { fake, p: new AnthropicProvider({ config, logger: silentLogger }) };
}

function openAiReq(messages: ChatTurn[], over: Partial<LlmRequest> = {}): LlmRequest {
  return { purpose: 'turn', model: 'qwen2.5-vl', system: 'You are Analyst.', messages, ...over };
}

/** Every text part or block of the requests a fake logged, joined. */
const textOf = (bodies: Array<Record<string, unknown>>) => JSON.stringify(bodies.map((b) => b['messages']));

describe('an image over limits.max_image_pixels is never sent to a model', () => {
  it('OpenAI-compatible: a 30000×30000 PNG goes as its line, sized or not; a chart as an image', async () => {
    const { fake, p } = await openAi();
    const files = reader(bomb, chart);
    await p.complete(openAiReq([turnWith('look', bomb.att, chart.att)], { readFile: files.readFile }));
    expect(fake.receivedImages().map((i) => i.sha256)).toEqual([chart.att.sha256]);
    expect(textOf(fake.requests.map((r) => r.body))).toContain(JSON.stringify(`${LINE(bomb.att)}\n\n`).slice(1, -1));

    await p.complete(openAiReq([turnWith('again', unsized.att)], { readFile: reader(unsized).readFile }));
    expect(fake.receivedImages().map((i) => i.sha256)).toEqual([chart.att.sha256]);
  });

  it('Claude: neither a 30000×30000 PNG (sized or not) nor a 7000×7000 one (within 8000 a side) goes', async () => {
    const { fake, p } = await anthropic();
    const files = reader(bomb, tall, chart);
    const turn = turnWith('look', bomb.att, tall.att, chart.att);
    await p.complete(request({ messages: [turn], readFile: files.readFile }));
    expect(fake.receivedFiles().map((f) => f.sha256)).toEqual([chart.att.sha256]);
    const sent = textOf(fake.messages().map((m) => m.body));
    expect(sent).toContain(JSON.stringify(LINE(bomb.att)).slice(1, -1));
    expect(sent).toContain(JSON.stringify(LINE(tall.att)).slice(1, -1));

    await p.complete(request({ messages: [turnWith('again', unsized.att)], readFile: reader(unsized).readFile }));
    expect(fake.receivedFiles().map((f) => f.sha256)).toEqual([chart.att.sha256]);
  });

  it('the limit is the configured one (limits.max_image_pixels through createProvider)', async () => {
    const { fake } = await openAi();
    const p = createProvider(openAiConfig(fake.url), silentLogger, { max_image_pixels: 400_000 });
    await p.complete(openAiReq([turnWith('chart', chart.att)], { readFile: reader(chart).readFile }));
    expect(fake.receivedImages()).toEqual([]);
    expect(textOf(fake.requests.map((r) => r.body))).toContain(JSON.stringify(LINE(chart.att, '0.4 MP')).slice(1, -1));
  });
});
