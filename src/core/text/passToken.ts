/**
 * The pass token itself, for the pass filter (passScrubber.ts): text folded one code point at a
 * time, every `[PASS]` removed from it — also one that removing another forms — with the original
 * characters carried along, so folding never rewrites what is posted; and the tidying of the
 * places a token was removed from. Rules 1 and 2 of the filter live here; the character classes
 * are shared with its lead-in and body stage. The reaction token `[REACT 👍]` (reactToken.ts) is
 * found and removed by the same automaton, and reported with its emoji.
 */
import { removeInvisible } from './normalize.js';
import { ARG_MAX, REACT_WORD, isArgChar, reactArgument } from './reactToken.js';

// ---------------------------------------------------------------------------------------------
// Character classes

/**
 * Decoration and punctuation that carry no content: dropped with the lead-in, and a reply left
 * with nothing else is a pass (rules 3 and 4 in passScrubber.ts), so `**[PASS]**.` never posts
 * `**.`.
 */
const NOISE_ASCII = new Set('*_~`"\'.,:;!?()[]<>{}|-');
const QUOTES = new Set([0x2018, 0x2019, 0x201c, 0x201d]);

/** JavaScript's `\s` outside ASCII, by code (a regular expression per character is slow). */
function isWsCode(code: number): boolean {
  return code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}

/** ASCII noise (whitespace included) by char code, for the hot loops. */
const ASCII_NOISE = new Uint8Array(128);
for (let c = 9; c <= 13; c++) ASCII_NOISE[c] = 1;
ASCII_NOISE[32] = 1;
for (const c of NOISE_ASCII) ASCII_NOISE[c.charCodeAt(0)] = 1;

export function isWs(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return isWsCode(code);
}
export function isNoise(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code < 128) return ASCII_NOISE[code] === 1;
  return isWsCode(code) || QUOTES.has(code);
}

/** Characters of real text (not noise) in an ASCII run. */
export function realInAscii(run: string): number {
  let n = 0;
  for (let i = 0; i < run.length; i++) if (ASCII_NOISE[run.charCodeAt(i)] !== 1) n++;
  return n;
}

/** Fold one code point: ASCII is its own fold; anything else through NFKC, invisibles dropped. */
function foldPoint(cp: string, code: number): string {
  if (code < 128) return cp;
  let f = FOLDS.get(code);
  if (f === undefined) {
    f = removeInvisible(removeInvisible(cp).normalize('NFKC'));
    if (FOLDS.size >= 4096) FOLDS.clear(); // bounded: text in any script stays fast, memory stays small
    FOLDS.set(code, f);
  }
  return f;
}
const FOLDS = new Map<number, string>();

// ---------------------------------------------------------------------------------------------
// Stage 1: token removal (stack reduction over folded characters, carrying the originals)

/**
 * The tokens, state by state; whitespace is allowed after `[` and between the parts. 0: nothing;
 * 1: `[`; 2–5: `[p` … `[pass`; REACT + 1…5: `[r` … `[react`; ARG + n: n argument characters.
 */
const PATTERN = '[pass]';
const ACCEPT = PATTERN.length;
const REACT = 10;
const ARG = 20;
const ACCEPT_REACT = ARG + ARG_MAX + 1;

/** The state after folded character `f` in state `prev`. */
function step(prev: number, f: string): number {
  if (prev > 0 && isWs(f)) return prev;
  const c = f.toLowerCase();
  if (prev === 1) {
    if (c === 'p') return 2;
    if (c === REACT_WORD[0]) return REACT + 1;
  } else if (prev > 1 && prev < ACCEPT) {
    if (c === PATTERN[prev]) return prev + 1;
  } else if (prev > REACT && prev < REACT + REACT_WORD.length) {
    if (c === REACT_WORD[prev - REACT]) return prev + 1;
  } else if (prev === REACT + REACT_WORD.length || prev > ARG) {
    if (f === ']') return ACCEPT_REACT;
    const n = prev > ARG ? prev - ARG : 0;
    if (n < ARG_MAX && isArgChar(f)) return ARG + n + 1;
  }
  return f === '[' ? 1 : 0;
}

