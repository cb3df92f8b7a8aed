/**
 * A reply's reference keeps the hash of the history it was sent with; "what did it see?" rebuilds
 * the history from the log and compares. The running hash (only new messages are hashed each turn)
 * must equal the hash of the whole list, whatever the history does between turns: grow, fold
 * (its start goes), have a message cut or rewritten, shrink.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { RunningHistoryHashes, historyHash } from '../../src/core/session/promptRef.js';

type Msg = { role: string; content: string };

const step = fc.oneof(
  fc.record({ t: fc.constant('grow' as const), add: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.string() }), { maxLength: 3 }) }),
  fc.record({ t: fc.constant('fold' as const), n: fc.nat(4) }),
  fc.record({ t: fc.constant('rewrite' as const), at: fc.nat(20), content: fc.string() }),
  fc.record({ t: fc.constant('shrink' as const), n: fc.nat(3) }),
  fc.record({ t: fc.constant('other' as const) }),
);

describe('the running history hash', () => {
  it('equals the hash of the whole history after every turn', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const hashes = new RunningHistoryHashes();
        let h: Msg[] = [];
        let other: Msg[] = [{ role: 'user', content: 'another session' }];
        for (const s of steps) {
          if (s.t === 'grow') h = [...h, ...s.add];
          else if (s.t === 'fold') h = h.slice(s.n);
          else if (s.t === 'rewrite' && h.length > 0) h = h.map((m, i) => (i === s.at % h.length ? { ...m, content: s.content } : m));
          else if (s.t === 'shrink') h = h.slice(0, Math.max(0, h.length - s.n));
          else other = [...other, { role: 'assistant', content: `reply ${other.length}` }];
          expect(hashes.of('g\na', h)).toBe(historyHash(h));
          expect(hashes.of('g\nb', other)).toBe(historyHash(other));
        }
      }),
    );
  });

  it('tells a history from the same messages with a character moved between them', () => {
    const hashes = new RunningHistoryHashes();
    const a = [{ role: 'user', content: 'ab' }, { role: 'assistant', content: 'c' }];
    const b = [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'bc' }];
    expect(hashes.of('k', a)).not.toBe(hashes.of('k', b));
    expect(hashes.of('k', b)).toBe(historyHash(b));
  });
});
