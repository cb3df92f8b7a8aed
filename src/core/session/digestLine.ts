/**
 * The digest line: one line in the prompt that stands for the mailbox's older observations when
 * they do not fit in full ("14 earlier messages from Maya and Critic, not shown in full; they
 * began: …"). Built from the messages themselves, without a model call.
 */
import { cleanDisplayName } from '../text/displayName.js';
import type { TranscriptEntry } from '../types.js';
import { textUnits } from './tokenEstimate.js';

/** Words of each message shown in a digest. */
const DIGEST_WORDS = 8;
/** Names listed in a digest before "and N others". */
const DIGEST_NAMES = 4;

/**
 * The line that stands for observations not shown in full: how many, from whom, and how each of
 * the newest began — as much as `units` allows, never less than the count.
 */
export function digestLine(entries: readonly TranscriptEntry[], omitted: number, units: number): string {
  const total = entries.length + omitted;
  const plural = total === 1 ? 'message' : 'messages';
  // Outside any <message> block: no angle brackets from what people wrote, so nothing can open one.
  const safe = (s: string) => s.replace(/[<>\uFF1C\uFF1E\uFE64\uFE65\u2039\u203A\u276E\u276F\u3008\u3009]/g, ' ');
  const nameOf = (e: TranscriptEntry) => (e.kind === 'system' ? 'Chorus' : safe(cleanDisplayName(e.authorName)) || 'someone');
  const names: string[] = [];
  for (const e of entries) {
    const n = nameOf(e);
    if (!names.includes(n)) names.push(n);
  }
  const who =
    names.length === 0
      ? ''
      : names.length <= DIGEST_NAMES
        ? ` from ${names.slice(0, -1).join(', ')}${names.length > 1 ? ' and ' : ''}${names.at(-1)}`
        : ` from ${names.slice(0, DIGEST_NAMES).join(', ')} and ${names.length - DIGEST_NAMES} others`;
  const bare = `(${total} earlier ${plural}${who} not shown in full)`;
  const plain = `(${total} earlier ${plural} not shown)`;
  // Nothing read to describe (all past the mailbox cap), or no room to: the count alone.
  if (entries.length === 0 || textUnits(bare) > units) return plain;
  // How the newest folded messages began, newest last, while they fit.
  const openings: string[] = [];
  let size = textUnits(bare) + 16;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    // Only the start is read: a digest costs the same for a 30 KB reply as for a short one.
    const end = /[\uD800-\uDBFF]/.test(e.text.charAt(399)) ? 399 : 400;
    const words = e.text.slice(0, end).replace(/\s+/g, ' ').trim().split(' ');
    const start = safe(words.slice(0, DIGEST_WORDS).join(' '));
    const name = nameOf(e);
    const piece = `${name}: "${start}${words.length > DIGEST_WORDS ? '…' : ''}"`;
    if (size + textUnits(piece) + 3 > units) break;
    size += textUnits(piece) + 3;
    openings.unshift(piece);
  }
  if (openings.length === 0) return bare;
  const more = entries.length - openings.length;
  return `(${total} earlier ${plural}${who} not shown in full; ${more > 0 || omitted > 0 ? 'the newest of them began' : 'they began'}: ${openings.join(' · ')})`;
}
