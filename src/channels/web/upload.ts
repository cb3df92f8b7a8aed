/**
 * Reading a `multipart/form-data` message (text fields and files) as it streams in, with busboy.
 * Every limit is checked while the bytes arrive: a file past the size limit, one file too many or
 * an oversized field ends the reading at once with a 4xx, and what the client still sends is
 * never kept. A file is written to the spool folder as it arrives (spool.ts), hashed on the way,
 * never held whole in memory: the request is read only as fast as the disk takes it. The files
 * that passed wait there until the caller has checked the rest of the message and keeps them
 * (or discards them).
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { SpooledFile } from '../../core/fileTypes.js';
import { sizeText } from '../../core/fileTypes.js';
import { HttpError, MAX_BODY_BYTES } from './http.js';
import { SpoolWriter, discardSpooled } from './spool.js';

export interface UploadLimits {
  /** `limits.max_file_bytes`. */
  maxFileBytes: number;
  /** `limits.max_files_per_message`. */
  maxFiles: number;
  /** Where the files are written as they arrive. */
  spoolDir: string;
}

export interface Upload {
  /** The text fields, each sent at most once. */
  fields: Record<string, string>;
  /** The `file` parts in the order sent; a part with neither a name nor bytes (no file chosen) is left out. */
  files: SpooledFile[];
}

/** Text fields a message may carry: more than these is no message from the page. */
const MAX_FIELDS = 16;
/** The part every file is sent under. */
const FILE_FIELD = 'file';
/** Room for the part headers and boundaries around the files and fields. */
const FRAMING_BYTES = 64 * 1024;

/** True when the request declares a multipart form. */
export function isMultipart(req: IncomingMessage): boolean {
  const ct = req.headers['content-type'];
  return typeof ct === 'string' && ct.split(';')[0]!.trim().toLowerCase() === 'multipart/form-data';
}

/** Every error that stops the reading early also closes the connection: the rest of the body is not read. */
const close = { connection: 'close' };

export function tooManyFiles(max: number): HttpError {
  return new HttpError(413, 'too_many_files', max === 0 ? 'this server takes no files' : `a message may carry at most ${max} file${max === 1 ? '' : 's'}`, close, { limit: max });
}

export function fileTooLarge(name: string, max: number): HttpError {
  return new HttpError(413, 'file_too_large', `${name} is larger than the limit of ${sizeText(max)}`, close, { file: name, limit: max });
}

/**
 * Read the form. 413 `file_too_large` for a file past `maxFileBytes` (as soon as it passes),
 * 413 `too_many_files`, 413 `payload_too_large` for a field or a declared length past the limits,
 * 400 for a malformed form, an unknown part or a field sent twice.
 */
export function readUpload(req: IncomingMessage, limits: UploadLimits): Promise<Upload> {
  const declared = Number(req.headers['content-length']);
  const most = limits.maxFiles * limits.maxFileBytes + MAX_FIELDS * MAX_BODY_BYTES + FRAMING_BYTES;
  if (Number.isFinite(declared) && declared > most) {
    req.resume();
    return Promise.reject(new HttpError(413, 'payload_too_large', `the request is larger than ${sizeText(most)}, more than a message may carry`, close));
  }
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: req.headers,
      // Browsers send file names as UTF-8 bytes without saying so.
      defParamCharset: 'utf8',
      limits: { fileSize: limits.maxFileBytes, files: limits.maxFiles, fields: MAX_FIELDS, fieldSize: MAX_BODY_BYTES, parts: limits.maxFiles + MAX_FIELDS },
    });
  } catch (err) {
    req.resume();
    return Promise.reject(new HttpError(400, 'bad_multipart', `malformed multipart form: ${(err as Error).message}`));
  }
  return new Promise<Upload>((resolve, reject) => new FormReading(req, bb, limits, resolve, reject).start());
}

/** One form being read: its fields, its files as they reach the spool, and how it ends (once). */
class FormReading {
  private readonly fields: Record<string, string> = {};
  /** One slot per file part in the order sent, filled once its bytes are all on disk. */
  private readonly slots: Array<SpooledFile | null> = [];
  private readonly writers: SpoolWriter[] = [];
  /** File parts still streaming; the form is complete when busboy is done and these are too. */
  private open = 0;
  private parsed = false;
  private settled = false;

  constructor(
    private readonly req: IncomingMessage,
    private readonly bb: busboy.Busboy,
    private readonly limits: UploadLimits,
    private readonly resolve: (u: Upload) => void,
    private readonly reject: (err: HttpError) => void,
  ) {}

