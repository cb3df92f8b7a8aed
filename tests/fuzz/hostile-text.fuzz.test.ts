/**
 * Every scan over message or reply text is linear. Each scanner (mentions and
 * code spans, pass detection, the stream filter, splitting, Telegram markdown conversion) gets
 * adversarial inputs of 1 MB; its time per KB there must stay within a generous factor of its
 * time per KB on a small input of the same shape, measured in the same run. A quadratic scan
 * fails that by far (×64 at these sizes); no wall-clock constant is asserted anywhere, and what is
 * measured is the process's CPU time, so a busy machine does not count. The results are checked
 * too: speed must not come from skipping work.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toTelegramHtml } from '../../src/channels/telegram/format.js';
import { HandleIndex, findMentions } from '../../src/core/router/mentions.js';
import { judgeReply, passRules } from '../../src/core/router/pass.js';
import { containsToken } from '../../src/core/text/passScrubber.js';
import { passStreamFilter } from '../../src/core/text/passStream.js';
import { splitMessage } from '../../src/core/text/split.js';
import type { AgentDef } from '../../src/core/types.js';

const KB = 1024;
const SMALL = 16 * KB;
const LARGE = 1024 * KB;
/** Allowed growth of time per KB from SMALL to LARGE (quadratic would be ×64). */
const FACTOR = 8;

const agent = (id: string, name: string): AgentDef => ({ id, name, persona: 'p', model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5 });
const AGENTS = [agent('analyst', 'Analyst'), agent('writer', 'Writer'), agent('critic', 'Critic')];
const INDEX = new HandleIndex(AGENTS, { creatives: ['writer', 'critic'] });
const IDS = AGENTS.map((a) => a.id);
const SELF = { id: 'analyst', name: 'Analyst' };
const OTHERS = [
  { id: 'writer', name: 'Writer' },
  { id: 'critic', name: 'Critic' },
];

type Scanner = (text: string) => unknown;
const SCANNERS: Record<string, Scanner> = {
  mentions: (t) => findMentions(t, INDEX, IDS),
  'pass verdict': (t) => judgeReply(t, { agent: SELF, others: OTHERS, mayPass: false }),
  'pass stream': (t) => {
    const f = passStreamFilter(passRules({ agent: SELF, others: OTHERS, mayPass: true }));
    for (let i = 0; i < t.length; i += 512) f(t.slice(i, i + 512));
    return f.end();
  },
  split: (t) => splitMessage(t, 4096),
  'telegram html': (t) => toTelegramHtml(t),
};

/** `unit` repeated to exactly `size` characters. */
const tile = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/** Adversarial shapes, by name: each makes text of a given size. */
const SHAPES: Record<string, (size: number) => string> = {
  backticks: (n) => '`'.repeat(n),
  'backticks then text': (n) => '`'.repeat(n - 12) + 'x @analyst y',
  ats: (n) => '@'.repeat(n),
  'at-words': (n) => tile('@a', n),
  brackets: (n) => '['.repeat(n),
  'nested pass': (n) => {
    const k = Math.floor((n - 6) / 6);
    return '[PA'.repeat(k) + '[PASS]' + 'SS]'.repeat(k);
  },
  'spaced tokens': (n) => tile('[ P A S S ] ', n),
  'open brackets with spaces': (n) => '[' + ' '.repeat(n - 1),
  'unclosed fence': (n) => '```ts\n' + tile('let x = `y`; @analyst\n', n - 6),
  'fence lines': (n) => tile('```\n', n),
  'long word': (n) => 'a'.repeat(n),
  stars: (n) => '*'.repeat(n),
  'link openers': (n) => tile('[x](http://', n),
  'zero-width': (n) => tile('@\u200b[PA\u200bSS]', n),
  'full-width': (n) => tile('＠ａｎａｌｙｓｔ［ＰＡ', n),
};

/**
 * CPU time of this process per KB, not wall-clock time: on a busy machine the process is often
 * not running at all, and a long measurement (the 1 MB side) catches more of those gaps than a
 * short one, which made a linear scan look ×10 slower per KB.
 */
function perKb(scan: Scanner, text: string, reps: number): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < reps; i++) scan(text);
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / 1000 / reps / (text.length / KB);
}

/**
 * Time per KB at `large` over time per KB at `small`, both measured now. The small input is run
 * many times (timer resolution) after a warm-up; each side keeps its best of a few tries, and the
 * large side is retried only while it is over the limit, so a GC pause cannot fail the test.
 */
function growth(scan: Scanner, make: (size: number) => string, small = SMALL, large = LARGE, limit = FACTOR): number {
  const s = make(small);
  const l = make(large);
  for (let i = 0; i < 3; i++) scan(s);
  const reps = Math.max(4, Math.round((large / small) / 8));
  let base = Infinity;
  for (let i = 0; i < 3; i++) base = Math.min(base, perKb(scan, s, reps));
  let big = Infinity;
  for (let i = 0; i < 3 && big / base > limit; i++) big = Math.min(big, perKb(scan, l, 1));
  return big / base;
}

