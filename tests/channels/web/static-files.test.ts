/**
 * How the page's files are served: index.html asked for on every load (`no-cache`, 304 while its
 * ETag holds) and pointing at content-hashed names, which browsers keep for a year; every text
 * file brotli-compressed for browsers that take it, gzip for those that only take gzip, as it is
 * for the rest; the old per-file names and node_modules routes are gone with the bundle.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptedEncodings, StaticFiles } from '../../../src/channels/web/static.js';
import { WebChannel } from '../../../src/channels/web/WebChannel.js';
import { silentLogger } from '../../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from './fake-gateway.js';

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A GET with exactly these headers (fetch would add its own Accept-Encoding and decode). */
function get(base: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const IMMUTABLE = 'public, max-age=31536000, immutable';

describe('static files', () => {
  let web: WebChannel;
  let base: string;
  let html: string;
  /** The names index.html refers to: script, style sheet, icon, preloaded chunks. */
  let refs: string[];

  beforeAll(async () => {
    web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS, aliases: {} });
    await web.start(new FakeGateway());
    base = web.url!;
    html = (await get(base, '/')).body.toString('utf8');
    refs = [...html.matchAll(/\s(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
  });

  afterAll(async () => {
    await web?.stop();
  });

  it('index.html is always revalidated, answers 304 to its ETag, and names hashed files', async () => {
    for (const path of ['/', '/index.html']) {
      const page = await get(base, path);
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/text\/html/);
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(page.headers['content-encoding']).toBeUndefined();
      const again = await get(base, path, { 'if-none-match': page.headers.etag! });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers.etag).toBe(page.headers.etag);
      expect(again.headers['cache-control']).toBe('no-cache');
    }
    expect(refs.map((r) => r.replace(/\.[A-Za-z0-9]{8,10}\./, '.HASH.')).sort()).toEqual(expect.arrayContaining(['/app.HASH.css', '/app.HASH.js', '/favicon.HASH.svg']));
    expect(refs.every((r) => /^\/[\w-]+\.[A-Za-z0-9]{8,10}\.(js|css|svg)$/.test(r))).toBe(true);
    // The built page keeps to the CSP: scripts only from files, none inline.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    // A changed page is a new ETag: the compressed page has its own.
    const br = await get(base, '/', { 'accept-encoding': 'br' });
    expect(br.headers.etag).not.toBe((await get(base, '/')).headers.etag);
    expect((await get(base, '/', { 'accept-encoding': 'br', 'if-none-match': br.headers.etag! })).status).toBe(304);
  });

  it('hashed files are cached for a year and sent brotli-, gzip- or un-compressed as accepted', async () => {
    for (const ref of refs) {
      const plain = await get(base, ref);
      expect(plain.status, ref).toBe(200);
      expect(plain.headers['cache-control'], ref).toBe(IMMUTABLE);
      expect(plain.headers['content-encoding'], ref).toBeUndefined();
      expect(Number(plain.headers['content-length'])).toBe(plain.body.length);

      const br = await get(base, ref, { 'accept-encoding': 'gzip, deflate, br' });
      expect(br.headers['content-encoding'], ref).toBe('br');
      expect(br.headers.vary, ref).toBe('accept-encoding');
      expect(br.headers['cache-control'], ref).toBe(IMMUTABLE);
      expect(br.headers['content-type']).toBe(plain.headers['content-type']);
      expect(br.body.length).toBeLessThan(plain.body.length);
      expect(brotliDecompressSync(br.body).equals(plain.body), ref).toBe(true);

      const gz = await get(base, ref, { 'accept-encoding': 'gzip' });
      expect(gz.headers['content-encoding'], ref).toBe('gzip');
      expect(gunzipSync(gz.body).equals(plain.body), ref).toBe(true);

      // Refused codings are not sent, however the header words it.
      expect((await get(base, ref, { 'accept-encoding': 'br;q=0, gzip;q=0.5' })).headers['content-encoding']).toBe('gzip');
      expect((await get(base, ref, { 'accept-encoding': 'identity' })).headers['content-encoding']).toBeUndefined();
    }
    // HEAD: the same headers, no body.
    const js = refs.find((r) => r.endsWith('.js'))!;
    const head = await get(base, js, { 'accept-encoding': 'br' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBe('br');
    expect(head.body.length).toBe(0);
  });

  it('the page is one script with its libraries; code colouring is split off, loaded on demand', async () => {
    const js = refs.filter((r) => r.endsWith('.js'));
    const script = refs.find((r) => /^\/app\.\w+\.js$/.test(r))!;
    const first = Buffer.concat(await Promise.all(js.map(async (r) => (await get(base, r)).body))).toString('utf8');
    // marked and DOMPurify are inside; highlight.js is not.
    expect(first).toContain('marked v');
    expect(first).toContain('DOMPurify');
    expect(first).not.toMatch(/registerLanguage\s*\(\s*["']/);
    expect(first).not.toContain('hljs-keyword');
    // The script names its on-demand chunks, which are served too.
    const chunks = [...(await get(base, script)).body.toString('utf8').matchAll(/import\("\.\/([\w.-]+\.js)"\)/g)].map((m) => '/' + m[1]);
    expect(chunks.some((c) => c.startsWith('/python.'))).toBe(true);
    for (const c of chunks) expect((await get(base, c, { 'accept-encoding': 'br' })).headers['content-encoding'], c).toBe('br');
  });

  it('the files of before are gone: no unhashed names, no node_modules routes', async () => {
    for (const path of ['/app.js', '/app.css', '/favicon.svg', '/feed.js', '/vendor/marked.esm.js', '/vendor/purify.es.mjs', '/vendor/hljs/core.js']) {
      expect((await get(base, path)).status, path).toBe(404);
    }
  });

  it('reads Accept-Encoding as written, q-values and * included', () => {
    expect([...acceptedEncodings('gzip, deflate, br, zstd')].sort()).toEqual(['br', 'gzip']);
    expect([...acceptedEncodings('br;q=0.1')]).toEqual(['br']);
    expect([...acceptedEncodings('br;q=0, *')]).toEqual(['gzip']);
    expect([...acceptedEncodings('*;q=0')]).toEqual([]);
    expect([...acceptedEncodings(undefined)]).toEqual([]);
    expect([...acceptedEncodings('GZIP;Q=1')]).toEqual(['gzip']);
  });

  it('without a page folder nothing is served and the API still starts', () => {
    const none = new StaticFiles(null);
    expect(none.loaded).toBe(false);
    expect(none.problem).toBeNull();
  });
});
