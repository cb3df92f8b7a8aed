/**
 * Splitting a long reply into platform-sized messages: cut at paragraph, then line,
 * then word boundaries; a code fence open at a cut is closed at the end of that chunk and
 * re-opened (with its language tag) at the start of the next, so every chunk renders on its own.
 */

import { parseFenceLine } from './markdownScan.js';

// Linear throughout: fence lines are parsed by hand, and each chunk looks only at its
// own window of the text, so a reply of any size costs time in proportion to its length.

/**
 * The longest run of backticks or tildes that opens a fence here. Longer runs are text: a reply
 * of a megabyte of backticks would otherwise be one "fence" whose closing marker needs almost a
 * whole chunk, and it came out as 65,000 messages of 16 backticks each.
 */
function maxFenceMarker(limit: number): number {
  return Math.max(16, Math.floor(limit / 4));
}

/** Split `text` into chunks of at most `limit` characters. Short text comes back as one chunk. */
export function splitMessage(text: string, limit: number): string[] {
  if (limit < 32) throw new RangeError('splitMessage: limit must be at least 32');
  if (text.length <= limit) return [text];
  const chunks: string[] = [];
  const runs = new FenceRuns(text);
  const maxMarker = maxFenceMarker(limit);
  let pos = 0;
  let open: { opener: string; marker: string } | null = null;
  while (pos < text.length) {
    const prefix = open ? reopener(open, limit) + '\n' : '';
    const rest = text.length - pos;
    if (prefix.length + rest <= limit) {
      chunks.push(prefix + text.slice(pos));
      break;
    }
    // Reserve room for a closing fence in case the chunk ends inside a code block.
    const reserve = Math.max(open?.marker.length ?? 3, runs.longestIn(pos, pos + limit, maxMarker)) + 1;
    const budget = Math.max(16, limit - prefix.length - reserve);
    const cut = findCut(text, pos, budget);
    const body = text.slice(pos, cut);
    const state = fenceStateAfter(body, open, maxMarker);
    let chunk = prefix + body;
    if (state) chunk += (body.endsWith('\n') ? '' : '\n') + state.marker;
    chunks.push(chunk);
    open = state;
    pos = cut;
  }
  return chunks;
}

/** Best cut position in text[pos, pos+budget]: paragraph > line > space > hard. */
function findCut(text: string, pos: number, budget: number): number {
  const end = pos + budget;
  const window = text.slice(pos, end);
  const para = window.lastIndexOf('\n\n');
  if (para >= budget * 0.5) return pos + para + 2;
  const line = window.lastIndexOf('\n');
  if (line >= budget * 0.3) return pos + line + 1;
  const space = window.lastIndexOf(' ');
  if (space >= budget * 0.3) return pos + space + 1;
  // Hard cut; never split a surrogate pair.
  const code = text.charCodeAt(end - 1);
  return code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

/** The fence still open after `body`, given the one open before it. */
function fenceStateAfter(body: string, open: { opener: string; marker: string } | null, maxMarker: number): { opener: string; marker: string } | null {
  let state = open;
  for (const line of body.split('\n')) {
    const m = parseFenceLine(line);
    if (!m) continue;
    const marker = m.marker;
    if (!state) {
      if (marker.length <= maxMarker) state = { opener: line.trim(), marker };
    } else if (marker[0] === state.marker[0] && marker.length >= state.marker.length && m.info.trim() === '') state = null;
  }
  return state;
}

/**
 * Runs of 3+ backticks or tildes, found once; a chunk asks for the longest one within its window
 * (cut at the window's edges: only what can land in this chunk needs a closing marker here).
 * Windows only move forward, so a cursor skips the runs left behind and each question costs only
 * the runs inside the window, never a rescan of a long run.
 */
class FenceRuns {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private first = 0;

  constructor(text: string) {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 96 && c !== 126) continue;
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) === c) j++;
      if (j - i >= 3) {
        this.starts.push(i);
        this.ends.push(j);
      }
      i = j - 1;
    }
  }

  /** Each run counts with the part inside [from, to), at most `cap` (a longer run opens no fence). */
  longestIn(from: number, to: number, cap: number): number {
    while (this.first < this.starts.length && this.ends[this.first]! <= from) this.first++;
    let longest = 3;
    for (let k = this.first; k < this.starts.length && this.starts[k]! < to; k++) {
      longest = Math.max(longest, Math.min(cap, Math.min(this.ends[k]!, to) - Math.max(this.starts[k]!, from)));
    }
    return longest;
  }
}

/**
 * The line that re-opens a fence in the next chunk: the marker and its language tag (first word
 * of the info string), short enough that the chunk still has room for text under any limit.
 */
function reopener(open: { opener: string; marker: string }, limit: number): string {
  const lang = open.opener.trim().slice(open.marker.length).trim().split(/\s+/)[0] ?? '';
  return open.marker + lang.slice(0, Math.max(0, Math.floor(limit / 4) - open.marker.length));
}
