/**
 * UTF-8 byte counting and cutting on JavaScript strings, without encoding them: reply limits are
 * in bytes (what the store writes and the wire carries), and a reply is measured delta by delta
 * while it streams, so each call costs only the length of the piece it is given.
 */

/** Bytes `s` takes in UTF-8 (a lone surrogate counts as the 3-byte U+FFFD it is encoded as). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLow(s.charCodeAt(i + 1))) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** The longest prefix of `s` that fits in `maxBytes` of UTF-8, never splitting a surrogate pair. */
export function cutUtf8(s: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLow(s.charCodeAt(i + 1));
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (n + size > maxBytes) return s.slice(0, i);
    n += size;
    if (pair) i++;
  }
  return s;
}

function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
