/**
 * The pass filter is exact. The token is found after folding (full-width,
 * zero-width, spaced out), every occurrence is removed from streamed and posted text (also ones a
 * removal forms), nothing streamed is later turned into a pass, an addressed turn keeps its
 * answer next to a token, and another participant's name label is stripped and logged.
 *
 * Rules under test (core/text/passScrubber.ts, core/router/pass.ts):
 * - a token before any text is a pass where passing is offered (voluntary), and is stripped on an
 *   addressed turn;
 * - a token after the text is a pass when the text before it is short filler (under 120 real
 *   characters where passing is offered; never on an addressed turn), otherwise it is stripped;
 * - the stream holds back that much text, so nothing shown live is ever taken back.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import { agentsFromConfig } from '../../src/app.js';
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import { PASS_FILLER_MAX, cleanReply, isPass, judgeReply, passRules } from '../../src/core/router/pass.js';
import { containsToken, removeTokens } from '../../src/core/text/passScrubber.js';
import { passStreamFilter } from '../../src/core/text/passStream.js';
import { AGENTS_YAML } from '../helpers/router-harness.js';
import { FakeChannel } from '../helpers/fake-channel.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CapturingLogger } from '../helpers/logger.js';
import { MemoryStore } from '../helpers/memory-store.js';

const ANALYST = { id: 'analyst', name: 'Analyst' };
const OTHERS = [
  { id: 'writer', name: 'Writer' },
  { id: 'critic', name: 'Critic' },
];
const addressed = (text: string) => judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass: false });
const voluntary = (text: string) => judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass: true });

/** Stream `chunks` through a turn's filter: what was shown, and the verdict at the end. */
function stream(chunks: string[], mayPass: boolean) {
  const f = passStreamFilter(passRules({ agent: ANALYST, others: OTHERS, mayPass }));
  const shown = chunks.map(f).filter((x): x is string => x !== null);
  const streamed = f.streamed;
  const { verdict, rest } = f.end();
  if (rest !== null) shown.push(rest);
  return { shown, streamed, verdict };
}

/** Every way to cut `text` into two chunks, plus one character per chunk. */
function chunkings(text: string): string[][] {
  const out: string[][] = [[...text]];
  for (let i = 0; i <= text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe('the token after folding', () => {
  it.each(['［PASS］', '[PA\u200bSS]', '[ P A S S ]', '[ＰＡＳＳ]', '［ｐａｓｓ］', '[P\u00ADASS]', '[\u2060PASS\uFEFF]', '**［PASS］**', '[\nPASS\n]'])('%j is a pass, on either kind of turn', (t) => {
    expect(isPass(t)).toBe(true);
    expect(voluntary(t).pass).toBe(true);
    expect(addressed(t).pass).toBe(true);
  });

  it.each([
    ['Revenue is up ［PASS］ and margins held', 'Revenue is up and margins held'],
    ['Revenue is up [PA\u200bSS] and margins held', 'Revenue is up and margins held'],
    ['Revenue is up [ P A S S ] and margins held', 'Revenue is up and margins held'],
    ['Revenue is up **[PASS]** and margins held', 'Revenue is up and margins held'],
  ])('removed from the middle of a reply: %j', (t, want) => {
    expect(addressed(t)).toMatchObject({ pass: false, text: want });
    expect(cleanReply(t, ANALYST)).toBe(want);
  });

  it('posts the original characters: folding is for matching only', () => {
    const t = 'x² is ½, ＡＢＣ, ❤️ and 👨‍👩‍👧 [PASS] stay as written';
    expect(addressed(t).text).toBe('x² is ½, ＡＢＣ, ❤️ and 👨‍👩‍👧 stay as written');
  });

  it('keeps invisible characters that end a reply (variation selector, flag tags, ZWJ)', () => {
    const endings = ['Thanks, love it ❤️', 'Go Scotland 🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}', 'my friend\u200d'];
    for (const t of endings) {
      expect(addressed(t).text).toBe(t);
      expect(removeTokens(t)).toBe(t);
      expect(removeTokens(t + ' [PASS]')).toBe(t + ' ');
    }
  });

  it('keeps code indentation (no global whitespace collapsing)', () => {
    const t = 'Here:\n```py\nif x:\n    return  1\n```';
    expect(addressed(t).text).toBe(t);
  });
});

describe('every occurrence is removed, also nested ones', () => {
  it('"[PA[PASS]SS] ok" never shows a literal token, however it is chunked', () => {
    for (const chunks of chunkings('[PA[PASS]SS] ok')) {
      for (const mayPass of [false, true]) {
        const { shown, verdict } = stream(chunks, mayPass);
        expect(containsToken(shown.join('')), JSON.stringify(chunks)).toBe(false);
        for (const s of shown) expect(s).not.toMatch(/\[\s*pass\s*\]/i);
        if (!mayPass) expect(verdict).toMatchObject({ pass: false, text: 'ok' });
        else expect(verdict.pass).toBe(true); // a token before the text, where passing is offered
      }
    }
  });

  it('deeper nests and mixed forms are removed in one pass', () => {
    const deep = '[PA'.repeat(50) + '[PASS]' + 'SS]'.repeat(50) + ' done';
    expect(addressed(deep)).toMatchObject({ pass: false, text: 'done' });
    expect(removeTokens('a [P［PA\u200bSS］ASS] b')).toBe('a  b');
    expect(addressed('[PA**[PASS]**SS]').pass).toBe(true); // tidying the wrapper forms a token: removed too
  });

  it('no model output and no chunking lets a token through the stream or the post (property)', () => {
    const piece = fc.oneof(
      fc.constantFrom('[', ']', 'P', 'A', 'S', 'PA', 'SS', '[PA', 'SS]', '[PASS]', '［', '］', 'ＰＡ', '\u200b', '\u00AD', ' ', '\n', '**', 'Critic:', 'Analyst:', 'pass', 'ok', 'Sure!'),
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
        // Nothing streamed and nothing posted holds the token, read the way the filter reads it.
        expect(containsToken(shown.join(''))).toBe(false);
        expect(containsToken(verdict.text)).toBe(false);
        // Nothing streamed is taken back: a streamed turn is posted...
        const final = judgeReply(text, { agent: ANALYST, others: OTHERS, mayPass, streamed });
        if (streamed) expect(final.pass).toBe(false);
        // ...and the stream agrees with the decision on the whole text.
        expect(final.pass).toBe(verdict.pass);
      }),
      { seed: 1301, numRuns: 1500 },
    );
  });
});

