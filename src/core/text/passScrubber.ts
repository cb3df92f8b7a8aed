/**
 * The pass filter: one incremental scrubber that both the live stream and the
 * final reply go through, so what is streamed and what is posted follow the same rules.
 *
 * The rules, in the order they apply:
 * 1. **Matching happens on folded text.** Each code point is folded on its own (NFKC, invisible
 *    characters dropped, see normalize.ts), so `［PASS］`, `[PA\u200bSS]` and `[ＰＡＳＳ]` are the
 *    token; whitespace is allowed between its parts (`[ P A S S ]`), case is ignored. What is
 *    *posted* is the original text minus what was removed: folding never rewrites a reply.
 * 2. **Every token is removed, also ones that removing another one forms** (`[PA[PASS]SS]`).
 *    A stack reduction does this in one pass: characters are pushed with the state of the token
 *    automaton after them, a completed token is popped, and the state falls back to the one saved
 *    under it. Text is released only once no future token can include it.
 * 3. **The lead-in is dropped**: leading decoration and whitespace around tokens, the agent's own
 *    name label (`Analyst:`, `**Analyst**:`, `[Analyst]`) and another participant's label
 *    (`Critic:` written by Analyst; reported so the router can log it).
 * 4. **Verdict.** Nothing left but decoration is a pass (on an addressed turn only once a token or
 *    label was removed: a reply that was decoration alone, such as a run of backticks, is posted
 *    as written); so is the bare word `pass`. A reply whose
 *    last word is the token, after fewer than `fillerMax` characters of real text, is a pass
 *    ("Fine. [PASS]": the model's last word wins; the router allows more filler where passing was
 *    offered than on an addressed turn). A token *before* the text is a pass only where passing is
 *    offered (voluntary turns); on an addressed turn "[PASS]\n\nActually, here is my answer" is
 *    the answer, token stripped.
 * 5. **Streaming shows only what will be posted.** The stream holds text back until `fillerMax`
 *    characters of real text have arrived (after that no token can make the turn a pass), stops
 *    for good when a leading token makes it a pass, and never releases a partial token. The router
 *    then decides with `streamed` in mind, so streamed text is always posted.
 * 6. **The reaction token** `[REACT 👍]` (reactToken.ts) is matched and removed like `[PASS]`
 *    (rules 1, 2, 3 and 5: never streamed, never posted) but is not a pass token: next to text it
 *    is stripped and the text is the reply, wherever it stands. A reply that posts nothing (rule 4)
 *    and carried one reacts (`reaction`: the last one's emoji); where reacting is not offered the
 *    router decides what that means (core/router/pass.ts).
 *
 * Everything is linear in the input: each character is folded once, pushed and popped at most
 * once, and looked at a bounded number of times by the label matcher.
 */
import { removeInvisible } from './normalize.js';
import { BoundedMap } from '../lib/BoundedMap.js';
import { Folder, TokenRemover, finalText, isNoise, isWs, realInAscii, type Sink } from './passToken.js';

export { containsToken, removeTokens } from './passToken.js';

/** Default for `fillerMax` (the router sets it per turn: core/router/pass.ts). */
const PASS_FILLER_DEFAULT = 120;

export interface Speaker {
  id: string;
  name: string;
}

export interface ScrubOptions {
  /** The replying agent: its own name label is stripped. */
  self?: Speaker | undefined;
  /** Other participants: their name labels are stripped too (and reported). */
  others?: readonly Speaker[] | undefined;
  /** A token before any text makes the reply a pass (turns where passing is offered). */
  leadingTokenPasses?: boolean | undefined;
  /**
   * Characters of real text below which a trailing token makes the reply a pass; the stream holds
   * back this much. 0 turns the trailing-token rule (and the hold) off.
   */
  fillerMax?: number | undefined;
  /**
   * Whether a reply of nothing but decoration (no token, no label, no word) is a pass. True where
   * passing is offered; on an addressed turn a person asked, and a reply of only backticks or
   * dots is what the agent said, so it is posted as written.
   */
  decorationPasses?: boolean | undefined;
}