/**
 * A removed token, for the next stage: a pass token (`react` undefined) or a reaction token with
 * its emoji (null when its argument is not one emoji).
 */
export interface Sink {
  char(folded: string, orig: string): void;
  /** A run of ASCII characters none of which can be part of a token: `orig` is `prefix + folded`. */
  run(folded: string, orig: string): void;
  mark(react?: string | null): void;
  /** Originals that fold to nothing and end the text (a variation selector, flag tags, ZWJ). */
  tail(orig: string): void;
}

/** Tokens removed right after a held character: a pass token, and the last reaction's emoji. */
interface Removed {
  pass: boolean;
  react: string | null | undefined;
}

/**
 * Removes every occurrence of the token, including those formed by a removal. Held characters are
 * the ones after the last "barrier" (a character that ends every partial match): nothing at or
 * before a barrier can ever be popped, so it is released at once. `mark()` tells the next stage,
 * in text order, that a token stood there.
 */
export class TokenRemover {
  private hf: string[] = []; // folded char
  private ho: string[] = []; // original text it stands for
  private hs: number[] = []; // automaton state after it
  private hstart: number[] = []; // where the partial token alive after it began
  private hmark: Array<Removed | undefined> = []; // tokens removed right after it

  constructor(private readonly sink: Sink) {}

  push(f: string, o: string): void {
    const n = this.hf.length;
    if (n === 0 && f !== '[') return this.sink.char(f, o); // nothing can start here
    const s = step(n ? this.hs[n - 1]! : 0, f);

    if (s === ACCEPT || s === ACCEPT_REACT) {
      const start = this.hstart[n - 1]!;
      // The emoji: the argument's original characters, with the invisible ones the `]` carries.
      let react: string | null | undefined;
      if (s === ACCEPT_REACT) {
        let raw = '';
        for (let i = start; i < n; i++) if (this.hs[i]! > ARG) raw += this.ho[i]!;
        react = reactArgument(raw + o.slice(0, -1));
      }
      this.truncate(start);
      if (start === 0) return this.sink.mark(react);
      const held = (this.hmark[start - 1] ??= { pass: false, react: undefined });
      if (s === ACCEPT) held.pass = true;
      else held.react = react ?? (held.react === undefined ? null : held.react);
      return;
    }
    if (s === 0) {
      this.flush();
      this.sink.char(f, o);
      return;
    }
    this.hf.push(f);
    this.ho.push(o);
    this.hs.push(s);
    this.hstart.push(s === 1 && f === '[' ? n : this.hstart[n - 1]!);
    this.hmark.push(undefined);
  }

  /**
   * An ASCII run (its own fold). While nothing is held, everything up to the next `[` can never
   * be part of a token and goes on in one piece; the hot path for ordinary text.
   */
  pushAscii(run: string, prefix: string): void {
    let pre = prefix;
    let i = 0;
    while (i < run.length) {
      if (this.hf.length === 0) {
        let k = run.indexOf('[', i);
        if (k === -1) k = run.length;
        if (k > i) {
          const piece = run.slice(i, k);
          this.sink.run(piece, pre + piece);
          pre = '';
          i = k;
          continue;
        }
      }
      this.push(run[i]!, pre + run[i]!);
      pre = '';
      i++;
    }
  }

  /** Originals after the last character: nothing to match, passed on as they are. */
  tail(orig: string): void {
    this.sink.tail(orig);
  }

  /** Release everything held (end of input). */
  flush(): void {
    for (let i = 0; i < this.hf.length; i++) {
      this.sink.char(this.hf[i]!, this.ho[i]!);
      const m = this.hmark[i];
      if (m?.pass) this.sink.mark();
      if (m && m.react !== undefined) this.sink.mark(m.react);
    }
    this.truncate(0);
  }

  private truncate(n: number): void {
    this.hf.length = n;
    this.ho.length = n;
    this.hs.length = n;
    this.hstart.length = n;
    this.hmark.length = n;
  }
}

/** Feeds text into a TokenRemover code point by code point, folded, keeping the originals. */
export class Folder {
  private carry = ''; // a high surrogate split from its pair by a chunk boundary
  private invisible = ''; // originals that fold to nothing, attached to the next character

