/**
 * Hand-written, single-pass recognisers for the two Markdown constructs Chorus cares about: code
 * fences and inline code spans. They replace regular expressions whose backtracking made a long
 * run of backticks cost quadratic time (64k backticks froze the event loop for seconds). Each
 * function looks at every character a constant number of times.
 */

/** A fence line: optional indent of up to three whitespace characters, then 3+ backticks or tildes. */
export interface FenceLine {
  /** The run of backticks or tildes. */
  marker: string;
  /** Everything after the marker on that line. */
  info: string;
}

const WS = /\s/;

/**
 * Parse `line` (no newline in it) as a fence line, or null. Same language as
 * `/^\s{0,3}(`{3,}|~{3,})(.*)$/` (so `.` rules: a carriage return or line/paragraph separator in
 * the rest of the line means no match), without the backtracking.
 */
export function parseFenceLine(line: string): FenceLine | null {
  let i = 0;
  while (i < line.length && i < 4 && WS.test(line[i]!)) i++;
  if (i > 3) return null;
  const c = line[i];
  if (c !== '`' && c !== '~') return null;
  let j = i;
  while (j < line.length && line[j] === c) j++;
  if (j - i < 3) return null;
  const info = line.slice(j);
  if (/[\r\u2028\u2029]/.test(info)) return null;
  return { marker: line.slice(i, j), info };
}

/**
 * Inline code spans in one line, as [start, end) pairs: a run of N backticks opens a span that
 * the next run of exactly N backticks closes (CommonMark's rule); a run with no partner is plain
 * text. Linear: runs are bucketed by length and each bucket is walked once, front to back.
 */
export function inlineCodeSpans(line: string): Array<[number, number]> {
  const runs: Array<[number, number]> = []; // [start, length]
  for (let i = line.indexOf('`'); i !== -1; ) {
    let j = i;
    while (j < line.length && line.charCodeAt(j) === 96) j++;
    runs.push([i, j - i]);
    i = line.indexOf('`', j);
  }
  if (runs.length < 2) return [];
  // For each run, the index of the next run of the same length (or -1).
  const next = new Array<number>(runs.length).fill(-1);
  const lastOfLength = new Map<number, number>();
  for (let r = runs.length - 1; r >= 0; r--) {
    const len = runs[r]![1];
    next[r] = lastOfLength.get(len) ?? -1;
    lastOfLength.set(len, r);
  }
  const spans: Array<[number, number]> = [];
  for (let r = 0; r < runs.length; r++) {
    const close = next[r]!;
    if (close === -1) continue;
    const [start] = runs[r]!;
    const [cStart, cLen] = runs[close]!;
    spans.push([start, cStart + cLen]);
    r = close; // runs inside the span are its content
  }
  return spans;
}

/**
 * `text` with fenced code blocks and inline code spans replaced by spaces (newlines kept), so a
 * scan for mentions or links never sees inside code. A fence closes on a line of the same
 * character, at least as long, with nothing but whitespace after it; an unclosed fence runs to
 * the end. A backtick fence's info string may not contain a backtick (then the line is inline
 * code, as in CommonMark).
 */
export function blankCode(text: string): string {
  if (!text.includes('`') && !text.includes('~')) return text;
  const lines = text.split('\n');
  let fence: FenceLine | null = null;
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    const f = parseFenceLine(line);
    if (fence) {
      if (f && f.marker[0] === fence.marker[0] && f.marker.length >= fence.marker.length && f.info.trim() === '') fence = null;
      lines[n] = ' '.repeat(line.length);
      continue;
    }
    if (f && !(f.marker[0] === '`' && f.info.includes('`'))) {
      fence = f;
      lines[n] = ' '.repeat(line.length);
      continue;
    }
    const spans = inlineCodeSpans(line);
    if (spans.length === 0) continue;
    let out = '';
    let last = 0;
    for (const [s, e] of spans) {
      out += line.slice(last, s) + ' '.repeat(e - s);
      last = e;
    }
    lines[n] = out + line.slice(last);
  }
  return lines.join('\n');
}
