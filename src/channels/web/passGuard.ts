/**
 * Streamed text (delta events) arrives before the router knows whether a reply is a pass. The
 * literal `[PASS]` token must never reach a channel (SPEC §5), so the web feed holds streamed
 * text back while it could still turn into the token: a turn whose text starts with `[PASS]` is
 * never streamed, the token is cut out anywhere else, and a chunk ending in what may be the
 * start of the token waits for the next chunk.
 */
const TOKEN = '[PASS]';
/** Decoration allowed around a leading token (`**[PASS]**`, `` `[PASS]` ``, ...). */
const LEADING_NOISE = /^[\s*_`"'.,:;!-]+/;
/** Turns remembered at most (a turn is forgotten when its agent stops typing). */
const MAX_TURNS = 500;

interface TurnState {
  groupId: string;
  agentId: string;
  /** 'open' once the text can no longer be a leading pass token. */
  state: 'undecided' | 'open' | 'pass';
  pending: string;
}

export class PassGuard {
  private readonly turns = new Map<string, TurnState>();

  /** The text to stream for this chunk, or null to send nothing (yet). */
  filter(groupId: string, agentId: string, turnId: string, chunk: string): string | null {
    let s = this.turns.get(turnId);
    if (!s) {
      s = { groupId, agentId, state: 'undecided', pending: '' };
      this.turns.set(turnId, s);
      if (this.turns.size > MAX_TURNS) this.turns.delete(this.turns.keys().next().value!);
    }
    if (s.state === 'pass') return null;
    s.pending += chunk;
    if (s.state === 'undecided') {
      const lead = s.pending.replace(LEADING_NOISE, '');
      if (lead === '') return null;
      const head = lead.slice(0, TOKEN.length).toUpperCase();
      if (head === TOKEN) {
        s.state = 'pass';
        s.pending = '';
        return null;
      }
      if (TOKEN.startsWith(head)) return null;
      s.state = 'open';
    }
    const text = s.pending.replace(/\[PASS\]/gi, '');
    let hold = 0;
    for (let k = Math.min(TOKEN.length - 1, text.length); k > 0; k--) {
      if (TOKEN.startsWith(text.slice(-k).toUpperCase())) {
        hold = k;
        break;
      }
    }
    s.pending = text.slice(text.length - hold);
    const out = text.slice(0, text.length - hold);
    return out === '' ? null : out;
  }

  /** The agent stopped typing in this group: its turns are over. */
  endTurns(groupId: string, agentId: string): void {
    for (const [id, s] of this.turns) if (s.groupId === groupId && s.agentId === agentId) this.turns.delete(id);
  }

  get size(): number {
    return this.turns.size;
  }
}
