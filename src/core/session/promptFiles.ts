/**
 * Files in a prompt. Every file reads as one line in its message's block (`[image: chart.png,
 * 800×600, 120 KB]`), for every agent, always; an agent whose model can see is also sent the newest
 * few in full (images, PDFs; plain-text files to every agent), after the text of the turn they came
 * in. Because the words never change with that choice, a history turn reads the same whether its
 * image is sent again or not, and a turn's image sent again stays in the cached prefix.
 */
import { attachmentLine, type Attachment, type PromptAttachment } from '../fileTypes.js';
import type { ChatTurn, TranscriptEntry } from '../types.js';

/** Default of `llm.max_images_in_prompt`. */
export const DEFAULT_MAX_IMAGES = 4;

/** Whether, and how many, files an agent is sent in full. */
export interface FileAllowance {
  /** The agent's model can see images and PDFs. */
  vision: boolean;
  /** `llm.max_images_in_prompt`: files sent in full in one prompt, newest first. */
  max: number;
}

/** An entry's words as a mailbox shows them: the text, then a line per file (none once deleted). */
export function textWithFiles(e: TranscriptEntry): string {
  if (!e.attachments?.length || e.deleted) return e.text;
  const lines = e.attachments.map(attachmentLine).join('\n');
  return e.text ? `${e.text}\n${lines}` : lines;
}

/**
 * Estimated prompt tokens of a file sent in full. Images: about width × height / 750, and a large
 * image is scaled down by the API to about 1,600 tokens (unknown size: that much). Plain text: its
 * bytes / 3. PDFs are read page by page as text and image (1,500–3,000 tokens a page); the page
 * count is not known here, so the size stands in, generously.
 */
export function fileTokens(a: Attachment): number {
  if (a.type.startsWith('image/')) return a.width && a.height ? Math.min(1600, Math.ceil((a.width * a.height) / 750)) : 1600;
  if (a.type === 'text/plain') return Math.ceil(a.size / 3) + 16;
  return Math.max(1500, Math.ceil(a.size / 30));
}

/** May this file go in full to this agent? Plain text any model can read; images and PDFs need vision. */
function sendable(a: Attachment, allow: FileAllowance): boolean {
  return a.type === 'text/plain' || allow.vision;
}

/** The files of the shown observations an agent may be sent in full, oldest first, with who shared them. */
export function candidateFiles(shown: readonly TranscriptEntry[], allow: FileAllowance | undefined): PromptAttachment[] {
  if (!allow || allow.max <= 0) return [];
  const out: PromptAttachment[] = [];
  for (const e of shown) {
    if (e.deleted) continue;
    for (const a of e.attachments ?? []) if (sendable(a, allow)) out.push({ ...a, from: e.authorName });
  }
  return out;
}

/**
 * The newest files that fit: walked newest first while fewer than `max` are taken and their tokens
 * fit in `room`; a file that does not fit is skipped for an older, smaller one. Returned oldest first.
 */
export function takeNewest(files: readonly PromptAttachment[], max: number, room: number): { files: PromptAttachment[]; tokens: number } {
  const taken: PromptAttachment[] = [];
  let tokens = 0;
  for (let i = files.length - 1; i >= 0 && taken.length < max; i--) {
    const t = fileTokens(files[i]!);
    if (tokens + t > room) continue;
    tokens += t;
    taken.unshift(files[i]!);
  }
  return { files: taken, tokens };
}

/**
 * History turns with the files they were sent with, as far as `max` (less those already taken by the
 * newest turn) and `room` allow, newest turn first; a turn whose files are not all sent again keeps
 * its words (each file's line is in them). Turns are copied only when they change.
 */
export function historyFiles(turns: readonly ChatTurn[], max: number, room: number): { turns: ChatTurn[]; tokens: number; ids: string[] } {
  const out = [...turns];
  let left = max;
  let tokens = 0;
  const ids: string[] = [];
  for (let i = out.length - 1; i >= 0; i--) {
    const t = out[i]!;
    if (!t.attachments?.length) continue;
    const kept = takeNewest(t.attachments, left, room - tokens);
    left -= kept.files.length;
    tokens += kept.tokens;
    ids.unshift(...kept.files.map((f) => f.id));
    if (kept.files.length === t.attachments.length) continue;
    const { attachments: _all, ...words } = t;
    out[i] = kept.files.length > 0 ? { ...words, attachments: kept.files } : words;
  }
  return { turns: out, tokens, ids };
}
