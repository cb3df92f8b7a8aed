/**
 * `GET /api/files/:id` (and HEAD): the bytes of a kept file, for the page's thumbnails and
 * downloads. A file comes from whoever sent it, so it is served to be looked at, never run: its
 * type is the one Chorus found in its bytes, browsers are told not to guess another
 * (`nosniff`), anything but an image is a download (`attachment`), and the response carries a
 * policy that allows no script, style or request and sandboxes it, should a browser open it as a
 * page all the same. Ids are content hashes, so a file never changes under its id: browsers may
 * keep it for good (privately: the API may need a token).
 */
import type { IncomingMessage } from 'node:http';
import type { Files } from '../../core/fileTypes.js';
import { HttpError } from './http.js';
import type { Router } from './router.js';

/** A file id: the SHA-256 of its bytes, lower-case hex. */
const FILE_ID = /^[0-9a-f]{64}$/;
/** The types shown in place; everything else is saved, never opened by the browser. */
const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const FILE_CSP = "default-src 'none'; sandbox";
const CACHE = 'private, max-age=31536000, immutable';

export function registerFileRoutes(router: Router, files: () => Files): void {
  router.add('GET', '/api/files/:id', async ({ req, res, params }) => {
    const id = params.id!;
    if (!FILE_ID.test(id)) throw new HttpError(400, 'invalid_file_id', 'a file id is the SHA-256 of the file: 64 lower-case hex digits');
    const file = await files().read(id);
    if (!file) throw new HttpError(404, 'unknown_file', `no file "${id}"`);
    const { meta, bytes } = file;
    const etag = `"${meta.sha256 || id}"`;
    res.setHeader('content-security-policy', FILE_CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('cache-control', CACHE);
    res.setHeader('etag', etag);
    if (fresh(req, etag)) {
      res.writeHead(304).end();
      return;
    }
    res.writeHead(200, {
      'content-type': meta.type === 'text/plain' ? 'text/plain; charset=utf-8' : meta.type,
      'content-length': bytes.byteLength,
      'content-disposition': contentDisposition(INLINE.has(meta.type) ? 'inline' : 'attachment', meta.name),
    });
    if (req.method === 'HEAD') res.end();
    else res.end(bytes);
  });
}

/** The browser already holds this very file (`If-None-Match` names its ETag, or `*`). */
function fresh(req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match'];
  if (!header) return false;
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

/**
 * `inline` or `attachment` with the file's name (RFC 6266): `filename*` carries it exactly, in
 * UTF-8; `filename` an ASCII stand-in for clients that know no better. Both are quoted or
 * encoded so no name can end the header or add a parameter.
 */
export function contentDisposition(kind: 'inline' | 'attachment', name: string): string {
  // eslint-disable-next-line no-control-regex
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_').trim() || 'file';
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
