/**
 * The reaction token `[REACT 👍]` in the pass filter (core/text/reactToken.ts, passToken.ts,
 * passScrubber.ts rule 6, core/router/pass.ts). Rules under test:
 * - matched on folded text like `[PASS]`: full-width, zero-width, spaced out, any case; its
 *   argument is one emoji read from the original characters (joiners, selectors, tags kept);
 * - removed wherever it stands, never streamed (a partial `[REA` at a chunk boundary is held
 *   back), never posted; a token whose argument is not one emoji is removed too and reacts with
 *   nothing; `[Reactions](…)` and `[react to this]` are ordinary text;
 * - a reply that posts nothing but carried the token reacts where reacting is offered; next to
 *   text the token is stripped and the text is the reply; where reacting is not offered it is a
 *   pass on a voluntary turn, and on an addressed turn the emoji is the answer;
 * - the scan stays linear: a megabyte of `[REACT` fragments costs per KB what 16 KB does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeReply, passRules } from '../../src/core/router/pass.js';
import { containsToken, removeTokens } from '../../src/core/text/passScrubber.js';
import { passStreamFilter } from '../../src/core/text/passStream.js';
import { reactArgument, reactToken } from '../../src/core/text/reactToken.js';

const ANALYST = { id: 'analyst', name: 'Analyst' };
const OTHERS = [{ id: 'writer', name: 'Writer' }];
/** A voluntary turn where reacting is offered. */
const offered = (text: string) => judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass: true, mayReact: true });
/** A voluntary turn without a message to react to. */
const notOffered = (text: string) => judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass: true });
const addressed = (text: string) => judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass: false });

function stream(chunks: string[], mayPass: boolean) {
  const f = passStreamFilter(passRules({ agent: ANALYST, others: OTHERS, mayPass }));
  const shown = chunks.map(f).filter((x): x is string => x !== null);
  const streamed = f.streamed;
  const { verdict, rest } = f.end();
  if (rest !== null) shown.push(rest);
  return { shown, streamed, verdict };
}

/** `[REACT` in any of the forms the filter folds. */
const REACTISH = /[[［]\s*r\s*e\s*a\s*c\s*t/i;

describe('the token and its disguises', () => {
  it.each([
    ['[REACT 👍]', '👍'],
    ['［REACT 👍］', '👍'],
    ['[re act 👍]', '👍'],
    ['[ R E A C T 👍 ]', '👍'],
    ['[react👍]', '👍'],
    ['[ＲＥＡＣＴ 🎉]', '🎉'],
    ['[RE\u200bACT\u200b 👍\u2060]', '👍'],
    ['[REA\u00ADCT 👍]', '👍'],
    ['**[REACT 🎉]**', '🎉'],
    ['  [REACT 🙏]  \n', '🙏'],
    ['Analyst: [REACT 👀]', '👀'],
    ['pass [REACT 👍]', '👍'],
    ['[PASS] [REACT 👍]', '👍'],
  ])('%j is a reaction with %j where reacting is offered', (t, emoji) => {
    expect(offered(t)).toMatchObject({ pass: true, text: '', reaction: emoji });
    expect(containsToken(t)).toBe(true);
  });

  it.each(['❤️', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '1️⃣', '🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}', '‼️'])('the argument is read from the original characters: %j', (emoji) => {
    expect(offered(reactToken(emoji)).reaction).toBe(emoji);
    expect(offered(`[REACT ${emoji} ]`).reaction).toBe(emoji);
  });

  it('an argument that is not one emoji: removed, never posted, reacts with nothing', () => {
    for (const t of ['[REACT 👍🎉]', '[REACT]', '[REACT 👍 🎉]', '[REACT 1]', '[REACT :)]']) {
      expect(offered(t), t).toMatchObject({ pass: true, text: '', reaction: null });
      expect(addressed(t), t).toMatchObject({ text: '' });
      expect(removeTokens(`a ${t} b`)).toBe('a  b');
    }
    expect(reactArgument('👍🎉')).toBeNull();
    expect(reactArgument(' \u200b👍 ')).toBe('👍');
  });

  it('words after "[react" are ordinary text, not the token', () => {
    for (const t of ['[Reactions](https://example.com) are fast', 'please [react to this] later', '[REACT thumbsup]', '[reaction]']) {
      expect(offered(t)).toMatchObject({ pass: false, text: t, reaction: null });
      expect(containsToken(t)).toBe(false);
    }
  });
});

describe('removal: text next to the token is the reply', () => {
  it.each([
    ['Nice point. [REACT 👍]', 'Nice point.'],
    ['[REACT 👍] Nice point.', 'Nice point.'],
    ['Revenue is up ［REACT 📈］ and margins held', 'Revenue is up and margins held'],
    ['Revenue is up **[REACT 📈]** and margins held', 'Revenue is up and margins held'],
  ])('%j posts %j on every kind of turn', (t, want) => {
    for (const judge of [offered, notOffered, addressed]) expect(judge(t)).toMatchObject({ pass: false, text: want, reaction: null });
  });

  it('nested tokens are removed in one pass, the last reaction counts', () => {
    expect(offered('[REA[REACT 👍]CT 🎉]')).toMatchObject({ pass: true, reaction: '🎉' });
    expect(offered('[REACT 👍] [REACT 🎉]').reaction).toBe('🎉');
    expect(removeTokens('a [RE[PASS]ACT 👍] b')).toBe('a  b');
    expect(addressed('[RE[PASS]ACT 👍] fine')).toMatchObject({ pass: false, text: 'fine' });
  });
});

describe('where reacting is not offered', () => {
  it('a voluntary turn without a message to react to: the token alone is a pass', () => {
    expect(notOffered('[REACT 👍]')).toMatchObject({ pass: true, text: '', reaction: null });
  });

  it('an addressed turn: the emoji is the answer, never the token', () => {
    expect(addressed('[REACT 👍]')).toMatchObject({ pass: false, text: '👍', reaction: null });
    expect(addressed('**［re act ❤️］**')).toMatchObject({ pass: false, text: '❤️', reaction: null });
  });
});

describe('never streamed', () => {
  it('a partial "[REA" at a chunk boundary is held back, then removed', () => {
    const long = 'The numbers hold up well this quarter, and the second half looks stronger still than the first; ';
    const { shown, verdict } = stream([long + 'we should ', 'keep going [REA', 'CT 👍] for sure.'], false);
    expect(shown.join('')).not.toMatch(REACTISH);
    expect(shown.some((s) => s.endsWith('[REA') || s.includes('['))).toBe(false);
    expect(verdict).toMatchObject({ pass: false, text: `${long}we should keep going for sure.` });
  });

  it('a reply that is only the token streams nothing, however it is chunked', () => {
    const t = '[REACT 👍]';
    for (let i = 0; i <= t.length; i++) {
      for (const mayPass of [true, false]) {
        const { shown, streamed, verdict } = stream([t.slice(0, i), t.slice(i)], mayPass);
        expect(shown, `${i} ${mayPass}`).toEqual([]);
        expect(streamed).toBe(false);
        expect(verdict).toMatchObject({ pass: true, reaction: '👍' });
      }
    }
  });

  it('no model output and no chunking lets a reaction token through the stream or the post (property)', () => {
    const piece = fc.oneof(
      fc.constantFrom('[', ']', '[RE', 'ACT', '[REACT', ' 👍', '👍]', '[REACT 👍]', '［', '］', 'ＲＥ', '\u200b', ' ', '\n', '**', '[PASS]', 'ok', 'Sure!', '🎉', '\u200d'),
      fc.string({ unit: 'grapheme', maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 8 }), fc.boolean(), (parts, cuts, mayPass) => {
        const text = parts.join('');
        const chunks: string[] = [];
        for (let i = 0, k = 0; i < text.length; k++) {
          const n = cuts[k % cuts.length]!;
          chunks.push(text.slice(i, i + n));
          i += n;
        }
        const { shown, streamed, verdict } = stream(chunks, mayPass);
        expect(containsToken(shown.join(''))).toBe(false);
        expect(containsToken(verdict.text)).toBe(false);
        const final = judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass, streamed, mayReact: mayPass });
        // Nothing streamed is taken back: a streamed turn is posted, never a reaction.
        if (streamed) expect(final).toMatchObject({ pass: false, reaction: null });
        if (final.reaction !== null) expect(final.text).toBe('');
      }),
      { seed: 1401, numRuns: 1000 },
    );
  });
});