export interface ScrubVerdict {
  pass: boolean;
  /** The text to post (original characters, tokens and labels removed, trimmed); '' for a pass. */
  text: string;
  /** Names of other participants whose label the reply started with (stripped). */
  foreignLabels: string[];
  /** A reply that posts nothing (`pass`) but carried `[REACT x]`: the emoji (the last one's). */
  reaction: string | null;
}

// ---------------------------------------------------------------------------------------------
// Stage 2 (stage 1, token removal, is passToken.ts): lead-in (labels, leading tokens, bare
// "pass") and body (counting, trailing token)

/** Allowed between a removed lead-in and the text that follows it (never a list or quote marker). */
const CLOSERS = new Set('*_~`"\'“”‘’.,:;!?)]}');


interface LabelNode {
  next: Map<string, LabelNode>;
  /** A complete label ends here: whose. */
  who: { name: string; own: boolean } | null;
}

/**
 * Tries by the speakers they cover. A scrubber is made for every turn (twice when it streams) and
 * the participants rarely change, so building the trie each time was most of the filter's cost
 * (and of the garbage per turn). Tries are never changed once built; the cache is bounded.
 */
const TRIE_CACHE_MAX = 512;
const trieCache = new BoundedMap<string, LabelNode | null>(TRIE_CACHE_MAX);

function cachedLabelTrie(self: Speaker | undefined, others: readonly Speaker[]): LabelNode | null {
  const key = JSON.stringify([self ? [self.id, self.name] : null, others.map((o) => [o.id, o.name])]);
  let trie = trieCache.get(key);
  if (trie === undefined) {
    trie = labelTrie(self, others);
    trieCache.set(key, trie);
  }
  return trie;
}

/** A trie of every label form (lower-cased, folded), walked one character at a time. */
function labelTrie(self: Speaker | undefined, others: readonly Speaker[]): LabelNode | null {
  const root: LabelNode = { next: new Map(), who: null };
  const add = (form: string, who: { name: string; own: boolean }) => {
    let node = root;
    for (const c of form) {
      let nx = node.next.get(c);
      if (!nx) node.next.set(c, (nx = { next: new Map(), who: null }));
      node = nx;
    }
    node.who ??= who;
  };
  const speakers = [...(self ? [{ s: self, own: true }] : []), ...others.map((s) => ({ s, own: false }))];
  for (const { s, own } of speakers) {
    const who = { name: s.name, own };
    for (const raw of new Set([s.name, s.id, '@' + s.id])) {
      const n = removeInvisible(raw.normalize('NFKC')).toLowerCase();
      if (!n.trim()) continue;
      add(`[${n}]`, who);
      for (const w of ['', '**', '__', '*', '_']) {
        add(`${w}${n}${w}:`, who);
        add(`${w}${n}${w} :`, who);
        if (w) add(`${w}${n}:${w}`, who);
      }
    }
  }
  return root.next.size ? root : null;
}

export class PassScrubber {
  private readonly folder: Folder;
  private readonly trie: LabelNode | null;
  private readonly leadingTokenPasses: boolean;
  private readonly fillerMax: number;
  private readonly decorationPasses: boolean;

  // lead-in
  private inBody = false;
  private lf: string[] = []; // folded lead-in characters
  private lo: string[] = []; // their originals
  private cur = 0; // next lead-in character to classify
  private seg = 0; // where a label may start (-1: not here)
  private lastMarker = -1; // lead-in index just after the last token or label
  private bare = -1; // start of a complete bare "pass" followed only by decoration so far
  private leadToken = false;
  private readonly foreign: string[] = [];

