/**
 * Words for searching the history, the same for both stores: a message's text becomes a set of
 * folded tokens, a query becomes folded terms, and a message matches when every term starts one of
 * its tokens. Folding is done here rather than by the database so the two stores find the same
 * messages whatever the database's locale: lower case first (Unicode, not ASCII only), then
 * compatibility decomposition with the combining marks dropped, so `Café` and `cafe`, `Ёлка` and
 * `елка`, full-width `ＡＢＣ` and `abc` are one word.
 *
 * A word is a run of letters, digits and combining marks. Scripts written without spaces (Chinese,
 * Japanese) therefore make one long token per run, found by the run's first characters only.
 */

/** Longest token kept (in code points): longer words are cut, and query terms with them. */
export const MAX_TOKEN = 64;
/** Characters of text around the first match in a snippet. */
const SNIPPET_CHARS = 180;

const WORD = /[\p{L}\p{N}\p{M}]+/gu;
const NOT_WORD = /[^\p{L}\p{N}]+/u;
const ASCII_WORD = /^[A-Za-z0-9]+$/;

/** The tokens one word of text folds to (usually one; `x¼` decomposes into `x1` and `4`). */
function foldWord(word: string): string[] {
  // Most words are plain ASCII: nothing to decompose (and indexing a long log is mostly this).
  if (ASCII_WORD.test(word)) {
    const t = word.toLowerCase();
    return [t.length > MAX_TOKEN ? t.slice(0, MAX_TOKEN) : t];
  }
  const folded = word.toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '');
  const out: string[] = [];
  for (const part of folded.split(NOT_WORD)) {
    if (!part) continue;
    const cps = Array.from(part);
    out.push(cps.length > MAX_TOKEN ? cps.slice(0, MAX_TOKEN).join('') : part);
  }
  return out;
}

/** The distinct tokens of a message's text, for an index. */
export function searchTokens(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(WORD)) for (const t of foldWord(m[0])) out.add(t);
  return [...out];
}

/**
 * The terms of a query: its folded tokens, each matched as the start of a word, all of them
 * required. A term that starts another term adds nothing and is dropped. Empty when the query
 * has no letter or digit.
 */
export function searchTerms(query: string): string[] {
  const terms = searchTokens(query);
  return terms.filter((t) => !terms.some((o) => o !== t && o.startsWith(t)));
}

/** Whether a message with these tokens matches every term. */
export function tokensMatch(tokens: readonly string[], terms: readonly string[]): boolean {
  return terms.every((term) => tokens.some((t) => t.startsWith(term)));
}

/** Which messages search finds: what people and agents said, never notices, decisions or commands. */
export function searchable(e: { kind: string; hiddenFromAgents?: boolean | undefined }): boolean {
  return (e.kind === 'human' || e.kind === 'agent') && !e.hiddenFromAgents;
}

/**
 * A short plain-text excerpt of `text` around its first match, with the matched words as
 * [start, end) offsets (UTF-16, as JavaScript counts) into it. Never markup: the page wraps the
 * ranges in <mark> elements itself, so nothing in a message can become HTML.
 */
export function searchSnippet(text: string, terms: readonly string[]): { snippet: string; highlights: Array<[number, number]> } {
  const flat = text.replace(/\s+/g, ' ').trim();
  const hits: Array<[number, number]> = [];
  for (const m of flat.matchAll(WORD)) {
    if (foldWord(m[0]).some((t) => terms.some((term) => t.startsWith(term)))) hits.push([m.index, m.index + m[0].length]);
  }
  let start = 0;
  if (hits.length > 0 && flat.length > SNIPPET_CHARS) {
    start = Math.max(0, Math.min(hits[0]![0] - 50, flat.length - SNIPPET_CHARS));
    // Start at a word, never inside one (nor inside a surrogate pair).
    if (start > 0) {
      const space = flat.indexOf(' ', start - 1);
      if (space >= 0 && space < hits[0]![0]) start = space + 1;
    }
  }
  let end = Math.min(flat.length, start + SNIPPET_CHARS);
  if (end < flat.length) {
    const space = flat.lastIndexOf(' ', end);
    if (space > start + SNIPPET_CHARS / 2) end = space;
  }
  if (isLowSurrogate(flat.charCodeAt(start))) start--;
  if (isLowSurrogate(flat.charCodeAt(end))) end++;
  const lead = start > 0 ? '…' : '';
  const snippet = lead + flat.slice(start, end) + (end < flat.length ? '…' : '');
  const shift = lead.length - start;
  const highlights = hits
    .filter(([a, b]) => a >= start && b <= end)
    .map(([a, b]): [number, number] => [a + shift, b + shift]);
  return { snippet, highlights };
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** Where a result stands in the order of results: newest first by (ts, groupId, seq). */
export interface SearchPlace {
  ts: number;
  groupId: string;
  seq: number;
}

/** Sort comparator: newest first. */
export function newestFirst(a: SearchPlace, b: SearchPlace): number {
  if (a.ts !== b.ts) return b.ts - a.ts;
  if (a.groupId !== b.groupId) return a.groupId < b.groupId ? 1 : -1;
  return b.seq - a.seq;
}

/** Whether `a` comes after `cursor` in that order (is older), i.e. belongs to the next page. */
export function afterCursor(a: SearchPlace, cursor: SearchPlace | undefined): boolean {
  return cursor === undefined || newestFirst(cursor, a) < 0;
}