describe('every scanner is linear on adversarial input up to 1 MB', () => {
  for (const [shape, make] of Object.entries(SHAPES)) {
    it(`${shape}`, () => {
      for (const [name, scan] of Object.entries(SCANNERS)) {
        const ratio = growth(scan, make);
        expect(ratio, `${name} on ${shape}: time per KB grew ×${ratio.toFixed(1)} from 16 KB to 1 MB`).toBeLessThanOrEqual(FACTOR);
      }
    }, 120_000);
  }

  it('random mixtures of hostile runs (property)', () => {
    const atom = fc.constantFrom('`', '```\n', '~~~', '@', '@a', '[', '[PA', 'SS]', '[PASS]', '［', '\u200b', '\u00AD', '**', '](http://', '(', ' ', '\n', 'a', '＠', 'Critic:');
    const recipe = fc.array(fc.tuple(atom, fc.integer({ min: 1, max: 2000 })), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(recipe, (parts) => {
        const unit = parts.map(([a, k]) => a.repeat(k)).join('');
        const make = (size: number) => tile(unit, size);
        for (const [name, scan] of Object.entries(SCANNERS)) {
          const ratio = growth(scan, make);
          expect(ratio, `${name} on ${JSON.stringify(parts.map(([a, k]) => `${a}×${k}`))}: ×${ratio.toFixed(1)}`).toBeLessThanOrEqual(FACTOR);
        }
      }),
      { seed: 1313, numRuns: 4 },
    );
  }, 300_000);

  it('self-check: the same measurement flags a quadratic scan (the old code-span regex)', () => {
    const oldStripCode = (text: string) => text.replace(/(`+)[^`\n]+?\1/g, (m) => ' '.repeat(m.length));
    // Smaller sizes than above, so the quadratic scan ends quickly; same ×16 size step as a check.
    expect(growth(oldStripCode, SHAPES.backticks!, 1 * KB, 16 * KB, 4)).toBeGreaterThan(4);
  }, 60_000);
});

describe('results stay right on hostile input', () => {
  it('mentions are still found after a megabyte of backticks, and code is still excluded', () => {
    const junk = '`'.repeat(LARGE);
    // Mid-line, an unpartnered run of backticks is plain text (at a line start it opens a fence).
    expect(findMentions('see ' + junk + ' @analyst hi', INDEX, IDS)).toEqual(['analyst']);
    expect(findMentions(junk + '\n@analyst hi', INDEX, IDS)).toEqual([]);
    expect(findMentions('`@writer` and @critic ' + junk, INDEX, IDS)).toEqual(['critic']);
    expect(findMentions('```\n' + '@writer '.repeat(LARGE / 8) + '\n```\n＠analyst', INDEX, IDS)).toEqual(['analyst']);
    expect(findMentions('@'.repeat(LARGE) + ' @ana\u200blyst', INDEX, IDS)).toEqual(['analyst']);
  });

  it('a megabyte of nested and disguised tokens leaves no token in what is streamed or posted', () => {
    const text = SHAPES['nested pass']!(LARGE) + ' ' + SHAPES['zero-width']!(LARGE / 4) + ' final words';
    const f = passStreamFilter(passRules({ agent: SELF, others: OTHERS, mayPass: false }));
    const shown: string[] = [];
    for (let i = 0; i < text.length; i += 777) {
      const out = f(text.slice(i, i + 777));
      if (out !== null) shown.push(out);
    }
    const { verdict, rest } = f.end();
    if (rest !== null) shown.push(rest);
    expect(containsToken(shown.join(''))).toBe(false);
    expect(verdict.pass).toBe(false);
    expect(containsToken(verdict.text)).toBe(false);
    expect(verdict.text.endsWith('final words')).toBe(true);
  });

  it('splitting a megabyte of backticks and unclosed fences keeps every chunk within the limit and loses nothing', () => {
    for (const text of ['`'.repeat(LARGE), SHAPES['unclosed fence']!(LARGE / 4), SHAPES['fence lines']!(LARGE / 4)]) {
      const chunks = splitMessage(text, 4096);
      for (const c of chunks) expect(c.length).toBeLessThanOrEqual(4096);
      // Every character of the input is in some chunk, in order (added fence lines aside).
      const joined = chunks.join('');
      let at = 0;
      for (let i = 0; i < text.length && at >= 0; i++) {
        at = joined.indexOf(text[i]!, at);
        if (at >= 0) at++;
      }
      expect(at).toBeGreaterThan(0);
      expect(chunks.length).toBeLessThan((text.length / 4096) * 2 + 2); // no flood of tiny chunks
    }
  });

  it('Telegram conversion of hostile lines still renders the markup it can and escapes the rest', () => {
    const html = toTelegramHtml('['.repeat(100_000) + ' **bold** [docs](https://x.test/a) `c<d>`');
    // A link label may contain `[` (as before): the first `[` opens a label running to `docs`.
    expect(html.startsWith('<a href="https://x.test/a">[[[')).toBe(true);
    expect(html.endsWith(' <b>bold</b> [docs</a> <code>c&lt;d&gt;</code>')).toBe(true);
    expect(toTelegramHtml('x' + '['.repeat(100_000) + ' **bold** `c`')).toBe('x' + '['.repeat(100_000) + ' <b>bold</b> <code>c</code>');
    expect(toTelegramHtml('[x](http://'.repeat(10_000))).not.toContain('<a ');
  });
});
