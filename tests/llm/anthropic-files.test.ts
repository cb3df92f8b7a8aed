/**
 * Files through the real Anthropic SDK to the fake Messages API: what arrives is the bytes that
 * were kept, in the block the API expects, after a label; the history with files stays in the
 * cached prefix; a file that cannot be sent goes as its line.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import { attachmentLine } from '../../src/core/fileTypes.js';
import type { ChatTurn } from '../../src/core/types.js';
import { AnthropicProvider, buildAnthropicParams } from '../../src/llm/AnthropicProvider.js';
import { MANY_IMAGES, REQUEST_FILES_MAX_BASE64, planAnthropicFiles } from '../../src/llm/anthropicFiles.js';
import { ManualClock, startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { silentLogger } from '../helpers/logger.js';
import { file, jpeg, pdf, png, reader, text, turnWith } from './files.js';
import { TEST_KEY, TEST_MODEL, conversation, llmConfig, request } from './support.js';

let fake: FakeAnthropicServer;

beforeEach(async () => {
  fake = await startFakeAnthropic({ now: new ManualClock().now, apiKey: TEST_KEY });
});
afterEach(async () => {
  await fake.close();
});

function provider() {
  return new AnthropicProvider({ config: llmConfig({ base_url: fake.url, max_retries: 0 }), logger: silentLogger });
}

type Block = Record<string, unknown>;
const blocksOf = (n: number, i: number) => (fake.messages()[n]!.body['messages'] as Array<{ content: Block[] }>)[i]!.content;
const withoutMarkers = (blocks: Block[]) => blocks.map(({ cache_control: _c, ...b }) => b);
/** Every `cache_control` marker of a logged request, as paths. */
const markers = (n: number) =>
  (fake.messages()[n]!.body['messages'] as Array<{ content: Block[] }>).flatMap((m, i) => m.content.flatMap((b, j) => (b['cache_control'] ? [`messages[${i}].content[${j}]`] : [])));

const chart = file(png(400, 1), 'image/png', 'chart.png', { width: 800, height: 600 });

