/**
 * Files through the real OpenAI SDK to the fake chat completions server: images as `image_url`
 * data URLs with the kept bytes, text files as text, PDFs as their line; messages without files
 * exactly as before; a server that cannot see refuses as llama.cpp does, and that is a bad request.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/core/errors.js';
import { attachmentLine } from '../../src/core/fileTypes.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { ChatTurn } from '../../src/core/types.js';
import { OpenAiProvider, buildOpenAiParams } from '../../src/llm/OpenAiProvider.js';
import { NO_VISION_MESSAGE, startFakeOpenAi, type FakeOpenAiOptions, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { silentLogger } from '../helpers/logger.js';
import { file, jpeg, pdf, png, reader, text, turnWith } from './files.js';
import { conversation, llmConfig } from './support.js';

let fake: FakeOpenAiServer | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(opts: FakeOpenAiOptions = {}) {
  fake = await startFakeOpenAi(opts);
  const p = new OpenAiProvider({ config: llmConfig({ provider: 'openai', api_key: null, base_url: fake.url, model: 'qwen2.5-vl', max_retries: 0 }), logger: silentLogger });
  return { fake, p };
}

function req(messages: ChatTurn[], over: Partial<LlmRequest> = {}): LlmRequest {
  return { purpose: 'turn', model: 'qwen2.5-vl', system: 'You are Analyst, in the group "Market team".', messages, ...over };
}

type Part = Record<string, unknown>;
const contentOf = (f: FakeOpenAiServer, n: number, i: number) => (f.requests[n]!.body['messages'] as Array<{ content: unknown }>)[i]!.content;

const chart = file(png(400, 1), 'image/png', 'chart.png', { width: 800, height: 600 });
const photo = file(jpeg(500, 2), 'image/jpeg', 'photo.jpg');

describe('OpenAiProvider: files', () => {
  it('images arrive as image_url data URLs with the same bytes and type, each after its label, the text last', async () => {
    const { fake, p } = await setup();
    const turn = turnWith('two pictures', chart.att, photo.att);
    await p.complete(req([turn], { readFile: reader(chart, photo).readFile }));
    expect(fake.receivedImages()).toEqual([
      { path: 'messages[1].content[1]', mediaType: 'image/png', sha256: chart.att.sha256, size: chart.att.size },
      { path: 'messages[1].content[3]', mediaType: 'image/jpeg', sha256: photo.att.sha256, size: photo.att.size },
    ]);
    const parts = contentOf(fake, 0, 1) as Part[];
    expect(parts.map((x) => x['type'])).toEqual(['text', 'image_url', 'text', 'image_url', 'text']);
    expect(parts[0]).toEqual({ type: 'text', text: 'Image "chart.png" shared by Maya:\n' });
    expect(String((parts[1]!['image_url'] as Part)['url'])).toMatch(/^data:image\/png;base64,iVBORw0KGg/);
    expect(parts[4]).toEqual({ type: 'text', text: turn.content });
  });

  it('a text file is a text part with its label and content; a PDF is its line', async () => {
    const { fake, p } = await setup();
    const notes = file(text('Q3 notes\nRevenue up 12%.\n'), 'text/plain', 'notes.txt', { from: 'Ravi' });
    const report = file(pdf(), 'application/pdf', 'report.pdf');
    const turn = turnWith('notes and report', notes.att, report.att);
    await p.complete(req([turn], { readFile: reader(notes, report).readFile }));
    expect(fake.receivedImages()).toEqual([]);
    expect(contentOf(fake, 0, 1)).toEqual([
      { type: 'text', text: 'Text file "notes.txt" shared by Ravi:\nQ3 notes\nRevenue up 12%.\n\n' },
      { type: 'text', text: `PDF "report.pdf" shared by Maya (not shown: this model is not sent PDFs): ${attachmentLine(report.att)}\n\n` },
      { type: 'text', text: turn.content },
    ]);
  });

  it('a file that cannot be read goes as its line, and is read once however many turns name it', async () => {
    const { fake, p } = await setup();
    const messages: ChatTurn[] = [turnWith('first', chart.att), { role: 'assistant', content: 'ok' }, turnWith('again', chart.att)];
    await p.complete(req(messages, { readFile: async () => null }));
    expect(fake.receivedImages()).toEqual([]);
    expect((contentOf(fake, 0, 1) as Part[])[0]).toEqual({ type: 'text', text: `Image "chart.png" shared by Maya (not shown: the file could not be read): ${attachmentLine(chart.att)}\n\n` });
    const files = reader(chart);
    await p.complete(req(messages, { readFile: files.readFile }));
    expect(files.reads.get(chart.att.id)).toBe(1);
    expect(fake.receivedImages()).toHaveLength(2);
  });

  it('messages without files are plain strings, byte for byte as before', async () => {
    const { fake, p } = await setup();
    const plain = conversation(2);
    const expected = JSON.stringify({ model: 'qwen2.5-vl', max_tokens: 512, messages: [{ role: 'system', content: 'You are Analyst, in the group "Market team".' }, ...plain.map((m) => ({ role: m.role, content: m.content }))] });
    expect(JSON.stringify(buildOpenAiParams(req(plain), 512))).toBe(expected);
    // An empty list of files, or a reader, changes nothing.
    const withEmpty = plain.map((m) => (m.role === 'user' ? { ...m, attachments: [] } : m));
    expect(JSON.stringify(buildOpenAiParams(req(withEmpty, { readFile: async () => null }), 512))).toBe(expected);
    await p.complete(req(withEmpty, { readFile: reader(chart).readFile }));
    expect(JSON.stringify(fake.requests[0]!.body['messages'])).toBe(JSON.stringify(JSON.parse(expected).messages));
    // Only the turn with files has parts; the history around it stays strings.
    await p.complete(req([...plain.slice(0, -1), turnWith('a chart', chart.att)], { readFile: reader(chart).readFile }));
    const sent = fake.requests[1]!.body['messages'] as Array<{ content: unknown }>;
    expect(sent.slice(0, -1).every((m) => typeof m.content === 'string')).toBe(true);
    expect(Array.isArray(sent.at(-1)!.content)).toBe(true);
  });

  for (const status of [500, 400]) {
    it(`a server that cannot see (llama.cpp without --mmproj, ${status}) is a bad request, not retried, with a hint`, async () => {
      const { fake, p } = await setup({ noVision: status === 500 ? true : { status } });
      const err = await p.complete(req([turnWith('look', chart.att)], { readFile: reader(chart).readFile })).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(LlmError);
      expect(err).toMatchObject({ code: 'bad_request', retryable: false });
      expect((err as LlmError).message).toContain(NO_VISION_MESSAGE);
      expect((err as LlmError).message).toContain('set vision: false');
      expect(fake.requests[0]!.status).toBe(status);
      // The same server answers turns without images.
      await expect(p.complete(req(conversation(0)))).resolves.toMatchObject({ text: 'ok' });
    });
  }

  it('streams a turn with files the same way', async () => {
    const { fake, p } = await setup();
    const deltas: string[] = [];
    const r = await p.complete(req([turnWith('stream it', chart.att)], { readFile: reader(chart).readFile, onDelta: (d) => deltas.push(d) }));
    expect(r.text).toBe('ok');
    expect(fake.requests[0]!.stream).toBe(true);
    expect(fake.receivedImages().map((i) => i.sha256)).toEqual([chart.att.sha256]);
  });
});
