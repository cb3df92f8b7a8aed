/**
 * The reaction token, `[REACT 👍]`: on a voluntary turn an agent may react to the round's message
 * with one emoji instead of replying (core/router/agentReaction.ts). It is matched like the pass
 * token (passToken.ts), on folded text: `［REACT 👍］`, `[re act 👍]`, `[REACT\u200b👍]` are the
 * token, case is ignored, whitespace may stand between its parts. What follows the word is its
 * argument: characters that are neither letters, whitespace nor brackets (so `[Reactions]`,
 * `[react to this]` and a markdown link `[React](…)` are ordinary text), at most ARG_MAX of them
 * folded. The argument is read from the *original* characters — folding drops the joiners and
 * variation selectors an emoji is made of — and counts only when it is exactly one emoji
 * (emoji.ts). A token whose argument is not one emoji (`[REACT 👍🎉]`, `[REACT]`) is still a token:
 * removed, never posted, it only reacts with nothing.
 */
import { isOneEmoji } from './emoji.js';

/** The word after `[`, folded and lower-cased. */
export const REACT_WORD = 'react';

/** Folded argument characters a token may carry (a family emoji folds to 4, with skin tones to 8). */
export const ARG_MAX = 16;

/** The token for `emoji`, as an agent writes it and as its history remembers it. */
export function reactToken(emoji: string): string {
  return `[REACT ${emoji}]`;
}

const LETTER = /\p{L}/u;

/** Whether a folded character (one code point) may stand in a token's argument. */
export function isArgChar(f: string): boolean {
  const code = f.charCodeAt(0);
  if (code < 128) return f !== '[' && f !== ']' && !((code >= 65 && code <= 90) || (code >= 97 && code <= 122));
  return !LETTER.test(f);
}

/** Invisible characters an emoji is made of: they stay in an argument, every other invisible one goes. */
const EMOJI_PART = /[\u200D\uFE0E\uFE0F\u{E0020}-\u{E007F}]/u;
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\s]/gu;

/** The emoji a token's argument (original characters) names, or null when it is not exactly one. */
export function reactArgument(raw: string): string | null {
  if (raw.length > 256) return null;
  const emoji = raw.replace(INVISIBLE, (c) => (EMOJI_PART.test(c) ? c : ''));
  return isOneEmoji(emoji) ? emoji : null;
}
