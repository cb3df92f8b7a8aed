/**
 * Files on the fake Bot API, the way Telegram serves them: a photo or document in a message names
 * a `file_id`; `getFile` turns it into a `file_path` (refusing files over the Bot API's 20 MB
 * download limit with "file is too big"); the bytes are at `/file/bot<token>/<file_path>`. Uploads
 * (`sendPhoto`, `sendDocument`, `sendAnimation`) come as multipart forms; their bytes are kept so
 * tests can check what each bot posted.
 */
import { sha256 } from '../../helpers/sample-files.js';
import type http from 'node:http';
import busboy from 'busboy';

export { sha256 };

/** The Bot API downloads files up to 20 MB. */
export const GET_FILE_LIMIT = 20 * 1024 * 1024;

export interface FakeFile {
  fileId: string;
  uniqueId: string;
  bytes: Buffer;
  path: string;
  /** The size Telegram states (getFile's file_size and its 20 MB check): the bytes', unless claimed larger. */
  size: number;
}

/** A file a bot uploaded. */
export interface FakeUpload {
  /** The message it is, as the fake keeps it (`press` takes it). */
  key: number;
  bot: string;
  method: string;
  chatId: number;
  name: string;
  sha256: string;
  size: number;
  caption: string | undefined;
  messageId: number;
  /** The message it replies to (in the sending bot's numbering). */
  replyToMessageId?: number | undefined;
  /** The caption's markup ('HTML'), when it had one. */
  parseMode?: string | undefined;
  threadId?: number | undefined;
  /** Buttons under it (rows of button texts and callback data). */
  keyboard?: unknown;
}

export class FakeFiles {
  private readonly byId = new Map<string, FakeFile>();
  private readonly byPath = new Map<string, FakeFile>();
  readonly uploads: FakeUpload[] = [];
  /** Paths downloaded, in order (a test can tell a file was not fetched). */
  readonly downloads: string[] = [];
  /** Downloads that failed on purpose (`failDownloads`): the path and the status (0: the connection dropped). */
  readonly failedDownloads: Array<{ path: string; status: number }> = [];
  private readonly downloadFaults: Array<number | 'drop'> = [];
  private n = 0;

  /** Keep bytes as Telegram would after a person sent them; `size` may be claimed larger (big photos). */
  add(bytes: Buffer, folder: 'photos' | 'documents', ext: string, size = bytes.length): FakeFile {
    const n = ++this.n;
    const f = { fileId: `FILE${n}${'x'.repeat(20)}`, uniqueId: `U${n}`, bytes, path: `${folder}/file_${n}.${ext}`, size };
    this.byId.set(f.fileId, f);
    this.byPath.set(f.path, f);
    return f;
  }

  getFile(p: Record<string, unknown>): { ok: true; result: unknown } | { ok: false; error_code: number; description: string } {
    const f = typeof p.file_id === 'string' ? this.byId.get(p.file_id) : undefined;
    if (!f) return { ok: false, error_code: 400, description: 'Bad Request: invalid file_id' };
    if (f.size > GET_FILE_LIMIT) return { ok: false, error_code: 400, description: 'Bad Request: file is too big' };
    return { ok: true, result: { file_id: f.fileId, file_unique_id: f.uniqueId, file_size: f.size, file_path: f.path } };
  }

  /** The next downloads fail, one per entry: answered with that status, or 'drop' (the connection is cut). */
  failDownloads(...faults: Array<number | 'drop'>): void {
    this.downloadFaults.push(...faults);
  }

  /** Serve `/file/bot<token>/<path>`; false when the URL is not a file path. */
  serve(url: string, tokenKnown: (token: string) => boolean, res: http.ServerResponse): boolean {
    const m = /^\/file\/bot([^/]+)\/(.+)$/.exec(url);
    if (!m) return false;
    const f = this.byPath.get(decodeURIComponent(m[2]!));
    if (!tokenKnown(decodeURIComponent(m[1]!)) || !f) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: false, error_code: 404, description: 'Not Found' }));
      return true;
    }
    const fault = this.downloadFaults.shift();
    if (fault !== undefined) {
      this.failedDownloads.push({ path: f.path, status: fault === 'drop' ? 0 : fault });
      if (fault === 'drop') res.socket?.destroy();
      else res.writeHead(fault, { 'content-type': 'text/plain' }).end(`error ${fault}`);
      return true;
    }
    this.downloads.push(f.path);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': f.bytes.length });
    res.end(f.bytes);
    return true;
  }
}

/** A multipart request's fields (JSON values parsed) and its file parts. */
export async function readMultipart(req: http.IncomingMessage, body: Buffer): Promise<{ fields: Record<string, unknown>; files: Array<{ field: string; name: string; bytes: Buffer }> }> {
  const fields: Record<string, unknown> = {};
  const files: Array<{ field: string; name: string; bytes: Buffer }> = [];
  await new Promise<void>((resolve, reject) => {
    const bb = busboy({ headers: req.headers });
    bb.on('field', (name, value) => {
      try {
        fields[name] = /^[[{]/.test(value) ? JSON.parse(value) : value;
      } catch {
        fields[name] = value;
      }
    });
    bb.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => files.push({ field, name: info.filename ?? '', bytes: Buffer.concat(chunks) }));
    });
    bb.on('close', () => resolve());
    bb.on('error', reject);
    bb.end(body);
  });
  // grammY names an uploaded file by a random key and points the parameter at it: `attach://key`.
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string' && v.startsWith('attach://')) {
      const f = files.find((x) => x.field === v.slice('attach://'.length));
      if (f) f.field = k;
    }
  }
  return { fields, files };
}