  // body
  private out: string[] = []; // originals of posted text, in order
  private outLen = 0;
  private marks: number[] = []; // offsets into the joined output where a token was removed
  private real = 0; // characters of real text in the body
  private trailing = false; // a token came after the last real character
  private reaction: string | null = null; // the last reaction token's emoji
  private shown = 0; // out[] entries already streamed
  private verdict: ScrubVerdict | null = null;
  private tailOrig = ''; // invisible characters that end the text, added once the lead-in is settled

  constructor(opts: ScrubOptions = {}) {
    this.trie = cachedLabelTrie(opts.self, opts.others ?? []);
    this.leadingTokenPasses = opts.leadingTokenPasses ?? true;
    this.fillerMax = opts.fillerMax ?? PASS_FILLER_DEFAULT;
    this.decorationPasses = opts.decorationPasses ?? true;
    const stage: Sink = { char: (f, o) => this.char(f, o), run: (f, o) => this.run(f, o), mark: (r) => this.mark(r), tail: (o) => (this.tailOrig += o) };
    this.folder = new Folder(new TokenRemover(stage));
  }

  /** Feed a chunk; returns the text that may be shown now ('' when nothing). */
  push(chunk: string): string {
    this.folder.push(chunk);
    return this.take();
  }

  /** End of input: the verdict. After it, `rest()` gives the unstreamed tail. */
  finish(): ScrubVerdict {
    if (!this.verdict) {
      this.folder.end();
      if (!this.inBody) this.classify(true);
      if (!this.inBody && !this.decorationPasses && !this.leadToken && this.lastMarker < 0 && this.bare < 0) {
        // Only decoration and no token anywhere: the whole reply is its text.
        const kept = (this.lo.join('') + this.tailOrig).trim();
        if (kept) {
          this.out = [kept];
          this.verdict = { pass: false, text: kept, foreignLabels: [], reaction: null };
          return this.verdict;
        }
      }
      if (this.inBody && this.tailOrig) {
        this.out.push(this.tailOrig);
        this.outLen += this.tailOrig.length;
      }
      const text = this.isPass() ? '' : finalText(this.out.join(''), this.marks);
      // Tidying can leave nothing ("[PA**[PASS]**SS]"): that is a pass too.
      this.verdict = { pass: text === '', text, foreignLabels: [...this.foreign], reaction: text === '' ? this.reaction : null };
    }
    return this.verdict;
  }

  /** After finish(): text not streamed yet ('' for a pass). */
  rest(): string {
    if (this.finish().pass) return '';
    const s = this.out.slice(this.shown).join('');
    this.shown = this.out.length;
    return s;
  }

  /** True once any text was released to the stream. */
  get streamed(): boolean {
    return this.shown > 0;
  }

  private isPass(): boolean {
    if (!this.inBody || this.real === 0) return true;
    if (this.leadToken && this.leadingTokenPasses) return true;
    return this.trailing && this.real < this.fillerMax;
  }

  private take(): string {
    if (!this.inBody || (this.leadToken && this.leadingTokenPasses) || this.real < this.fillerMax) return '';
    if (this.shown === this.out.length) return '';
    const s = this.out.slice(this.shown).join('');
    this.shown = this.out.length;
    return s;
  }

  // --- stage 2 input

  private char(f: string, o: string): void {
    if (this.inBody) return this.body(f, o);
    this.lf.push(f);
    this.lo.push(o);
    this.classify(false);
  }

  private run(f: string, o: string): void {
    if (!this.inBody) {
      // The lead-in goes character by character; once the text has begun, the rest in one piece.
      const pre = o.length - f.length;
      let k = 0;
      for (; k < f.length && !this.inBody; k++) this.char(f[k]!, k === 0 ? o.slice(0, pre + 1) : f[k]!);
      if (k === f.length) return;
      f = f.slice(k);
      o = f;
    }
    this.out.push(o);
    this.outLen += o.length;
    const r = realInAscii(f);
    if (r > 0) {
      this.real += r;
      this.trailing = false;
    }
  }

