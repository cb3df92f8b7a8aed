/**
 * Streamed text (delta events) arrives before the router knows whether a reply is a pass. The
 * literal `[PASS]` token must never reach a channel (SPEC §5), so the router holds streamed
 * text back while it could still turn into the token: a turn whose text starts with `[PASS]` is
 * never streamed, the token is cut out anywhere else, and a chunk ending in what may be the
 * start of the token waits for the next chunk.
 */
const TOKEN = '[PASS]';
/** Decoration allowed around a leading token (`**[PASS]**`, `` `[PASS]` ``, ...). */
const LEADING_NOISE = /^[\s*_`"'.,:;!-]+/;

/**
 * A filter for one turn's stream: feed it each chunk, send what it returns (null = nothing yet).
 * Created per turn by the router, so every consumer of delta events gets clean text.
 */
export function passStreamFilter(): (chunk: string) => string | null {
  let state: 'undecided' | 'open' | 'pass' = 'undecided';
  let pending = '';
  return (chunk) => {
    if (state === 'pass') return null;
    pending += chunk;
    if (state === 'undecided') {
      const lead = pending.replace(LEADING_NOISE, '');
      if (lead === '') return null;
      const head = lead.slice(0, TOKEN.length).toUpperCase();
      if (head === TOKEN) {
        state = 'pass';
        pending = '';
        return null;
      }
      if (TOKEN.startsWith(head)) return null;
      state = 'open';
    }
    const text = pending.replace(/\[PASS\]/gi, '');
    let hold = 0;
    for (let k = Math.min(TOKEN.length - 1, text.length); k > 0; k--) {
      if (TOKEN.startsWith(text.slice(-k).toUpperCase())) {
        hold = k;
        break;
      }
    }
    pending = text.slice(text.length - hold);
    const out = text.slice(0, text.length - hold);
    return out === '' ? null : out;
  };
}
