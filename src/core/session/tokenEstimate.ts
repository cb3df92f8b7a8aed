/**
 * How big a text is to a model, without its tokenizer: no single tokenizer fits every server
 * (Claude, Llama, Qwen and Mistral all split differently), and shipping several would cost more
 * than it saves. A text's weight counts each ASCII character 1 and every other code point 3 (CJK
 * and emoji take about a token per character); ContextBudgets divides it by a units-per-token
 * ratio it learns per model. The chat template's own tokens are counted per message and per request.
 */

/** Tokens the chat template adds per message (role markers, separators), and per request. */
export const PER_MESSAGE = 6;
export const PER_REQUEST = 12;

/** Text that is ASCII only: its weight is its length (a native scan, far cheaper than the loop). */
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Weight units of a text: ASCII 1, any other code point 3 (see the comment at the top). Linear. */
export function textUnits(s: string): number {
  if (ASCII_ONLY.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else {
      n += 3;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) i++;
      }
    }
  }
  return n;
}

/** The longest start of `s` of at most `units` weight units, never splitting a surrogate pair. */
export function cutUnits(s: string, units: number): string {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    const w = c < 0x80 ? 1 : 3;
    if (n + w > units) return s.slice(0, i);
    n += w;
    if (pair) i++;
  }
  return s;
}
