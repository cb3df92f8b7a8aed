/**
 * Files on Discord. In: a message's attachments are fetched from their URLs (only http(s), the
 * size Discord states checked before fetching, a time limit) and kept through `Files.keep` before
 * the message is handed over. The gateway never delivers a message twice, so a fetch that fails for
 * the moment is tried again a few times, and a file still not fetched is told in the chat. Out: an
 * agent's files go with its last chunk through the channel webhook, under its name and avatar
 * (sendFiles.ts: within the server's upload limit).
 */
import type { Message } from 'discord.js';
import type { Attachment, Files } from '../../core/fileTypes.js';
import { fileRefusalNotice, readKept, sizeText } from '../../core/fileTypes.js';
import type { Logger } from '../../core/ports.js';
import type { InboundMessage } from '../../core/types.js';

const FETCH_TIMEOUT_MS = 60_000;

export interface TakenFiles {
  attachments: Attachment[];
  refusals: string[];
}

/** Fetch and keep a message's attachments, in order; each that is not taken becomes a refusal line. */
export async function takeFiles(m: Pick<Message, 'attachments'>, files: Files, log: Logger): Promise<TakenFiles> {
  const out: TakenFiles = { attachments: [], refusals: [] };
  for (const a of m.attachments.values()) {
    const name = a.name || 'file';
    if (out.attachments.length >= files.maxPerMessage) {
      out.refusals.push(`${name} is past the ${files.maxPerMessage} files a message may carry`);
      continue;
    }
    if (a.size > files.maxBytes) {
      out.refusals.push(`${name} is ${sizeText(a.size)}; the limit is ${sizeText(files.maxBytes)}`);
      continue;
    }
    const bytes = await fetchBytes(a.url, files.maxBytes, log);
    if (!bytes) {
      out.refusals.push(`${name} could not be fetched from Discord`);
      continue;
    }
    const kept = await files.keep({ name, bytes });
    if (kept.ok) out.attachments.push(kept.attachment);
    else out.refusals.push(kept.reason);
  }
  return out;
}

/** Tries per file, 0.5 s then 1 s apart. */
const FETCH_TRIES = 3;

/**
 * The bytes at `url`, at most `max` of them (a server that sends more than it said is cut off), or
 * null. The gateway delivers a message once, so a failure of the moment (no answer, a 5xx, a 429)
 * is tried again here before the file is given up.
 */
async function fetchBytes(url: string, max: number, log: Logger): Promise<Uint8Array | null> {
  if (!/^https?:\/\//i.test(url)) return null;
  for (let attempt = 1; attempt <= FETCH_TRIES; attempt++) {
    if (attempt > 1) await new Promise((r) => setTimeout(r, 250 * 2 ** (attempt - 1)));
    const got = await fetchOnce(url, max);
    if (got !== 'again') return got;
    log.warn({ attempt }, 'discord: fetching an attachment failed for now');
  }
  return null;
}

async function fetchOnce(url: string, max: number): Promise<Uint8Array | null | 'again'> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      return res.status >= 500 || res.status === 429 ? 'again' : null;
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      total += chunk.byteLength;
      if (total > max) return null;
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  } catch {
    return 'again';
  }
}

/** Kept files as discord.js uploads them. */
export async function uploadsOf(files: Pick<Files, 'read'>, list: readonly Attachment[], log: Logger): Promise<Array<{ attachment: Buffer; name: string }>> {
  const kept = await readKept(files, list, (a) => log.error({ file: a.id }, 'discord: a file to post is not kept; posting without it'));
  return kept.map((f) => ({ attachment: Buffer.from(f.bytes), name: f.meta.name }));
}

/**
 * Fill in a message's files before it is handed over; false when nothing is left to hand over
 * (every file refused and no text). Refusals are told in the chat.
 */
export async function attachFiles(m: Pick<Message, 'attachments'>, msg: InboundMessage, files: Files, notify: (text: string) => Promise<unknown>, log: Logger): Promise<boolean> {
  const got = await takeFiles(m, files, log);
  if (got.attachments.length > 0) msg.attachments = got.attachments;
  if (got.refusals.length > 0) await notify(fileRefusalNotice(msg.author.name, got.refusals)).catch((err: unknown) => log.warn({ chatId: msg.chatId, err: err instanceof Error ? err.message : String(err) }, 'discord: could not post a file refusal'));
  return msg.text.trim().length > 0 || got.attachments.length > 0;
}