describe('nothing streamed is turned into a pass', () => {
  it('"Sure! [PASS]" on a voluntary turn streams nothing and passes, however it is chunked', () => {
    for (const chunks of chunkings('Sure! [PASS]')) {
      const { shown, verdict } = stream(chunks, true);
      expect(shown, JSON.stringify(chunks)).toEqual([]);
      expect(verdict.pass).toBe(true);
    }
  });

  it('"Fine. [PASS]" on an addressed turn is an answer: the token is stripped, "Fine." kept, never streamed with the token', () => {
    for (const chunks of chunkings('Fine. [PASS]')) {
      const { shown, verdict } = stream(chunks, false);
      expect(shown.join('')).not.toMatch(/\[|PASS/i);
      expect(verdict.pass).toBe(false);
      expect(verdict.text).toBe('Fine.');
    }
  });


  it('a long reply that ends with the token is a reply; streaming starts once no token can make it a pass', () => {
    const body = 'The quarter closed with revenue up eight percent, margins steady and guidance raised for the second half of the year. Costs fell in every region except the north, where freight got dearer. ';
    const chunks = [...body.match(/.{1,10}/gs)!, '[PASS]'];
    const { shown, streamed, verdict } = stream(chunks, true);
    expect(streamed).toBe(true);
    expect(verdict).toMatchObject({ pass: false, text: body.trim() });
    // Nothing before the threshold was shown on its own.
    const first = shown[0]!;
    expect(first.replace(/[^\p{L}\p{N}]/gu, '').length).toBeGreaterThanOrEqual(PASS_FILLER_MAX.offered);
    expect(shown.join('').trim()).toBe(body.trim());
  });

  it('an addressed reply streams after a few words', () => {
    const { shown } = stream(['Revenue grew ', 'eight percent, ', 'margins held, ', 'and guidance ', 'was raised.'], false);
    expect(shown.length).toBeGreaterThanOrEqual(3);
    expect(shown.join('')).toBe('Revenue grew eight percent, margins held, and guidance was raised.');
  });
});

describe('addressed turns keep their answer', () => {
  it('"[PASS]\\n\\nActually here is my answer…" keeps the answer, token stripped', () => {
    const t = '[PASS]\n\nActually here is my answer…';
    expect(addressed(t)).toMatchObject({ pass: false, text: 'Actually here is my answer…' });
    for (const chunks of chunkings(t)) {
      const { shown, verdict } = stream(chunks, false);
      expect(verdict.text).toBe('Actually here is my answer…');
      expect(shown.join('').trim()).toBe('Actually here is my answer…');
    }
  });

  it('the same reply on a voluntary turn is a pass (passing was offered, and it came first)', () => {
    expect(voluntary('[PASS]\n\nActually here is my answer…').pass).toBe(true);
    for (const chunks of chunkings('[PASS] but here is more')) expect(stream(chunks, true).shown).toEqual([]);
  });

  it('a list after a leading token keeps its bullet', () => {
    expect(addressed('[PASS]\n\n- first\n- second').text).toBe('- first\n- second');
  });
});

describe('name labels', () => {
  it.each([
    ['Critic: I fully agree', 'I fully agree', ['Critic']],
    ['**Critic**: I fully agree', 'I fully agree', ['Critic']],
    ['[Writer] I fully agree', 'I fully agree', ['Writer']],
    ['@critic: I fully agree', 'I fully agree', ['Critic']],
    ['Analyst: Critic: I fully agree', 'I fully agree', ['Critic']],
    ['Analyst: numbers first', 'numbers first', []],
    ['Crit: not a label', 'Crit: not a label', []],
  ])('%j', (t, want, labels) => {
    expect(addressed(t)).toMatchObject({ pass: false, text: want, foreignLabels: labels });
  });

  it('a label split across chunks is held until it is known, never streamed', () => {
    const long = ' — and here is a much longer answer that goes on well past the filler limit so that it streams.'.repeat(2);
    for (const chunks of [['Cri', 'tic:', ' I agree' + long], [...('**Critic**: I agree' + long)]]) {
      const { shown, verdict } = stream(chunks, false);
      expect(shown.join('')).not.toMatch(/Critic/);
      expect(verdict.foreignLabels).toEqual(['Critic']);
    }
  });
});

/** A provider that streams each reply in small chunks, like the real ones. */
class ChunkedLlm implements LlmProvider {
  readonly name = 'chunked';
  constructor(private readonly replies: Record<string, string>) {}
  async complete(req: LlmRequest): Promise<LlmResponse> {
    const text = req.purpose === 'turn' ? (this.replies[req.agent?.id ?? ''] ?? '[PASS]') : 'NONE';
    for (let i = 0; i < text.length; i += 3) req.onDelta?.(text.slice(i, i + 3));
    return { text, model: req.model, usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 }, costUsd: null };
  }
}

