/**
 * A shared file belongs to the messages that carry it, whole app on the file store: a picture
 * posted on the page (multipart, the real web API), seen by Claude (the Anthropic fake, through
 * the real SDK), then deleted by the browser that sent it. Deleted, it is listed nowhere, served to
 * no one, never sent to the model again, and removed from `data_dir/files/` — unless another
 * message carries the same bytes, which keeps it (also across a restart, whose start reads the
 * whole log again). The same bytes sent under two names keep both: each message lists and
 * downloads its file under its own name.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { silentLogger } from '../helpers/logger.js';
import { samplePng, sha256 } from '../helpers/sample-files.js';

const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

const BROWSER = 'browser-key-0123456789abcdef';

function yaml(dir: string, fake: FakeAnthropicServer): string {
  return `data_dir: ${dir}
log_level: silent
llm: { provider: anthropic, api_key: sk-ant-test-files, base_url: "${fake.url}", model: claude-opus-4-5 }
agents:
  - { id: analyst, name: Analyst, persona: "You read charts." }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels: { web: { enabled: true, port: 0 } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [analyst], config: { reply_strategy: mention_only } }
`;
}

async function start(dir: string, fake: FakeAnthropicServer): Promise<App> {
  const { config } = parseConfigText(yaml(dir, fake), 'test', {});
  const app = await createApp({ config, logger: silentLogger });
  await app.start();
  return app;
}

async function fresh(): Promise<{ dir: string; fake: FakeAnthropicServer; app: App }> {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-file-life-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const fake = await startFakeAnthropic({ reply: () => ({ text: 'Seen.' }) });
  cleanup.push(() => fake.close());
  const app = await start(dir, fake);
  cleanup.push(() => app.stop());
  return { dir, fake, app };
}

/** Post text with one file, as the page does; resolves with the message's id and its attachment's. */
type Sent = { entryId: string; fileId: string };

async function postFile(app: App, text: string, bytes: Buffer, name: string): Promise<Sent> {
  const form = new FormData();
  form.set('text', text);
  form.set('author_name', 'Maya');
  form.append('file', new Blob([new Uint8Array(bytes)], { type: 'image/png' }), name);
  const headers = { 'x-chorus-client': BROWSER };
  const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', body: form, headers });
  const body = (await res.json()) as { entryId: string; attachments: Array<{ id: string }> };
  expect(res.status, JSON.stringify(body)).toBe(202);
  return { entryId: body.entryId, fileId: body.attachments[0]!.id };
}

async function postText(app: App, text: string): Promise<void> {
  const res = await fetch(`${app.webUrl}/api/groups/room/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-chorus-client': BROWSER },
    body: JSON.stringify({ text, author_name: 'Maya' }),
  });
  expect(res.status).toBe(202);
}

async function remove(app: App, entryId: string): Promise<void> {
  const headers = { 'x-chorus-client': BROWSER };
  const res = await fetch(`${app.webUrl}/api/groups/room/messages/${entryId}`, { method: 'DELETE', headers });
  expect(res.status, await res.text()).toBe(200);
}

type Listed = { id: string; deleted?: boolean; attachments?: Array<{ id: string; name: string }> };

async function listed(app: App, entryId: string): Promise<Listed> {
  const page = (await (await fetch(`${app.webUrl}/api/groups/room/messages`)).json()) as { messages: Listed[] };
  return page.messages.find((m) => m.id === entryId)!;
}

function fileGet(app: App, fileId: string, entryId?: string): Promise<Response> {
  return fetch(`${app.webUrl}/api/files/${fileId}${entryId ? `?m=${entryId}` : ''}`);
}

function onDisk(dir: string, fileId: string): boolean {
  return existsSync(join(dir, 'files', fileId.slice(0, 2), fileId));
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('a file belongs to the messages that carry it', () => {
  it('deleted with its message: not listed, 404, never sent to the model again, removed from disk', async () => {
    const { dir, fake, app } = await fresh();
    const png = samplePng(320, 200, 7, true);
    const { entryId, fileId } = await postFile(app, '@analyst what is this?', png, 'chart.png');
    await until(() => fake.receivedFiles().some((f) => f.sha256 === sha256(png)), 'the picture to reach Claude');
    const asked = fake.requests.length;
    expect(onDisk(dir, fileId)).toBe(true);

    await remove(app, entryId);
    const entry = await listed(app, entryId);
    expect(entry.deleted).toBe(true);
    expect(entry.attachments).toBeUndefined();
    expect((await fileGet(app, fileId)).status).toBe(404);
    expect((await fileGet(app, fileId, entryId)).status).toBe(404);
    await until(() => !onDisk(dir, fileId), 'the file to be removed from data_dir/files');

    // The next turn remembers the first one, but neither the picture nor its name.
    await postText(app, '@analyst and now?');
    await until(() => fake.requests.length > asked, 'the next turn');
    const next = JSON.stringify(fake.requests.at(-1)!.body);
    expect(fake.requests.slice(asked).flatMap((r) => r.files ?? [])).toEqual([]);
    expect(next).not.toContain('chart.png');
    expect(next).toContain('and now?');
  });

  it('the same bytes in another message stay, as its file, after a restart too; gone with the last one', async () => {
    const { dir, fake, app } = await fresh();
    const png = samplePng(64, 48, 9, true);
    const first = await postFile(app, 'mine', png, 'first.png');
    const second = await postFile(app, 'mine too', png, 'second.png');
    expect(second.fileId).toBe(first.fileId);

    await remove(app, first.entryId);
    await app.stop();
    const again = await start(dir, fake);
    cleanup.push(() => again.stop());
    // The restart read the whole log again: the second message still carries the file.
    const res = await fileGet(again, second.fileId, second.entryId);
    expect(res.status).toBe(200);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(png));
    expect(res.headers.get('content-disposition')).toContain('filename="second.png"');
    expect((await fileGet(again, first.fileId, first.entryId)).status).toBe(404);
    expect(onDisk(dir, first.fileId)).toBe(true);

    await remove(again, second.entryId);
    await until(() => !onDisk(dir, second.fileId), 'the file to go with its last message');
    expect((await fileGet(again, second.fileId)).status).toBe(404);
  });

  it('the same bytes as evil.html, then as cat.png: each message lists and downloads its own name', async () => {
    const { app } = await fresh();
    const png = samplePng(32, 32, 5, true);
    const evil = await postFile(app, 'one', png, 'evil.html');
    const cat = await postFile(app, 'two', png, 'cat.png');
    expect(cat.fileId).toBe(evil.fileId);
    expect((await listed(app, evil.entryId)).attachments?.[0]?.name).toBe('evil.html');
    expect((await listed(app, cat.entryId)).attachments?.[0]?.name).toBe('cat.png');
    const asCat = await fileGet(app, cat.fileId, cat.entryId);
    expect(asCat.headers.get('content-disposition')).toBe(`inline; filename="cat.png"; filename*=UTF-8''cat.png`);
    const asEvil = await fileGet(app, evil.fileId, evil.entryId);
    expect(asEvil.headers.get('content-disposition')).toContain('filename="evil.html"');
    // Without naming its message the file is nobody's: a name from its id, never a sender's.
    const bare = await fileGet(app, cat.fileId);
    expect(bare.status).toBe(200);
    expect(bare.headers.get('content-disposition')).toContain(`filename="file-${cat.fileId.slice(0, 12)}.png"`);
    // A message that does not carry the file cannot name it.
    const other = await postFile(app, 'three', samplePng(16, 16, 1, true), 'other.png');
    expect((await fileGet(app, cat.fileId, other.entryId)).status).toBe(404);
  });
});
