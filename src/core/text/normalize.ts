/**
 * Text folding for matching what people and models write against what Chorus knows (handles,
 * the pass token, name labels). Two strings that render the same to a reader should match the
 * same way: compatibility forms (full-width `＠analyst`, `［PASS］`) fold to their plain forms, and
 * characters that render as nothing (zero-width spaces and joiners, soft hyphens, bidi controls,
 * variation selectors, tag characters) are dropped. Characters from other scripts that merely look
 * alike (Cyrillic `а` for Latin `a`) are different letters and stay different: NFKC does not map
 * across scripts, which is what keeps `@аnalyst` from addressing Analyst.
 *
 * Every function here is a fixed number of linear passes over its input.
 */

/** Unicode's "default ignorable" code points: rendered as nothing unless a font says otherwise. */
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * Invisible characters that matter for display: bidi embeddings, overrides and isolates (they can
 * make "tsylanA" render as "Analyst"), zero-width spaces, word joiners, soft hyphens, BOMs, the
 * Hangul fillers and tag characters (invisible text). Zero-width joiners and variation selectors
 * are left alone because emoji sequences need them.
 */
const DISPLAY_CONTROLS = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B\u200C\u200E\u200F\u202A-\u202E\u2060-\u206F\u3164\uFEFF\uFFA0]|[\u{E0000}-\u{E007F}]/gu;

/** Drop every default-ignorable code point (zero-width, soft hyphen, bidi controls, ...). */
export function removeInvisible(text: string): string {
  return text.replace(IGNORABLE, '');
}

/**
 * Clean a display name or other short label for showing: bidi controls and invisible characters
 * removed (emoji joiners kept), no NFKC (it would change how ordinary names look).
 */
export function removeDisplayControls(text: string): string {
  return text.replace(DISPLAY_CONTROLS, '');
}

/**
 * The form text is matched in: invisible characters removed, then NFKC (full-width and other
 * compatibility forms folded, `＠` → `@`, `［` → `[`), then invisibles removed again because NFKC can
 * produce some (U+FFA0 → U+1160). Case is kept; callers that compare case-insensitively lower it.
 * The result can be longer than the input (NFKC expands a few ligatures) but by a bounded factor.
 */
export function foldForMatching(text: string): string {
  return removeInvisible(removeInvisible(text).normalize('NFKC'));
}

/** A handle as looked up: folded, lower-case, without a leading `@` (also full-width `＠`). */
export function handleKey(handle: string): string {
  return foldForMatching(handle).replace(/^@/, '').toLowerCase();
}
