/**
 * A reply of nothing but decoration (a run of backticks, dots, stars) with no pass token in it:
 * on an addressed turn a person asked, and that is what the agent said, so it is posted as written
 * (the page then shows the characters, not an empty code block). Where passing is offered it stays
 * a pass, and decoration around a token is a pass everywhere, as before.
 */
import { describe, expect, it } from 'vitest';
import { judgeReply, passRules } from '../../src/core/router/pass.js';
import { passStreamFilter } from '../../src/core/text/passStream.js';

const ANALYST = { id: 'analyst', name: 'Analyst' };
const addressed = { agent: ANALYST, mayPass: false };
const offered = { agent: ANALYST, mayPass: true };

describe('decoration-only replies', () => {
  it('posts 5,000 backticks answered to an @mention, and passes them where passing is offered', () => {
    const ticks = '`'.repeat(5000);
    expect(judgeReply(ticks, addressed)).toEqual({ pass: false, text: ticks, foreignLabels: [], reaction: null });
    expect(judgeReply(ticks, offered).pass).toBe(true);
    expect(judgeReply('  ...  ', addressed)).toMatchObject({ pass: false, text: '...' });
  });

  it('still passes decoration around a token, a label alone, or the bare word, on an addressed turn', () => {
    for (const text of ['**[PASS]**', '`[PASS]`', '[PASS]', 'Analyst:', '**Analyst**: ...', 'pass', '', '   ']) {
      expect(judgeReply(text, addressed).pass, JSON.stringify(text)).toBe(true);
    }
  });

  it('streams what it posts: the kept backticks come out at the end of the stream', () => {
    const filter = passStreamFilter(passRules(addressed));
    let shown = '';
    for (let i = 0; i < 50; i++) shown += filter('`'.repeat(100)) ?? '';
    const { verdict, rest } = filter.end();
    expect(verdict.pass).toBe(false);
    expect(shown + (rest ?? '')).toBe('`'.repeat(5000));
  });
});
