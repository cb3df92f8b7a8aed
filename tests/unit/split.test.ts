import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/core/text/split.js';

/** Fences must pair up inside every chunk. */
function balanced(chunk: string): boolean {
  return (chunk.match(/^\s{0,3}(```|~~~)/gm) ?? []).length % 2 === 0;
}

describe('splitMessage', () => {
  it('returns short text unchanged', () => {
    expect(splitMessage('hello', 100)).toEqual(['hello']);
  });
  it('cuts at paragraph boundaries when it can', () => {
    const text = 'a'.repeat(60) + '\n\n' + 'b'.repeat(60);
    expect(splitMessage(text, 100)).toEqual(['a'.repeat(60) + '\n\n', 'b'.repeat(60)]);
  });
  it('6,000 characters in lines split into two Telegram messages', () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i} `.padEnd(59, '-')).join('\n');
    const chunks = splitMessage(text, 4096);
    expect(chunks).toHaveLength(2);
    expect(chunks.every((c) => c.length <= 4096)).toBe(true);
    expect(chunks.join('')).toBe(text);
  });
  it('keeps code fences balanced with the language re-opened', () => {
    const code = Array.from({ length: 120 }, (_, i) => `  value_${i} = compute(${i})`).join('\n');
    const text = 'Intro paragraph.\n\n```python\n' + code + '\n```\nOutro.';
    const chunks = splitMessage(text, 2000);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(2000);
      expect(balanced(c)).toBe(true);
    }
    expect(chunks[1]!.startsWith('```python\n')).toBe(true);
  });
  it('hard-cuts a single huge word without losing characters', () => {
    const text = 'x'.repeat(250);
    const chunks = splitMessage(text, 100);
    expect(chunks.join('')).toBe(text);
    expect(chunks.every((c) => c.length <= 100)).toBe(true);
  });
});