  /** A token was removed here: `[PASS]` (`react` undefined) or `[REACT x]` (its emoji, or null). */
  private mark(react?: string | null): void {
    const pass = react === undefined;
    if (react) this.reaction = react;
    if (!this.inBody) {
      // "pass [REACT 👍]": still the bare word alone, the token gone.
      if (!pass && this.bare >= 0) return;
      // A token ends any label or bare "pass" still being read: settle what is pending first.
      if (this.bare >= 0) this.startBody(this.bare);
      else this.classify(true);
    }
    if (this.inBody) {
      this.marks.push(this.outLen);
      if (pass) this.trailing = true;
      return;
    }
    if (pass) this.leadToken = true;
    this.lastMarker = this.seg = this.lf.length;
  }

  private body(f: string, o: string): void {
    if (o) {
      this.out.push(o);
      this.outLen += o.length;
    }
    if (!isNoise(f)) {
      this.real++;
      this.trailing = false;
    }
  }

  /**
   * Classify lead-in characters from `cur`. `settle` means no more characters will come before
   * a decision is due (end of input or a token), so nothing may wait for more.
   */
  private classify(settle: boolean): void {
    const lf = this.lf;
    while (this.cur < lf.length && !this.inBody) {
      const i = this.cur;
      const c = lf[i]!;
      if (this.bare >= 0) {
        if (isNoise(c)) this.cur++;
        else this.startBody(this.bare);
        continue;
      }
      if (i === this.seg && this.trie && !isWs(c)) {
        const m = this.matchLabel(i, settle);
        if (m === 'wait') return;
        if (m) {
          if (!m.own) this.foreign.push(m.name);
          this.cur = this.lastMarker = this.seg = i + m.length;
          continue;
        }
        this.seg = -1;
      }
      if (isNoise(c)) {
        if (i === this.seg) this.seg++; // a label may still follow whitespace
        this.cur++;
        continue;
      }
      // A real character: the bare word "pass", or the text begins.
      const word = lf.slice(i, i + 4).join('').toLowerCase();
      if ('pass'.startsWith(word) && word.length < 4 && !settle) return;
      if (word === 'pass') {
        this.bare = i;
        this.cur = i + 4;
        continue;
      }
      this.startBody(i);
    }
  }

  /** Longest label at `i`, or 'wait' while the input could still complete a longer one. */
  private matchLabel(i: number, settle: boolean): { length: number; name: string; own: boolean } | 'wait' | null {
    let node: LabelNode | undefined = this.trie!;
    let best: { length: number; name: string; own: boolean } | null = null;
    let j = i;
    for (; j < this.lf.length; j++) {
      node = node.next.get(this.lf[j]!.toLowerCase());
      if (!node) break;
      if (node.who) best = { length: j - i + 1, ...node.who };
    }
    if (node && j === this.lf.length && node.next.size > 0 && !settle) return 'wait';
    if (!best) return null;
    // Whitespace after a label belongs to it.
    let k = i + best.length;
    while (k < this.lf.length && isWs(this.lf[k]!)) k++;
    return { ...best, length: k - i };
  }

  private startBody(realStart: number): void {
    let from = 0;
    if (this.lastMarker >= 0) {
      from = this.lastMarker;
      while (from < realStart && (CLOSERS.has(this.lf[from]!) || isWs(this.lf[from]!))) from++;
    }
    while (from < realStart && isWs(this.lf[from]!)) from++;
    this.inBody = true;
    this.bare = -1;
    const lf = this.lf;
    const lo = this.lo;
    this.lf = [];
    this.lo = [];
    for (let k = from; k < lf.length; k++) this.body(lf[k]!, lo[k]!);
  }
}

/** Run the whole reply through a scrubber: the verdict the router posts by. */
export function scrubReply(text: string, opts: ScrubOptions = {}): ScrubVerdict {
  const s = new PassScrubber(opts);
  s.push(text);
  return s.finish();
}