describe('AnthropicProvider: files', () => {
  it('an image on the user turn arrives as an image block with the same bytes and type, after its label and before the text', async () => {
    const files = reader(chart);
    const turn = turnWith('what do you make of this?', chart.att);
    await provider().complete(request({ messages: [turn], readFile: files.readFile }));
    const [got] = fake.receivedFiles();
    expect(got).toMatchObject({ kind: 'image', mediaType: 'image/png', sha256: chart.att.sha256, size: chart.att.size, path: 'messages[0].content[1]' });
    const blocks = blocksOf(0, 0);
    expect(blocks.map((b) => b['type'])).toEqual(['text', 'image', 'text']);
    expect(blocks[0]).toEqual({ type: 'text', text: 'Image "chart.png" shared by Maya:' });
    expect(blocks[2]!['text']).toBe(turn.content);
    // The breakpoint is on the last block of the message, the turn's text.
    expect(markers(0)).toEqual(['messages[0].content[2]']);
  });

  it('a PDF arrives as a base64 document block, a text file as a plain-text document', async () => {
    const report = file(pdf(), 'application/pdf', 'report.pdf');
    const notes = file(text('Q3 notes\nRevenue up 12%.\n'), 'text/plain', 'notes.txt', { from: 'Ravi' });
    const files = reader(report, notes);
    await provider().complete(request({ messages: [turnWith('both attached', report.att, notes.att)], readFile: files.readFile }));
    expect(fake.receivedFiles()).toEqual([
      { path: 'messages[0].content[1]', kind: 'document', mediaType: 'application/pdf', sha256: report.att.sha256, size: report.att.size, title: 'report.pdf' },
      { path: 'messages[0].content[3]', kind: 'document', mediaType: 'text/plain', sha256: notes.att.sha256, size: notes.att.size, text: 'Q3 notes\nRevenue up 12%.\n', title: 'notes.txt' },
    ]);
    const labels = blocksOf(0, 0).filter((b, j) => j % 2 === 0 && j < 4).map((b) => b['text']);
    expect(labels).toEqual(['PDF "report.pdf" shared by Maya:', 'Text file "notes.txt" shared by Ravi:']);
  });

  it('a file that cannot be read goes as its line: no block, the words unchanged', async () => {
    const p = provider();
    const turn = turnWith('see the chart', chart.att);
    await p.complete(request({ messages: [turn], readFile: async () => null }));
    await p.complete(request({ messages: [turn] })); // no reader at all
    await p.complete(request({ messages: [turn], readFile: async () => Promise.reject(new Error('disk gone')) }));
    expect(fake.receivedFiles()).toEqual([]);
    for (const n of [0, 1, 2]) {
      const blocks = blocksOf(n, 0);
      expect(blocks.map((b) => b['type'])).toEqual(['text', 'text']);
      expect(blocks[0]!['text']).toBe(`Image "chart.png" shared by Maya (not shown: the file could not be read): ${attachmentLine(chart.att)}`);
      expect(blocks[1]!['text']).toBe(turn.content);
    }
  });

  it('reads each file once per request, however many turns name it', async () => {
    const files = reader(chart);
    const messages: ChatTurn[] = [turnWith('first', chart.att), { role: 'assistant', content: 'nice' }, turnWith('again', chart.att)];
    await provider().complete(request({ messages, readFile: files.readFile }));
    expect(files.reads.get(chart.att.id)).toBe(1);
    expect(fake.receivedFiles().map((f) => f.sha256)).toEqual([chart.att.sha256, chart.att.sha256]);
  });

  it('a history turn with an image is sent identically on the next turns and read from cache', async () => {
    const p = provider();
    const files = reader(chart);
    const turn1: ChatTurn[] = [turnWith('look at this chart', chart.att)];
    const r1 = await p.complete(request({ messages: turn1, readFile: files.readFile }));
    expect(r1.usage.cacheWriteTokens).toBeGreaterThan(1500);

    const turn2: ChatTurn[] = [...turn1, { role: 'assistant', content: r1.text }, { role: 'user', content: 'and the trend?' }];
    const r2 = await p.complete(request({ messages: turn2, readFile: files.readFile }));
    expect(JSON.stringify(withoutMarkers(blocksOf(1, 0)))).toBe(JSON.stringify(withoutMarkers(blocksOf(0, 0))));
    expect(r2.usage.cacheReadTokens).toBe(r1.usage.cacheWriteTokens);

    const turn3: ChatTurn[] = [...turn2, { role: 'assistant', content: r2.text }, { role: 'user', content: 'thanks' }];
    const r3 = await p.complete(request({ messages: turn3, readFile: files.readFile }));
    expect(JSON.stringify(blocksOf(2, 0))).toBe(JSON.stringify(blocksOf(1, 0)));
    expect(r3.usage.cacheReadTokens).toBe(r2.usage.cacheReadTokens + r2.usage.cacheWriteTokens);
  });

  it('a newest turn with many files puts a breakpoint on the history before it, which still reads the previous turn', async () => {
    const p = provider();
    const many = Array.from({ length: 10 }, (_, i) => file(png(120, 100 + i), 'image/png', `shot-${i}.png`));
    const files = reader(...many);
    const turn1 = conversation(0);
    const r1 = await p.complete(request({ messages: turn1 }));
    // 10 files: 21 blocks after the previous turn's entry, past the API's lookback of 20.
    const turn2: ChatTurn[] = [...turn1, { role: 'assistant', content: r1.text }, turnWith('ten screenshots', ...many.map((f) => f.att))];
    const r2 = await p.complete(request({ messages: turn2, readFile: files.readFile }));
    expect(markers(1)).toEqual(['messages[1].content[0]', 'messages[2].content[20]']);
    expect(r2.usage.cacheReadTokens).toBe(r1.usage.cacheWriteTokens);
    // A short newest turn needs none: breakpoint 3's lookback reaches the previous entry.
    const turn3: ChatTurn[] = [...turn2, { role: 'assistant', content: r2.text }, turnWith('one more', chart.att)];
    const r3 = await p.complete(request({ messages: turn3, readFile: reader(...many, chart).readFile }));
    expect(markers(2)).toEqual(['messages[4].content[2]']);
    expect(r3.usage.cacheReadTokens).toBe(r2.usage.cacheReadTokens + r2.usage.cacheWriteTokens);
  });

  it('an image over the API’s 5 MB goes as its line instead of failing every turn', async () => {
    const big = file(png(4_000_000, 7), 'image/png', 'photo.png', { width: 4000, height: 3000 });
    await provider().complete(request({ messages: [turnWith('my photo', big.att)], readFile: reader(big).readFile }));
    expect(fake.receivedFiles()).toEqual([]);
    expect(blocksOf(0, 0)[0]!['text']).toBe(`Image "photo.png" shared by Maya (not shown: over the 5 MB the model takes for an image): ${attachmentLine(big.att)}`);
  });

  it('a file the API refuses is the usual LlmError: a bad request, not retried', async () => {
    // Bytes that are not the type the attachment claims: the API checks, and refuses the request.
    const wrong = file(jpeg(), 'image/png', 'wrong.png');
    const err = await provider()
      .complete(request({ messages: [turnWith('odd one', wrong.att)], readFile: reader(wrong).readFile }))
      .then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect(err).toMatchObject({ code: 'bad_request', retryable: false });
    expect((err as LlmError).message).toContain('Image does not match the provided media type image/png');
  });
});