  start(): void {
    const { bb, req, limits } = this;
    bb.on('field', (name, value, info) => this.field(name, value, info));
    bb.on('file', (name, stream, info) => this.file(name, stream, info));
    bb.on('filesLimit', () => this.fail(tooManyFiles(limits.maxFiles)));
    bb.on('fieldsLimit', () => this.fail(new HttpError(413, 'payload_too_large', `a message may have at most ${MAX_FIELDS} fields`, close)));
    bb.on('partsLimit', () => this.fail(new HttpError(413, 'payload_too_large', `a message may have at most ${limits.maxFiles + MAX_FIELDS} parts`, close)));
    bb.on('error', (err: Error) => this.fail(new HttpError(400, 'bad_multipart', `malformed multipart form: ${err.message}`, close)));
    bb.on('close', () => {
      this.parsed = true;
      this.finish();
    });
    req.on('aborted', () => this.fail(new HttpError(400, 'bad_request', 'request aborted')));
    req.on('error', (err) => this.fail(new HttpError(400, 'bad_request', `could not read the request body (${err.message})`)));
    req.pipe(bb);
  }

  private field(name: string, value: string, info: busboy.FieldInfo): void {
    if (info.nameTruncated || info.valueTruncated) {
      this.fail(new HttpError(413, 'payload_too_large', `the field "${name.slice(0, 40)}" is larger than ${sizeText(MAX_BODY_BYTES)}`, close));
    } else if (Object.hasOwn(this.fields, name)) {
      this.fail(new HttpError(400, 'invalid_field', `"${name.slice(0, 40)}" was sent twice`, close));
    } else {
      this.fields[name] = value;
    }
  }

  private file(name: string, stream: Readable, info: busboy.FileInfo): void {
    stream.on('error', () => {});
    if (name !== FILE_FIELD) {
      stream.resume();
      this.fail(new HttpError(400, 'invalid_field', `unknown file part "${name.slice(0, 40)}"; send files as "${FILE_FIELD}"`, close));
      return;
    }
    const fileName = formFileName(info.filename);
    const slot = this.slots.push(null) - 1;
    const writer = new SpoolWriter(this.limits.spoolDir);
    this.writers.push(writer);
    this.open++;
    // busboy cut the part at the limit: the file is too large, whatever follows.
    stream.on('limit', () => this.fail(fileTooLarge(fileName || 'the file', this.limits.maxFileBytes)));
    stream.on('error', (err: Error) => this.fail(new HttpError(400, 'bad_multipart', `could not read the file part (${err.message})`, close)));
    writer.write(stream).then(
      (done) => {
        this.open--;
        if (this.settled) return void discardSpooled([done]);
        // An empty file input in a form: no file was chosen.
        if (fileName !== '' || done.size > 0) this.slots[slot] = { ...done, name: fileName };
        else void discardSpooled([done]);
        this.finish();
      },
      (err: unknown) => {
        this.open--;
        // The disk would not take it: nothing of the message is acknowledged.
        const why = `could not take the file for now (${(err as Error).message})`;
        this.fail(new HttpError(503, 'unavailable', why, { ...close, 'retry-after': '5' }));
      },
    );
  }

  private fail(err: HttpError): void {
    if (this.settled) return;
    this.settled = true;
    // Stop reading: nothing more reaches the parser, and the socket is closed after the answer.
    this.req.unpipe(this.bb);
    this.bb.removeAllListeners();
    this.bb.on('error', () => {});
    this.req.resume();
    // Nothing of a refused message is kept: what was spooled goes, and what is still being written.
    for (const w of this.writers) w.abandon();
    void discardSpooled(this.kept());
    this.reject(err);
  }

  private finish(): void {
    if (this.settled || !this.parsed || this.open > 0) return;
    this.settled = true;
    this.resolve({ fields: this.fields, files: this.kept() });
  }

  private kept(): SpooledFile[] {
    return this.slots.filter((f): f is SpooledFile => f !== null);
  }
}

/**
 * The file name as the sender had it: browsers (and other WHATWG FormData senders) escape `"`,
 * CR and LF in a part's file name as `%22`, `%0D` and `%0A`; these are turned back (the keeper
 * then drops what a name may not hold).
 */
function formFileName(raw: string | undefined): string {
  return (raw ?? '').replace(/%22|%0D|%0A/gi, (m) => ({ '%22': '"', '%0D': '\r', '%0A': '\n' })[m.toUpperCase()]!);
}
