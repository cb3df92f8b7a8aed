/**
 * The web page renders a streaming reply block by block (public/streaming.js): settled top-level
 * Markdown blocks once each, the open tail again as it grows. That is only right if the blocks
 * render, one after another, exactly as the whole text does — checked here with the page's own
 * Markdown settings — and if feeding the text in any chunks gives the same blocks.
 */
import { Marked } from 'marked';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the page, without types
import { BlockSplitter } from '../../src/channels/web/public/streaming.js';

const marked = new Marked({ gfm: true, breaks: true });
const html = (md: string) => marked.parse(md, { async: false }) as string;

interface Split {
  blocks: string[];
  tail: string;
}

function split(text: string, chunk: number): Split {
  const s = new BlockSplitter();
  const blocks: string[] = [];
  for (let i = 0; i < text.length; i += chunk) blocks.push(...(s.push(text.slice(i, i + chunk)) as string[]));
  return { blocks, tail: s.tail() as string };
}

const SAMPLES: Record<string, string> = {
  paragraphs: 'First paragraph\nwith a line break.\n\nSecond paragraph.\n\n\n\nThird, after blank lines.',
  'a fence with blank lines inside': 'Intro:\n\n```ts\nconst a = 1;\n\n\nconst b = 2;\n```\n\nAfter the code.',
  'a fence opened mid-paragraph': 'Look at this\n```\nx\n\ny\n```\nand go on.\n\nNext.',
  'a tilde fence holding backticks': '~~~~\n```\n\nnot a fence end\n```\n~~~~\n\nDone.',
  'a loose list': '- one\n\n- two\n\n  more of two\n\n- three\n\nAfter.',
  'a numbered list across blank lines': '1. first\n\n2. second\n\n3. third\n\nEnd.',
  'a list, then code inside an item': '- item\n\n  ```\n  code\n\n  more\n  ```\n- next\n\nEnd.',
  'an indented code block': 'Para.\n\n    code line\n\n    more code\n\nAfter.',
  tables: '| a | b |\n| - | - |\n| 1 | 2 |\n\n| c |\n| - |\n| 3 |\n\nText.',
  'headings and quotes': '# Title\n\nText\n\n## Sub\n> quote\n> more\n\n> another quote\n\n---\n\nEnd',
  'an unclosed fence at the end': 'Text.\n\n```js\nlet x = 1;\n\nlet y = 2;',
};

describe('BlockSplitter', () => {
  for (const [name, text] of Object.entries(SAMPLES)) {
    it(`${name}: blocks then tail render as the whole text does, whatever the chunks`, () => {
      const whole = split(text, text.length);
      expect(whole.blocks.join('') + whole.tail).toBe(text);
      expect(whole.blocks.map(html).join('') + html(whole.tail)).toBe(html(text));
      for (const chunk of [1, 2, 3, 4, 7, 64]) {
        const part = split(text, chunk);
        expect(part.blocks).toEqual(whole.blocks);
        expect(part.tail).toBe(whole.tail);
      }
    });
  }

  it('settles a long reply block by block, and never splits a code block', () => {
    const section = (i: number) => `## Part ${i}\n\nSome text ${i}.\n\n- a\n- b\n\n\`\`\`\nline\n\nline\n\`\`\`\n\n| x |\n| - |\n| ${i} |\n\n`;
    const text = Array.from({ length: 40 }, (_, i) => section(i)).join('') + 'The end.';
    const { blocks, tail } = split(text, 4);
    expect(blocks.length).toBeGreaterThanOrEqual(40 * 5 - 1);
    // The last line has no newline yet: it could still turn out to continue the table.
    expect(tail).toBe('| x |\n| - |\n| 39 |\n\nThe end.');
    for (const b of blocks) expect((b.match(/```/g) ?? []).length % 2).toBe(0);
    expect(blocks.map(html).join('') + html(tail)).toBe(html(text));
  });

  it('a 200 KB reply in 4-character chunks: every paragraph settles once', () => {
    const text = 'A line of a paragraph that goes on.\nAnd its second line.\n\n'.repeat(3000);
    const s = new BlockSplitter();
    let n = 0;
    for (let i = 0; i < text.length; i += 4) n += (s.push(text.slice(i, i + 4)) as string[]).length;
    expect(n).toBe(2999);
    expect(s.tail()).toBe('A line of a paragraph that goes on.\nAnd its second line.\n\n');
  });
});
