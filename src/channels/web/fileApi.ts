/**
 * `GET /api/files/:id` (and HEAD): the bytes of a kept file, for the page's thumbnails and
 * downloads. A file comes from whoever sent it, so it is served to be looked at, never run: its
 * type is the one Chorus found in its bytes, browsers are told not to guess another
 * (`nosniff`), anything but an image is a download (`attachment`), and the response carries a
 * policy that allows no script, style or request and sandboxes it, should a browser open it as a
 * page all the same. Ids are content hashes, so a file never changes under its id: browsers may
 * keep it for good (privately: the API may need a token).
 *
 * Equal bytes are one file, but each message that carries it names it its own way: `?m=<entry id>`
 * asks for the file as that message's, and it is served under the name that message gives it —
 * only while the message exists, is not deleted and carries this very file (404 otherwise).
 * Without `m` the file is served under a name made from its id and type, never a sender's.
 */
import type { IncomingMessage } from 'node:http';
import type { Attachment, Files } from '../../core/fileTypes.js';
import type { GatewayApi } from '../../core/ports.js';
import { UserError } from '../../core/errors.js';
import { HttpError } from './http.js';
import { findEntry } from './messageApi.js';
import type { Router } from './router.js';

/** A file id: the SHA-256 of its bytes, lower-case hex. */
const FILE_ID = /^[0-9a-f]{64}$/;
/** The types shown in place; everything else is saved, never opened by the browser. */
const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const FILE_CSP = "default-src 'none'; sandbox";
const CACHE = 'private, max-age=31536000, immutable';

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
};

export function registerFileRoutes(router: Router, files: () => Files, gateway: () => GatewayApi): void {
  router.add('GET', '/api/files/:id', async ({ req, res, params, url }) => {
    const id = params.id!;
    if (!FILE_ID.test(id)) throw new HttpError(400, 'invalid_file_id', 'a file id is the SHA-256 of the file: 64 lower-case hex digits');
    const ref = url.searchParams.get('m');
    const named = ref === null ? null : await fileOfMessage(gateway(), ref, id);
    const file = await files().read(id);
    if (!file) throw new HttpError(404, 'unknown_file', `no file "${id}"`);
    const { meta, bytes } = file;
    const name = named?.name ?? `file-${id.slice(0, 12)}.${EXTENSIONS[meta.type] ?? 'bin'}`;
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
      'content-disposition': contentDisposition(INLINE.has(meta.type) ? 'inline' : 'attachment', name),
    });
    if (req.method === 'HEAD') res.end();
    else res.end(bytes);
  });
}

/**
 * The attachment `id` of message `entryId` (`<group>.<seq>`), as that message names it: 404 when
 * there is no such message, it was deleted, or it does not carry this file.
 */
async function fileOfMessage(gateway: GatewayApi, entryId: string, id: string): Promise<Attachment> {
  const dot = entryId.lastIndexOf('.');
  const missing = new HttpError(404, 'unknown_file', `message "${entryId.slice(0, 100)}" carries no file "${id}"`);
  if (dot <= 0 || entryId.length > 200) throw missing;
  // An unknown group is no such message; a store that cannot answer stays a 503.
  const entry = await findEntry(gateway, entryId.slice(0, dot), entryId).catch((err: unknown) => {
    if (err instanceof UserError) return undefined;
    throw err;
  });
  const found = entry && !entry.deleted ? entry.attachments?.find((a) => a.id === id) : undefined;
  if (!found) throw missing;
  return found;
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
