/**
 * A picture from the page to the model, whole app: a multipart POST to the web API, the file kept
 * in the file store, the group's agents asked, and the fake model servers decode what they got.
 * Claude (Anthropic fake) and a llava-style OpenAI-compatible model that is said to see both
 * receive the exact bytes that were posted (sha256); an agent whose model cannot see reads only
 * the line `[image: chart.png, 640×480, …]`. A 30000×30000 PNG of some 110 KB is refused with 413
 * naming the limit (`limits.max_image_pixels`), and neither model is ever sent an image.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { blankPng } from '../files/images.js';
import { silentLogger } from '../helpers/logger.js';
import { samplePng, sha256 } from '../helpers/sample-files.js';

const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function start(yaml: string): Promise<App> {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-vision-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const { config } = parseConfigText(`data_dir: ${dir}\nlog_level: silent\n${yaml}`, 'test', {});
  const app = await createApp({ config, logger: silentLogger });
  await app.start();
  cleanup.push(() => app.stop());
  return app;
}

async function postPicture(app: App, text: string, png: Buffer): Promise<void> {
  const form = new FormData();
  form.set('text', text);
  form.set('author_name', 'Maya');
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'chart.png');
  const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', body: form });
  expect(res.status).toBe(202);
}

async function until<T>(get: () => T | undefined, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('a picture posted on the page reaches the models that can see', () => {
  it('Claude gets the same bytes as an image block', async () => {
    const fake: FakeAnthropicServer = await startFakeAnthropic({ reply: () => ({ text: 'A rising line.' }) });
    cleanup.push(() => fake.close());
    const app = await start(`llm: { provider: anthropic, api_key: sk-ant-test-vision, base_url: "${fake.url}", model: claude-opus-4-5 }
agents:
  - { id: analyst, name: Analyst, persona: "You read charts." }
channels: { web: { enabled: true, port: 0 } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [analyst] }
`);
    const png = samplePng(640, 480, 3, true);
    await postPicture(app, '@analyst what does this show?', png);
    const got = await until(() => fake.receivedFiles().find((f) => f.kind === 'image'), 'the image to reach the model');
    expect(got).toMatchObject({ mediaType: 'image/png', sha256: sha256(png) });
  });

  it('a llava-style model marked vision: true gets an image_url; one without vision reads the line', async () => {
    const seen: string[] = [];
    const fake: FakeOpenAiServer = await startFakeOpenAi({
      reply: (req) => {
        const msgs = req.body['messages'] as Array<{ role: string; content: unknown }>;
        seen.push(JSON.stringify(msgs.at(-1)?.content));
        return { text: 'ok' };
      },
    });
    cleanup.push(() => fake.close());
    const app = await start(`llm: { provider: openai, api_key: sk-local, base_url: "${fake.url}", model: llava }
agents:
  - { id: looker, name: Looker, persona: "You read charts.", vision: true }
  - { id: reader, name: Reader, persona: "You read words." }
channels: { web: { enabled: true, port: 0 } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [looker, reader] }
`);
    const png = samplePng(640, 480, 4, true);
    await postPicture(app, '@looker @reader look', png);
    const got = await until(() => fake.receivedImages()[0], 'the image to reach the model');
    expect(got.sha256).toBe(sha256(png));
    const lineOnly = await until(() => seen.find((c) => c.includes('[image: chart.png, 640\u00d7480') && !c.includes('image_url')), "the reader's turn");
    expect(lineOnly).not.toContain('base64');
  });
});

describe('an image of too many pixels posted on the page never reaches a model', () => {
  const providers = [
    ['Claude', 'anthropic', 'claude-opus-4-5', ''],
    ['a vision model on an OpenAI-compatible server', 'openai', 'qwen2.5-vl', ', vision: true'],
  ] as const;
  for (const [label, provider, model, vision] of providers) {
    it(`${label}: a 30000×30000 PNG is answered 413 naming the limit; the agent is asked with no image`, async () => {
      // What the model server was asked, and the images it was sent.
      let asked: () => number;
      let images: () => unknown[];
      let url: string;
      if (provider === 'anthropic') {
        const fake = await startFakeAnthropic({ reply: () => ({ text: 'Nothing to see.' }) });
        cleanup.push(() => fake.close());
        [url, asked, images] = [fake.url, () => fake.messages().length, () => fake.receivedFiles()];
      } else {
        const fake = await startFakeOpenAi({ reply: () => ({ text: 'Nothing to see.' }) });
        cleanup.push(() => fake.close());
        [url, asked, images] = [fake.url, () => fake.requests.length, () => fake.receivedImages()];
      }
      const llm = `{ provider: ${provider}, api_key: sk-test-pixels, base_url: "${url}", model: ${model} }`;
      const app = await start(`llm: ${llm}
agents:
  - { id: looker, name: Looker, persona: "You read charts."${vision} }
channels: { web: { enabled: true, port: 0 } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [looker] }
`);
      const form = new FormData();
      form.set('text', '@looker what is this?');
      form.set('author_name', 'Maya');
      const bomb = new Blob([new Uint8Array(blankPng(30000, 30000))], { type: 'image/png' });
      form.append('file', bomb, 'huge.png');
      const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', body: form });
      expect(res.status).toBe(413);
      const { error } = (await res.json()) as { error: Record<string, unknown> };
      const message = 'huge.png is 30000×30000 pixels (900 MP); the limit is 40 MP';
      expect(error).toEqual({ code: 'image_too_large', message, file: 'huge.png', limit: 40_000_000 });

      const text = await fetch(`${app.webUrl}/api/groups/room/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: '@looker still there?', author_name: 'Maya' }),
      });
      expect(text.status).toBe(202);
      await until(() => (asked() > 0 ? true : undefined), 'the agent to be asked');
      expect(images()).toEqual([]);
    });
  }
});
