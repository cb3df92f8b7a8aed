/**
 * Files through the web API, with real HTTP clients against the real web channel (an in-memory
 * gateway whose files go through the real FileKeeper): messages posted as multipart forms with
 * one or several files and optional text, every refusal (too large — while it is still being
 * sent —, not a type Chorus takes, too many, empty, a store that cannot write), and the kept
 * files served back exactly, with the headers that keep a browser from running them.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../../src/channels/web/WebChannel.js';
import { contentDisposition } from '../../../src/channels/web/fileApi.js';
import { FileKeeper } from '../../../src/files/FileKeeper.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';
import { EXE, GIF, PDF, png, sha256 } from './file-fixtures.js';

const running: WebChannel[] = [];

afterEach(async () => {
  for (const w of running.splice(0)) await w.stop();
});

async function setup(opts: { token?: string; maxFileBytes?: number; maxFiles?: number } = {}): Promise<{ web: WebChannel; gw: FakeGateway; base: string }> {
  const gw = new FakeGateway();
  if (opts.maxFileBytes !== undefined || opts.maxFiles !== undefined) {
    // The limits of `limits.max_file_bytes` / `max_files_per_message`, set for this gateway.
    Object.assign(gw, { files: new FileKeeper(gw.fileStore, { max_file_bytes: opts.maxFileBytes, max_files_per_message: opts.maxFiles }) });
  }
  gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
  gw.addGroup({ id: 'tg-1', title: 'Telegram chat', channel: 'telegram', chatId: '-100123', participants: ['analyst'] });
  const web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: opts.token ?? null }, logger: silentLogger, agents: TEST_AGENTS });
  running.push(web);
  await web.start(gw);
  return { web, gw, base: web.url! };
}

type Part = string | { name: string; bytes: Uint8Array; type?: string; field?: string };

function form(parts: Record<string, Part | Part[]>): FormData {
  const fd = new FormData();
  for (const [key, value] of Object.entries(parts)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v === 'string') fd.append(key, v);
      else fd.append(v.field ?? key, new Blob([v.bytes as Uint8Array<ArrayBuffer>], { type: v.type ?? 'application/octet-stream' }), v.name);
    }
  }
  return fd;
}

async function post(base: string, body: FormData, headers: Record<string, string> = {}, group = 'lobby') {
  const res = await fetch(`${base}/api/groups/${group}/messages`, { method: 'POST', body, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: JSON.parse(text) as any };
}

const IMAGE = png(40, 30);

describe('posting files with a message', () => {
  it('one file with text: 202 names the kept file, and the recorded entry carries it with the fields honoured', async () => {
    const { gw, base } = await setup();
    const first = await post(base, form({ text: 'hello', author_name: 'Maya' }));
    expect(first.status).toBe(202);
    const r = await post(base, form({ text: 'the chart', author_name: 'Maya', client_id: 'c-123', reply_to: first.json.entryId, file: { name: 'chart.png', bytes: IMAGE, type: 'image/png' } }), { 'x-chorus-client': 'browser-key-0123456789abcdef' });
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    expect(r.json.status).toBe('recorded');
    expect(r.json.attachments).toEqual([{ id: sha256(IMAGE), sha256: sha256(IMAGE), name: 'chart.png', type: 'image/png', size: IMAGE.length, ...(r.json.attachments[0].width ? { width: 40, height: 30 } : {}) }]);
    const msg = gw.received.at(-1)!;
    expect(msg).toMatchObject({ text: 'the chart', author: { name: 'Maya' }, messageId: 'c-123', replyToEntryId: first.json.entryId });
    expect(msg.clientTag).toBeTruthy();
    expect(msg.attachments).toEqual(r.json.attachments);
    // The entry as the page reads it.
    const page = (await (await fetch(`${base}/api/groups/lobby/messages`)).json()) as any;
    const entry = page.messages.find((e: any) => e.id === r.json.entryId);
    expect(entry.attachments).toEqual(r.json.attachments);
    // The same client_id again is the same message, whatever is sent with it.
    const again = await post(base, form({ text: 'the chart', author_name: 'Maya', client_id: 'c-123', file: { name: 'chart.png', bytes: IMAGE } }));
    expect(again.status).toBe(202);
    expect(again.json.status).toBe('duplicate');
  });

  it('several files and no text: each kept, in the order sent, under its own name', async () => {
    const { gw, base } = await setup();
    const other = png(8, 8, { rgb: [200, 10, 10] });
    const r = await post(base, form({ author_name: 'Maya', file: [{ name: 'a.png', bytes: IMAGE }, { name: 'Grüße 🌅.gif', bytes: GIF }, { name: 'report.pdf', bytes: PDF }, { name: 'b.png', bytes: other }] }));
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    expect(r.json.attachments.map((a: any) => [a.name, a.type, a.size])).toEqual([
      ['a.png', 'image/png', IMAGE.length],
      ['Grüße 🌅.gif', 'image/gif', GIF.length],
      ['report.pdf', 'application/pdf', PDF.length],
      ['b.png', 'image/png', other.length],
    ]);
    expect(gw.received.at(-1)!.text).toBe('');
    expect(gw.received.at(-1)!.attachments).toHaveLength(4);
  });

  it('a form without text and without files is refused like an empty message', async () => {
    const { gw, base } = await setup();
    const r = await post(base, form({ author_name: 'Maya' }));
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_field');
    // An empty file input (no file chosen) is no file.
    const fd = form({ text: '  ' });
    fd.append('file', new Blob([]), '');
    expect((await post(base, fd)).status).toBe(400);
    expect(gw.received).toHaveLength(0);
  });

  it('a Windows program named .png is refused with 415, and nothing is recorded or kept', async () => {
    const { gw, base } = await setup();
    const r = await post(base, form({ text: 'look', file: { name: 'cute-cat.png', bytes: EXE, type: 'image/png' } }));
    expect(r.status).toBe(415);
    expect(r.json.error.code).toBe('unsupported_type');
    expect(r.json.error.file).toBe('cute-cat.png');
    expect(r.json.error.message).toMatch(/cute-cat\.png/);
    expect(gw.received).toHaveLength(0);
    expect(await gw.files.read(sha256(EXE))).toBeNull();
  });

  it('too many files: 413 too_many_files, nothing recorded', async () => {
    const { gw, base } = await setup({ maxFiles: 2 });
    const r = await post(base, form({ text: 'three', file: [{ name: 'a.png', bytes: IMAGE }, { name: 'b.gif', bytes: GIF }, { name: 'c.pdf', bytes: PDF }] }));
    expect(r.status).toBe(413);
    expect(r.json.error).toMatchObject({ code: 'too_many_files', limit: 2 });
    expect(r.json.error.message).toMatch(/at most 2 files/);
    expect(gw.received).toHaveLength(0);
  });

  it('a server that takes no files says so', async () => {
    const { gw, base } = await setup({ maxFiles: 0 });
    const r = await post(base, form({ text: 'x', file: { name: 'a.png', bytes: IMAGE } }));
    expect(r.status).toBe(413);
    expect(r.json.error).toMatchObject({ code: 'too_many_files', message: 'this server takes no files' });
    expect(gw.received).toHaveLength(0);
  });

  it('an empty file: 400 empty_file', async () => {
    const { gw, base } = await setup();
    const r = await post(base, form({ text: 'nothing', file: { name: 'empty.png', bytes: new Uint8Array(0) } }));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'empty_file', file: 'empty.png' });
    expect(gw.received).toHaveLength(0);
  });

  it('a file over the limit: 413 naming the file and the limit, answered while the client is still sending', async () => {
    const { gw, base } = await setup({ maxFileBytes: 64 * 1024 });
    const url = new URL(`${base}/api/groups/lobby/messages`);
    const boundary = 'chorus-test-boundary';
    const head = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="text"\r\n\r\nbig one\r\n` +
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="huge.png"\r\ncontent-type: image/png\r\n\r\n`,
    );
    // A length announced past what a message may carry is refused before a byte is read.
    const announced = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(50 * 1024 * 1024) } });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.write(head);
    });
    expect(announced.status).toBe(413);
    expect(JSON.parse(announced.body).error.code).toBe('payload_too_large');
    // Sent in chunks without a length, 40 MB offered a chunk at a time: the answer comes long before the end.
    const total = 40 * 1024 * 1024;
    const answer = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
      let sent = 0;
      const req = request(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body, sent }));
      });
      req.on('error', (err) => (sent > 0 ? undefined : reject(err)));
      req.write(head);
      const piece = Buffer.concat([IMAGE, Buffer.alloc(64 * 1024 - IMAGE.length, 7)]);
      const pump = () => {
        while (sent < total && !req.destroyed) {
          sent += piece.length;
          if (!req.write(piece)) {
            req.once('drain', () => setTimeout(pump, 5));
            return;
          }
        }
      };
      pump();
    });
    expect(answer.status).toBe(413);
    const error = JSON.parse(answer.body).error;
    expect(error).toMatchObject({ code: 'file_too_large', file: 'huge.png', limit: 64 * 1024 });
    expect(error.message).toMatch(/huge\.png.*64 KB/);
    expect(answer.sent).toBeLessThan(total / 2);
    expect(gw.received).toHaveLength(0);
  });

  it('a 10 MB file goes through (the default limit), kept byte for byte', async () => {
    const { gw, base } = await setup();
    const big = png(1860, 1860, { noise: true });
    expect(big.length).toBeGreaterThan(10_000_000);
    expect(big.length).toBeLessThanOrEqual(10 * 1024 * 1024);
    const r = await post(base, form({ text: 'the big one', file: { name: 'big.png', bytes: big } }));
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    expect(r.json.attachments[0].size).toBe(big.length);
    const back = Buffer.from(await (await fetch(`${base}/api/files/${r.json.attachments[0].id}`)).arrayBuffer());
    expect(sha256(back)).toBe(sha256(big));
    expect(gw.received).toHaveLength(1);
  }, 60_000);

  it('a store that cannot write: 503, nothing acknowledged or handed over', async () => {
    const { gw, base } = await setup();
    gw.fileStore.failWrites = 'disk full';
    const r = await post(base, form({ text: 'x', file: { name: 'a.png', bytes: IMAGE } }));
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(gw.received).toHaveLength(0);
  });

  it('refuses malformed forms, parts it does not know, fields sent twice and other content types; read-only groups stay read-only', async () => {
    const { gw, base } = await setup();
    const twice = form({ text: ['a', 'b'] });
    expect((await post(base, twice)).json.error.code).toBe('invalid_field');
    const stray = form({ text: 'x', photo: { name: 'a.png', bytes: IMAGE } });
    const r = await post(base, stray);
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/"photo"/);
    const broken = await fetch(`${base}/api/groups/lobby/messages`, { method: 'POST', headers: { 'content-type': 'multipart/form-data' }, body: 'no boundary' });
    expect(broken.status).toBe(400);
    const xml = await fetch(`${base}/api/groups/lobby/messages`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: '<m/>' });
    expect(xml.status).toBe(415);
    expect((await post(base, form({ text: 'x', file: { name: 'a.png', bytes: IMAGE } }), {}, 'tg-1')).status).toBe(403);
    // JSON is as it was.
    const json = await fetch(`${base}/api/groups/lobby/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'plain' }) });
    expect(json.status).toBe(202);
    expect(gw.received.map((m) => m.text)).toEqual(['plain']);
  });

  it('/api/agents tells the page the file limits', async () => {
    const { base } = await setup({ maxFileBytes: 5000, maxFiles: 3 });
    const body = (await (await fetch(`${base}/api/agents`)).json()) as any;
    expect(body.limits).toMatchObject({ max_file_bytes: 5000, max_files_per_message: 3 });
  });
});

describe('GET /api/files/:id', () => {
  /** The kept file's id, and the message that carries it (`?m=` asks for the file as that message's). */
  type Sent = { id: string; entryId: string };
  async function sent(base: string, name: string, bytes: Uint8Array, headers: Record<string, string> = {}) {
    const r = await post(base, form({ text: 'f', file: { name, bytes } }), headers);
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    return { id: r.json.attachments[0].id, entryId: r.json.entryId } as Sent;
  }
  async function upload(base: string, name: string, bytes: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
    return (await sent(base, name, bytes, headers)).id;
  }

  it('serves the exact bytes with the stored type, nosniff, its name, a sandbox and long private caching', async () => {
    const { base } = await setup();
    const { id, entryId } = await sent(base, 'Schöne "Grüße".png', IMAGE);
    const res = await fetch(`${base}/api/files/${id}?m=${entryId}`);
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(sha256(bytes)).toBe(id);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('content-length')).toBe(String(IMAGE.length));
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(res.headers.get('content-disposition')).toBe(`inline; filename="Sch_ne Gr__e.png"; filename*=UTF-8''Sch%C3%B6ne%20Gr%C3%BC%C3%9Fe.png`);
    expect(res.headers.get('cache-control')).toMatch(/private.*immutable/);
    const etag = res.headers.get('etag')!;
    expect(etag).toBe(`"${id}"`);
    const again = await fetch(`${base}/api/files/${id}`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    const head = await fetch(`${base}/api/files/${id}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(IMAGE.length));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it('a PDF is a download, never shown in place', async () => {
    const { base } = await setup();
    const { id, entryId } = await sent(base, 'report.pdf', PDF);
    const res = await fetch(`${base}/api/files/${id}?m=${entryId}`);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="report\.pdf"/);
    // Asked for without its message: a name made from the id, never a sender's.
    const bare = await fetch(`${base}/api/files/${id}`);
    const neutral = new RegExp(`^attachment; filename="file-${id.slice(0, 12)}\\.pdf"`);
    expect(bare.headers.get('content-disposition')).toMatch(neutral);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(PDF));
  });

  it('404 for an unknown id, 400 for a malformed one', async () => {
    const { base } = await setup();
    const unknown = await fetch(`${base}/api/files/${'0'.repeat(64)}`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error.code).toBe('unknown_file');
    for (const bad of ['abc', 'A'.repeat(64), '..%2Fsecret', 'g'.repeat(64)]) {
      const res = await fetch(`${base}/api/files/${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as any).error.code).toBe('invalid_file_id');
    }
  });

  it('with a token: 401 without it, served with the Bearer header or ?token=; posting needs it too', async () => {
    const { gw, base } = await setup({ token: 's3cret' });
    expect((await post(base, form({ text: 'x', file: { name: 'a.png', bytes: IMAGE } }))).status).toBe(401);
    expect(gw.received).toHaveLength(0);
    const id = await upload(base, 'a.png', IMAGE, { authorization: 'Bearer s3cret' });
    expect((await fetch(`${base}/api/files/${id}`)).status).toBe(401);
    expect((await fetch(`${base}/api/files/${id}?token=wrong`)).status).toBe(401);
    expect((await fetch(`${base}/api/files/${id}`, { headers: { authorization: 'Bearer s3cret' } })).status).toBe(200);
    const viaQuery = await fetch(`${base}/api/files/${id}?token=s3cret`);
    expect(viaQuery.status).toBe(200);
    expect(sha256(Buffer.from(await viaQuery.arrayBuffer()))).toBe(id);
    // Only files and streams take the token in the URL.
    expect((await fetch(`${base}/api/groups?token=s3cret`)).status).toBe(401);
  });
});

describe('Content-Disposition', () => {
  it('quotes the ASCII stand-in and percent-encodes the exact name so no name can add a parameter', () => {
    expect(contentDisposition('attachment', 'plain.txt')).toBe(`attachment; filename="plain.txt"; filename*=UTF-8''plain.txt`);
    expect(contentDisposition('inline', 'a";b=c\\.png')).toBe(`inline; filename="a_;b=c_.png"; filename*=UTF-8''a%22%3Bb%3Dc%5C.png`);
    expect(contentDisposition('inline', "it's (1)*.png")).toBe(`inline; filename="it's (1)*.png"; filename*=UTF-8''it%27s%20%281%29%2A.png`);
    expect(contentDisposition('inline', '日本')).toBe(`inline; filename="__"; filename*=UTF-8''%E6%97%A5%E6%9C%AC`);
  });
});
