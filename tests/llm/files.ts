/** Files for the provider tests: small files of each kind, their attachments, and a reader that counts. */
import { createHash } from 'node:crypto';
import type { Attachment, AttachmentType, PromptAttachment, StoredFile } from '../../src/core/fileTypes.js';
import { attachmentLine } from '../../src/core/fileTypes.js';
import type { ChatTurn } from '../../src/core/types.js';

/** `n` bytes after a header, the same for the same seed (never all zeros, so files differ by seed). */
function filled(header: number[] | string, n: number, seed: number): Uint8Array {
  const head = typeof header === 'string' ? Buffer.from(header, 'latin1') : Buffer.from(header);
  const out = new Uint8Array(head.length + n);
  out.set(head);
  let x = seed * 2654435761 + 1;
  for (let i = head.length; i < out.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** Bytes that begin as a PNG does (the fakes, like the API's first check, read the signature). */
export const png = (n = 300, seed = 1) => filled([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], n, seed);
export const jpeg = (n = 300, seed = 2) => filled([0xff, 0xd8, 0xff, 0xe0], n, seed);
export const pdf = (seed = 3) => new Uint8Array(Buffer.concat([Buffer.from('%PDF-1.4\n'), filled('', 200, seed), Buffer.from('\n%%EOF\n')]));
export const text = (s = 'Q3 notes\nRevenue up 12%.\n') => new Uint8Array(Buffer.from(s, 'utf8'));

export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A kept file and the attachment a turn names it by. */
export function file(bytes: Uint8Array, type: AttachmentType, name: string, over: Partial<PromptAttachment> = {}): { stored: StoredFile; att: PromptAttachment } {
  const id = sha256(bytes);
  const { from = 'Maya', ...rest } = over;
  const meta: Attachment = { id, name, type, size: bytes.length, sha256: id, ...rest };
  return { stored: { meta, bytes }, att: { ...meta, from } };
}

/** A reader over some kept files that counts its reads per id. */
export function reader(...files: Array<{ stored: StoredFile }>) {
  const byId = new Map(files.map((f) => [f.stored.meta.id, f.stored]));
  const reads = new Map<string, number>();
  const readFile = async (id: string) => {
    reads.set(id, (reads.get(id) ?? 0) + 1);
    return byId.get(id) ?? null;
  };
  return { readFile, reads };
}

/** A user turn as the core writes one with files: its text carries each file's line. */
export function turnWith(words: string, ...atts: PromptAttachment[]): ChatTurn {
  const lines = atts.map((a) => attachmentLine(a)).join('\n');
  return {
    role: 'user',
    content: `## Group conversation since your last turn\n<message from="Maya" role="human">${words}\n${lines}</message>\n\n## Your turn\nYou were addressed directly: reply.`,
    attachments: atts,
  };
}
