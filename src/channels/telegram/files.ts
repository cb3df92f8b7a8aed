/**
 * Photos and documents, in and out. In: the file is fetched by the bot that saw the update
 * (`getFile`, then the Bot API's download path), kept through `Files.keep`, and only then is the
 * message handed over — so a confirmed update's files are durable. Every bot in a group gets its
 * own copy of a message: the copies share one fetch and one notice per message. Out: sendFiles.ts.
 */
import { GrammyError, type Bot } from 'grammy';
import type { Message } from 'grammy/types';
import type { Attachment, Files } from '../../core/fileTypes.js';
import { fileRefusalNotice, sizeText } from '../../core/fileTypes.js';
import type { Logger } from '../../core/ports.js';
import type { InboundMessage } from '../../core/types.js';
import { BoundedMap } from '../../core/lib/BoundedMap.js';
import { describeError } from './errors.js';

/** A download that takes longer than this is given up (the update is fetched again later). */
const DOWNLOAD_TIMEOUT_MS = 60_000;

/** What a message's files came to: the kept ones, and one line per file that was refused. */
export interface TakenFiles {
  attachments: Attachment[];
  refusals: string[];
}

/** One file of a message as Telegram describes it. */
interface FileRef {
  fileId: string;
  name: string;
  size: number | undefined;
}

export function hasFiles(msg: Message): boolean {
  return (msg.photo?.length ?? 0) > 0 || msg.document !== undefined;
}

/** The files of a message: the largest photo size within the limit, or the document. */
function filesOf(msg: Message, maxBytes: number): { refs: FileRef[]; refusals: string[] } {
  if (msg.photo?.length) {
    // Sizes come smallest first; the largest that fits is the photo as the person sent it, or close.
    const fits = msg.photo.filter((p) => p.file_size === undefined || p.file_size <= maxBytes);
    const best = fits.at(-1);
    if (!best) return { refs: [], refusals: [`the photo is ${sizeText(msg.photo.at(-1)!.file_size ?? 0)}; the limit is ${sizeText(maxBytes)}`] };
    return { refs: [{ fileId: best.file_id, name: `photo-${msg.message_id}.jpg`, size: best.file_size }], refusals: [] };
  }
  const d = msg.document;
  if (!d) return { refs: [], refusals: [] };
  const name = d.file_name ?? `document-${msg.message_id}`;
  if (d.file_size !== undefined && d.file_size > maxBytes) return { refs: [], refusals: [`${name} is ${sizeText(d.file_size)}; the limit is ${sizeText(maxBytes)}`] };
  return { refs: [{ fileId: d.file_id, name, size: d.file_size }], refusals: [] };
}

export class TelegramFiles {
  /** `chat:message` → the one fetch every bot's copy of that message shares. */
  private readonly taking = new BoundedMap<string, Promise<TakenFiles>>(2_000);

  constructor(
    private readonly apiRoot: string,
    private readonly log: Logger,
  ) {}

  /**
   * The message's files, kept, for the first copy that asks; later copies get the same answer and
   * `first: false` (the notice is posted once). A failed fetch is forgotten, so a redelivered
   * update tries again, and rejects: the update stays unconfirmed.
   */
  async take(bot: Bot, token: string, msg: Message, key: string, files: Files): Promise<TakenFiles & { first: boolean }> {
    const known = this.taking.get(key);
    if (known) return { ...(await known), first: false };
    const p = this.fetchAll(bot, token, msg, files);
    this.taking.set(key, p);
    try {
      return { ...(await p), first: true };
    } catch (err) {
      this.taking.delete(key);
      throw err;
    }
  }

  private async fetchAll(bot: Bot, token: string, msg: Message, files: Files): Promise<TakenFiles> {
    const { refs, refusals } = filesOf(msg, files.maxBytes);
    const attachments: Attachment[] = [];
    for (const ref of refs) {
      const got = await this.download(bot, token, ref, files.maxBytes);
      if ('refused' in got) {
        refusals.push(got.refused);
        continue;
      }
      const kept = await files.keep({ name: ref.name, bytes: got.bytes });
      if (kept.ok) attachments.push(kept.attachment);
      else refusals.push(kept.reason);
    }
    return { attachments, refusals };
  }

  /**
   * The file's bytes, or why Telegram will not hand it over for good (too big for bots to download,
   * gone, over the limit after all): asking again would get the same answer, and the update would
   * hold up the bot's later ones. A failure that may pass (no answer, a 5xx, a 429) throws.
   */
  private async download(bot: Bot, token: string, ref: FileRef, max: number): Promise<{ bytes: Uint8Array } | { refused: string }> {
    const over = (size: number) => ({ refused: `${ref.name} is ${sizeText(size)}; the limit is ${sizeText(max)}` });
    let path: string | undefined;
    try {
      const file = await bot.api.getFile(ref.fileId);
      if (file.file_size !== undefined && file.file_size > max) return over(file.file_size);
      path = file.file_path;
    } catch (err) {
      if (err instanceof GrammyError && /file is too big/i.test(err.description)) return { refused: `${ref.name} is over the 20 MB Telegram lets bots download` };
      if (!(err instanceof GrammyError) || err.error_code >= 500 || err.error_code === 429) throw err;
      return { refused: `Telegram would not hand ${ref.name} over (${err.description})` };
    }
    if (!path) return { refused: `Telegram would not hand ${ref.name} over` };
    let res: Response;
    try {
      res = await fetch(`${this.apiRoot}/file/bot${token}/${path}`, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
    } catch (err) {
      throw new Error(`telegram: could not download ${ref.name}: ${describeError(err instanceof Error && err.cause instanceof Error ? err.cause : err, [token])}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      if (res.status >= 500 || res.status === 429) throw new Error(`telegram: downloading ${ref.name} answered ${res.status}`);
      return { refused: `Telegram would not hand ${ref.name} over (HTTP ${res.status})` };
    }
    // Read no more than the limit, whatever the server says the size is.
    const chunks: Uint8Array[] = [];
    let total = 0;
    const reader = res.body?.getReader();
    for (let part = await reader?.read(); part && !part.done; part = await reader!.read()) {
      total += part.value.byteLength;
      if (total > max) {
        await reader!.cancel().catch(() => undefined);
        return { refused: `${ref.name} is over the limit of ${sizeText(max)}` };
      }
      chunks.push(part.value);
    }
    this.log.debug({ name: ref.name, bytes: total }, 'telegram: file downloaded');
    return { bytes: Buffer.concat(chunks) };
  }
}

/**
 * Fill in the message's files before it is handed over; false when nothing is left to hand over
 * (every file refused, no caption). A refusal is told in the chat once, whichever bot's copy came first.
 */
export async function attachFiles(
  take: () => Promise<TakenFiles & { first: boolean }>,
  inbound: InboundMessage,
  notify: (text: string) => Promise<unknown>,
  log: Logger,
): Promise<boolean> {
  const got = await take();
  if (got.attachments.length > 0) inbound.attachments = got.attachments;
  if (got.first && got.refusals.length > 0) {
    await notify(fileRefusalNotice(inbound.author.name, got.refusals)).catch((err: unknown) => log.warn({ chatId: inbound.chatId, err: describeError(err) }, 'telegram: could not post a file refusal'));
  }
  return inbound.text.trim().length > 0 || got.attachments.length > 0;
}