describe('linear on a megabyte of [REACT fragments', () => {
  const KB = 1024;
  /** CPU time of this process per KB (not wall clock: a busy machine does not count). */
  function perKb(scan: (t: string) => unknown, text: string, reps: number): number {
    const t0 = process.cpuUsage();
    for (let i = 0; i < reps; i++) scan(text);
    const used = process.cpuUsage(t0);
    return (used.user + used.system) / 1000 / reps / (text.length / KB);
  }
  function growth(scan: (t: string) => unknown, make: (n: number) => string): number {
    const s = make(16 * KB);
    const l = make(1024 * KB);
    for (let i = 0; i < 3; i++) scan(s);
    let base = Infinity;
    for (let i = 0; i < 3; i++) base = Math.min(base, perKb(scan, s, 8));
    let big = Infinity;
    for (let i = 0; i < 3 && big / base > 8; i++) big = Math.min(big, perKb(scan, l, 1));
    return big / base;
  }
  const tile = (unit: string, n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
  const shapes: Record<string, (n: number) => string> = {
    'open [REACT': (n) => tile('[REACT', n),
    'open [REACT with an emoji': (n) => tile('[REACT 👍', n),
    'nested': (n) => {
      const k = Math.floor(n / 16);
      return '[REA'.repeat(k) + '[REACT 👍]' + 'CT 👍]'.repeat(k);
    },
    'long arguments': (n) => tile('[REACT ' + '1'.repeat(20), n),
    'spaced, zero-width': (n) => tile('[ R E\u200b A C T ', n),
  };
  const scanners: Record<string, (t: string) => unknown> = {
    verdict: (t) => judgeReply(t, { agent: ANALYST, others: OTHERS, mayPass: true, mayReact: true }),
    stream: (t) => {
      const f = passStreamFilter(passRules({ agent: ANALYST, others: OTHERS, mayPass: true }));
      for (let i = 0; i < t.length; i += 512) f(t.slice(i, i + 512));
      return f.end();
    },
  };
  for (const [shape, make] of Object.entries(shapes)) {
    it(shape, () => {
      for (const [name, scan] of Object.entries(scanners)) {
        const ratio = growth(scan, make);
        expect(ratio, `${name} on ${shape}: time per KB grew ×${ratio.toFixed(1)} from 16 KB to 1 MB`).toBeLessThanOrEqual(8);
      }
      // And the work was done: the megabyte reads as it should.
      expect(containsToken(make(1024 * KB))).toBe(shape === 'nested');
    }, 120_000);
  }
});
