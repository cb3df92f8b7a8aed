/**
 * The arguments of a request for approval cut into pieces a channel can post: every piece within
 * its budget, never inside a character, and the pieces join back to exactly the arguments.
 */
import { describe, expect, it } from 'vitest';
import { argParts, type ArgPart } from '../../src/core/text/approvalText.js';

const join = (parts: readonly ArgPart[]) => parts.map((p, i) => (i === 0 || p.continues ? p.text : `\n${p.text}`)).join('');

describe('argParts', () => {
  const samples: Record<string, string> = {
    'short': '{\n  "id": 42\n}',
    'many lines': JSON.stringify({ items: Array.from({ length: 400 }, (_, i) => `item ${i}`) }, null, 2),
    'one long line': JSON.stringify({ note: 'x'.repeat(9000) }, null, 2),
    'emoji at every cut': JSON.stringify({ note: '😀'.repeat(5000) }, null, 2),
    'blank lines and a long line': `{\n\n\n  "a": "${'y '.repeat(3000)}",\n\n  "b": 1\n}`,
  };
  for (const [name, args] of Object.entries(samples)) {
    it(`pieces of "${name}" fit the budget, split no character, and join back exactly`, () => {
      for (const budget of [16, 100, 1000, 3800]) {
        const parts = argParts(args, budget);
        expect(join(parts)).toBe(args);
        for (const p of parts) {
          expect(p.text.length).toBeLessThanOrEqual(budget);
          expect(p.text).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/);
        }
        expect(parts[0]!.continues).toBe(false);
        if (args.length <= budget) expect(parts).toEqual([{ text: args, continues: false }]);
      }
    });
  }
});