async function routerWith(replies: Record<string, string>) {
  const { config } = parseConfigText(AGENTS_YAML + '\nllm: { provider: scripted }\n', 'test');
  const logger = new CapturingLogger();
  const channel = new FakeChannel('web');
  const router = new GroupRouter({
    agents: agentsFromConfig(config),
    aliases: config.aliases,
    groupDefaults: { ...config.group_defaults, cooldown_seconds: 0 },
    limits: { user_messages_per_minute: 1000, max_message_chars: 8000 },
    llm: new ChunkedLlm(replies),
    llmSettings: { model: 'm', summaryModel: 's', maxTokens: 256, maxConcurrency: 8 },
    validateConfig: validateGroupConfig,
    store: new MemoryStore(),
    clock: new FakeClock(),
    logger,
  });
  router.addChannel(channel);
  await router.start();
  await channel.start(router);
  const group = await router.gateway.createGroup({ title: 'Room', participants: ['analyst', 'writer', 'critic'], id: 'room' });
  const deltas: Array<{ agentId: string; text: string }> = [];
  router.gateway.subscribe((ev) => {
    if (ev.type === 'delta') deltas.push({ agentId: ev.agentId, text: ev.text });
  });
  let n = 0;
  const say = async (text: string) => {
    await router.receive({ channel: 'web', chatId: group.chatId, messageId: `m${++n}`, author: { id: 'maya', name: 'Maya' }, text, ts: Date.now() });
    await router.idle();
  };
  const posts = () => channel.posts.filter((p) => p.agentId).map((p) => ({ agentId: p.agentId!, text: p.text }));
  return { router, logger, deltas, say, posts };
}

describe('through the router, streamed in small chunks', () => {
  it('an addressed "[PASS]\\n\\nActually here is my answer…" is posted without the token', async () => {
    const r = await routerWith({ analyst: '[PASS]\n\nActually here is my answer…' });
    await r.say('@analyst your view?');
    expect(r.posts()).toEqual([{ agentId: 'analyst', text: 'Actually here is my answer…' }]);
    const streamed = r.deltas.filter((d) => d.agentId === 'analyst').map((d) => d.text).join('');
    expect(streamed.trim()).toBe('Actually here is my answer…');
  });

  it('"[PA[PASS]SS] ok" streams and posts no literal token; "Sure! [PASS]" on a voluntary turn streams nothing', async () => {
    const r = await routerWith({ analyst: '[PA[PASS]SS] ok', writer: 'Sure! [PASS]', critic: '［PASS］' });
    await r.say('@analyst anything?');
    await r.say('anyone else?'); // voluntary turns for all three
    for (const d of r.deltas) expect(containsToken(d.text)).toBe(false);
    expect(r.deltas.filter((d) => d.agentId === 'writer' || d.agentId === 'critic')).toEqual([]);
    for (const p of r.posts()) expect(containsToken(p.text)).toBe(false);
    expect(r.posts()).toContainEqual({ agentId: 'analyst', text: 'ok' });
    expect(r.posts().filter((p) => p.agentId !== 'analyst')).toEqual([]);
  });

  it('"Critic: …" written by Analyst is posted without the label, and the log names the agent', async () => {
    const r = await routerWith({ analyst: 'Critic: I fully agree with myself.' });
    await r.say('@analyst go');
    expect(r.posts()).toEqual([{ agentId: 'analyst', text: 'I fully agree with myself.' }]);
    const line = r.logger.lines.find((l) => (l.level === 'warn' || l.level === 'info') && JSON.stringify(l.obj).includes('Critic'));
    expect(line).toBeDefined();
    expect(line!.obj).toMatchObject({ agent: 'analyst', labels: ['Critic'] });
    expect(line!.msg).toContain('Analyst');
  });
});
