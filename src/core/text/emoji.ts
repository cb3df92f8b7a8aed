/**
 * What counts as one emoji, for reactions: a single grapheme (as `Intl.Segmenter` splits text, the
 * way people see characters) that is a pictograph with its modifiers and joined parts (👍🏽,
 * 👩‍💻, 🏳️‍🌈, 🏴󠁧󠁢󠁳󠁣󠁴󠁿), a flag of two regional indicators (🇫🇷), or a keycap (1️⃣), in at most
 * EMOJI_MAX_BYTES of UTF-8. Nothing else — letters, words, two emoji, invisible characters — is one.
 */

/** The longest emoji kept, in UTF-8 bytes (a family of four is 25). */
export const EMOJI_MAX_BYTES = 32;

/** What may follow a pictograph inside one emoji: a skin tone, a presentation selector, tag characters (subdivision flags). */
const MOD = String.raw`(?:\p{Emoji_Modifier}|\uFE0F|\uFE0E|[\u{E0020}-\u{E007F}])`;
const PICTOGRAPH = String.raw`\p{Extended_Pictographic}${MOD}*`;
const EMOJI = new RegExp(String.raw`^(?:${PICTOGRAPH}(?:\u200D${PICTOGRAPH})*|\p{Regional_Indicator}{2}|[0-9#*]\uFE0F?\u20E3)$`, 'u');

let segmenter: Intl.Segmenter | undefined;
const utf8 = new TextEncoder();

/** `text` is exactly one emoji (see the top of the file); no space around it. */
export function isOneEmoji(text: string): boolean {
  // A UTF-16 unit is never more than its UTF-8 bytes: a long text is refused before it is encoded.
  if (!text || text.length > EMOJI_MAX_BYTES || utf8.encode(text).length > EMOJI_MAX_BYTES || !EMOJI.test(text)) return false;
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  let n = 0;
  for (const _ of segmenter.segment(text)) if (++n > 1) return false;
  return n === 1;
}
