/**
 * Handles are folded the same way as the text they are looked up in (NFKC,
 * zero-width characters and soft hyphens removed, `＠` folded), so what reads as `@analyst`
 * addresses Analyst; letters from other scripts stay different, so look-alikes do not.
 */
import { describe, expect, it } from 'vitest';
import { HandleIndex, findHandles, findMentions } from '../../src/core/router/mentions.js';
import { foldForMatching, handleKey, removeDisplayControls, removeInvisible } from '../../src/core/text/normalize.js';
import type { AgentDef } from '../../src/core/types.js';
import { makeRouter } from '../helpers/router-harness.js';

const agent = (id: string, name: string, aliases: string[] = []): AgentDef => ({ id, name, persona: 'p', model: null, avatar: null, color: null, aliases, talkativeness: 0.5 });
const AGENTS = [agent('analyst', 'Analyst', ['numbers']), agent('writer', 'Writer'), agent('critic', 'Critic')];
const INDEX = new HandleIndex(AGENTS, { creatives: ['writer', 'critic'] });
const ALL = AGENTS.map((a) => a.id);
const mentions = (text: string) => findMentions(text, INDEX, ALL);

describe('handles that read as @analyst address Analyst', () => {
  it.each([
    ['zero-width space inside', '@ana\u200blyst what do you think?'],
    ['zero-width space after the @', '@\u200banalyst what do you think?'],
    ['full-width @', '＠analyst what do you think?'],
    ['soft hyphen inside', '@ana\u00ADlyst what do you think?'],
    ['full-width @ and letters', '＠ａｎａｌｙｓｔ what do you think?'],
    ['small commercial at', '\uFE6Banalyst what do you think?'],
    ['word joiner and zero-width joiner', '@ana\u2060ly\u200Dst hi'],
    ['bidi mark inside', '@anal\u200Eyst hi'],
    ['upper case', '@ANALYST hi'],
  ])('%s: %j', (_label, text) => {
    expect(mentions(text)).toEqual(['analyst']);
  });

  it('aliases and group handles fold the same way', () => {
    expect(mentions('＠numbers please')).toEqual(['analyst']);
    expect(mentions('@crea\u200Btives please')).toEqual(['writer', 'critic']);
    expect(mentions('＠ａｌｌ hello')).toEqual(['analyst', 'writer', 'critic']);
  });

  it('handles learned at run time (a bot username) fold too', () => {
    const idx = new HandleIndex(AGENTS, {});
    idx.addHandle('＠Analyst_Bot', 'analyst');
    expect(findMentions('hi @analyst_bot', idx, ALL)).toEqual(['analyst']);
    expect(findMentions('hi @analyst\u00AD_bot', idx, ALL)).toEqual(['analyst']);
  });
});

describe('look-alikes, e-mail and code still do not match', () => {
  it.each([
    ['Cyrillic а', '@\u0430nalyst hi'],
    ['Cyrillic а and е', '@\u0430nalyst and @writ\u0435r'],
    ['Greek ο in critic', '@crit\u03BFc?'],
    ['e-mail address', 'write to me@analyst.com'],
    ['e-mail with full-width @', 'write to me＠analyst.com'],
    ['e-mail with zero-width after the @', 'write to me@\u200Banalyst.com'],
    ['inline code', 'run `@analyst` later'],
    ['inline code with zero-width handle', 'run `@ana\u200Blyst` later'],
    ['double-backtick code span', 'run ``a ` @analyst`` later'],
    ['fenced block', 'look:\n```\n@analyst\n```\nend'],
    ['tilde fence', 'look:\n~~~\n＠analyst\n~~~\nend'],
    ['unclosed fence', 'look:\n```ts\n@analyst never closed'],
    ['handle continuing into a domain', 'see @analyst.example'],
  ])('%s: %j', (_label, text) => {
    expect(mentions(text)).toEqual([]);
  });

  it('a handle after code on the same line is still found', () => {
    expect(mentions('`x` then @writer')).toEqual(['writer']);
    expect(mentions('```\ncode\n```\n@critic after the fence')).toEqual(['critic']);
  });

  it('findHandles reports the folded handle', () => {
    expect(findHandles('hey ＠Ana\u200Blyst and @\u00ADwriter')).toEqual(['Analyst', 'writer']);
  });
});

describe('normalize helpers', () => {
  it('fold for matching: NFKC and invisibles, case kept', () => {
    expect(foldForMatching('［ＰＡ\u200BSS］')).toBe('[PASS]');
    expect(foldForMatching('x\u00ADy\u202Ez')).toBe('xyz');
    expect(handleKey('＠Ana\u200Blyst')).toBe('analyst');
    expect(removeInvisible('a\u200Bb\uFEFFc\u2066d')).toBe('abcd');
  });

  it('display cleaning drops bidi and zero-width controls but keeps emoji sequences', () => {
    expect(removeDisplayControls('\u202Etsylan\u202CA')).toBe('tsylanA');
    expect(removeDisplayControls('Ma\u200Bya\u2067')).toBe('Maya');
    const family = '👨\u200D👩\u200D👧 ❤\uFE0F';
    expect(removeDisplayControls(family)).toBe(family);
  });
});

describe('through the router', () => {
  it('a human message with a disguised handle addresses the agent, a look-alike does not', async () => {
    const h = await makeRouter();
    await h.say('@ana\u200Blyst numbers please');
    expect(h.speakers()).toEqual(['analyst']);
    await h.say('＠writer a line please');
    expect(h.speakers()).toEqual(['analyst', 'writer']);
    const before = h.llm.callsFor('critic').filter((c) => c.mustReply).length;
    await h.say('@crit\u03BFc are you there?');
    expect(h.llm.callsFor('critic').filter((c) => c.mustReply).length).toBe(before);
  });
});
