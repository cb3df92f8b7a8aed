// Help while typing: find @handles in a draft that address nobody, and the known handle each
// was probably meant to be. Pure functions, so the page and a test can both drive them.

/** Same shape as the feed's highlighting: "@" not preceded by a word character, "." or "@". */
const MENTION_RE = /(^|[^\p{L}\p{N}_.@-])@([\p{L}\p{N}_-]{1,32})/gu;
/** Spans where "@" is not a mention: fenced and inline code, and URLs (https://host/@user). */
const NOT_PROSE_RE = /```[\s\S]*?(?:```|$)|`[^`\n]*`|\bhttps?:\/\/[^\s<>"'`]+/g;

/** Levenshtein distance, stopping early once it is certainly above `limit`. */
export function editDistance(a, b, limit = Infinity) {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > limit) return limit + 1;
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The @handles in `text` that are not in `known` (lower-case handles without "@"), each with its
 * position and the closest known handle within two edits (or null). Code and URLs are skipped
 * (blanked out with spaces so positions stay true), and so is the handle still being typed at
 * `caret` while it can grow into a known one.
 */
export function unknownMentions(text, known, caret = -1) {
  const knownSet = new Set(known);
  const prose = text.replace(NOT_PROSE_RE, (m) => ' '.repeat(m.length));
  const out = [];
  for (const m of prose.matchAll(MENTION_RE)) {
    const handle = m[2].toLowerCase();
    const start = m.index + m[1].length;
    const end = start + 1 + m[2].length;
    if (knownSet.has(handle)) continue;
    if (end === caret && known.some((k) => k.startsWith(handle))) continue;
    let best = null;
    let bestDistance = 3;
    for (const k of known) {
      const d = editDistance(handle, k, 2);
      if (d < bestDistance) {
        best = k;
        bestDistance = d;
      }
    }
    out.push({ handle: m[2], start, end, suggestion: best });
  }
  return out;
}