describe('fake Anthropic: file checks as the API makes them', () => {
  const client = () => new Anthropic({ apiKey: TEST_KEY, baseURL: fake.url, maxRetries: 0 });
  const send = (block: Anthropic.ContentBlockParam) =>
    client().messages.create({ model: TEST_MODEL, max_tokens: 10, messages: [{ role: 'user', content: [block, { type: 'text', text: 'hi' }] }] });
  const image = (media_type: 'image/png' | 'image/jpeg', data: string): Anthropic.ImageBlockParam => ({ type: 'image', source: { type: 'base64', media_type, data } });

  it('refuses a media type that does not match, data that is not base64, and an image over 5 MB', async () => {
    const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
    await expect(send(image('image/jpeg', b64(png())))).rejects.toMatchObject({ status: 400, type: 'invalid_request_error' });
    await expect(send(image('image/png', 'not base64!'))).rejects.toMatchObject({ status: 400 });
    const over = await send(image('image/png', b64(png(4_000_000)))).catch((e: unknown) => e);
    expect(over).toMatchObject({ status: 400 });
    expect(String((over as Error).message)).toMatch(/image exceeds 5 MB maximum: \d+ bytes > 5242880 bytes/);
    await expect(send(image('image/png', b64(png())))).resolves.toBeTruthy();
    expect(fake.receivedFiles()).toHaveLength(1);
  });
});

describe('planAnthropicFiles: the API’s limits on files', () => {
  it('with more than 20 images, one over 2000 pixels a side goes as its line', () => {
    const shots = Array.from({ length: MANY_IMAGES + 1 }, (_, i) => file(png(50, i), 'image/png', `s${i}.png`, { width: 1000, height: 800 }));
    const wide = file(png(50, 99), 'image/png', 'wide.png', { width: 3000, height: 1000 });
    const turns = [turnWith('lots', ...shots.map((s) => s.att), wide.att)];
    const files = new Map([...shots, wide].map((f) => [f.att.id, f.stored]));
    const plan = planAnthropicFiles(turns, files)[0]!;
    expect(plan.slice(0, -1).every((why) => why === null)).toBe(true);
    expect(plan.at(-1)).toMatch(/2000 pixels/);
    // With 20 images or fewer, the same image is sent.
    expect(planAnthropicFiles([turnWith('few', wide.att)], files)[0]).toEqual([null]);
  });

  it('past the request’s byte budget the oldest files go as their lines, the newest are kept', () => {
    const bytes = png(3_700_000, 5);
    const each = Math.ceil(bytes.length / 3) * 4;
    const count = Math.floor(REQUEST_FILES_MAX_BASE64 / each) + 1;
    const photos = Array.from({ length: count }, (_, i) => ({ att: { ...file(bytes, 'image/png', `p${i}.png`).att, id: `id${i}` } }));
    const files = new Map(photos.map((p) => [p.att.id, { meta: p.att, bytes }]));
    const turns: ChatTurn[] = photos.flatMap((p, i) => [turnWith(`photo ${i}`, p.att), { role: 'assistant' as const, content: 'ok' }]).slice(0, -1);
    const plan = planAnthropicFiles(turns, files);
    expect(plan[0]).toEqual(['too large to send with the other files']);
    expect(plan.slice(1).flat().every((why) => why === null)).toBe(true);
    // The same request built: the oldest photo is its line, every other one an image.
    const params = buildAnthropicParams(request({ messages: turns }), 100, files);
    const images = params.messages.flatMap((m) => (m.content as Anthropic.ContentBlockParam[]).filter((b) => b.type === 'image'));
    expect(images).toHaveLength(count - 1);
  });
});