  constructor(private readonly out: TokenRemover) {}

  push(chunk: string): void {
    let text = this.carry + chunk;
    this.carry = '';
    const last = text.charCodeAt(text.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.carry = text.slice(-1);
      text = text.slice(0, -1);
    }
    for (let i = 0; i < text.length; ) {
      let j = i;
      while (j < text.length && text.charCodeAt(j) < 128) j++;
      if (j > i) {
        this.out.pushAscii(text.slice(i, j), this.invisible);
        this.invisible = '';
        i = j;
        continue;
      }
      const code = text.codePointAt(i)!;
      const cp = code > 0xffff ? text.slice(i, i + 2) : text[i]!;
      i += cp.length;
      const folded = foldPoint(cp, code);
      if (folded === '') {
        this.invisible += cp;
        continue;
      }
      let first = true;
      for (const f of folded) {
        this.out.push(f, first ? this.invisible + cp : '');
        first = false;
      }
      this.invisible = '';
    }
  }

  end(): void {
    if (this.carry) this.out.push(this.carry, this.carry);
    this.carry = '';
    this.out.flush();
    // Invisible characters ride on the next character; at the end there is none, and folding
    // must never rewrite a reply ("❤️" keeps its variation selector, a flag its tag characters).
    if (this.invisible) this.out.tail(this.invisible);
    this.invisible = '';
  }
}

// ---------------------------------------------------------------------------------------------
// The posted text

const WRAP = new Set('*_~`');
const PAIRS: Record<string, string> = { '"': '"', "'": "'", '“': '”', '‘': '’', '(': ')' };

/**
 * Tidy the places where tokens were removed: decoration that wrapped a token on both sides goes
 * with it (`**[PASS]**`), and the double space it leaves is closed. Then make sure the tidying
 * did not join anything into a new token ("[PA**[PASS]**SS]"): remove again, and if some exotic
 * fold still hides one, post the folded text without it.
 */
export function finalText(text: string, marks: number[]): string {
  let result = text;
  if (marks.length) {
    const cuts: Array<[number, number]> = [];
    let floor = 0;
    for (const p of marks) {
      if (p < floor) continue;
      let l = p;
      let r = p;
      const c = text[p - 1];
      if (c !== undefined && WRAP.has(c)) {
        let a = p;
        while (a > floor && p - a < 3 && text[a - 1] === c) a--;
        let b = p;
        while (b < text.length && b - p < 3 && text[b] === c) b++;
        if (p - a === b - p) [l, r] = [a, b];
      } else if (c !== undefined && PAIRS[c] !== undefined && text[p] === PAIRS[c]) [l, r] = [p - 1, p + 1];
      const before = l > 0 ? text[l - 1]! : '\n';
      const after = r < text.length ? text[r]! : '\n';
      if ((before === ' ' || before === '\t' || before === '\n') && (after === ' ' || after === '\t')) r++;
      else if ((before === ' ' || before === '\t') && /[.,;:!?\n]/.test(after)) l--;
      if (l < r) cuts.push([l, r]);
      floor = Math.max(r, p);
    }
    let s = '';
    let last = 0;
    for (const [a, b] of cuts) {
      s += text.slice(last, a);
      last = b;
    }
    result = s + text.slice(last);
    result = removeTokens(result);
  }
  if (containsToken(result)) result = removeTokens(removeInvisible(result.normalize('NFKC')));
  return result.trim();
}

/** `text` with every pass and reaction token removed (folded matching, original characters kept). */
export function removeTokens(text: string): string {
  const parts: string[] = [];
  const folder = new Folder(new TokenRemover({ char: (_f, o) => void parts.push(o), run: (_f, o) => void parts.push(o), mark: () => {}, tail: (o) => void parts.push(o) }));
  folder.push(text);
  folder.end();
  return parts.join('');
}

/** True when `text`, folded, contains a pass or reaction token anywhere. */
export function containsToken(text: string): boolean {
  let found = false;
  const folder = new Folder(new TokenRemover({ char: () => {}, run: () => {}, mark: () => void (found = true), tail: () => {} }));
  folder.push(text);
  folder.end();
  return found;
}
