/**
 * Splitting a long reply into platform-sized messages (SPEC §7): cut at paragraph, then line,
 * then word boundaries; a code fence open at a cut is closed at the end of that chunk and
 * re-opened (with its language tag) at the start of the next, so every chunk renders on its own.
 */

const FENCE = /^\s{0,3}(`{3,}|~{3,})(.*)$/;

/** Split `text` into chunks of at most `limit` characters. Short text comes back as one chunk. */
export function splitMessage(text: string, limit: number): string[] {
  if (limit < 32) throw new RangeError('splitMessage: limit must be at least 32');
  if (text.length <= limit) return [text];
  const chunks: string[] = [];
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
    const reserve = Math.max(open?.marker.length ?? 3, longestFenceAhead(text, pos, limit)) + 1;
    const budget = Math.max(16, limit - prefix.length - reserve);
    const cut = findCut(text, pos, budget);
    const body = text.slice(pos, cut);
    const state = fenceStateAfter(body, open);
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
function fenceStateAfter(body: string, open: { opener: string; marker: string } | null): { opener: string; marker: string } | null {
  let state = open;
  for (const line of body.split('\n')) {
    const m = FENCE.exec(line);
    if (!m) continue;
    const marker = m[1]!;
    if (!state) state = { opener: line.trim(), marker };
    else if (marker[0] === state.marker[0] && marker.length >= state.marker.length && m[2]!.trim() === '') state = null;
  }
  return state;
}

function longestFenceAhead(text: string, pos: number, limit: number): number {
  let longest = 3;
  const re = /(`{3,}|~{3,})/g;
  re.lastIndex = pos;
  for (let m = re.exec(text); m && m.index < pos + limit; m = re.exec(text)) longest = Math.max(longest, m[1]!.length);
  return longest;
}

/**
 * The line that re-opens a fence in the next chunk: the marker and its language tag (first word
 * of the info string), short enough that the chunk still has room for text under any limit.
 */
function reopener(open: { opener: string; marker: string }, limit: number): string {
  const lang = open.opener.trim().slice(open.marker.length).trim().split(/\s+/)[0] ?? '';
  return open.marker + lang.slice(0, Math.max(0, Math.floor(limit / 4) - open.marker.length));
}
