/**
 * The web page renders a streaming reply block by block (public/streaming.js): settled top-level
 * Markdown blocks once each, the open tail again as it grows. That is only right if the blocks
 * render, one after another, exactly as the whole text does — checked here with the page's own
 * Markdown settings — and if feeding the text in any chunks gives the same blocks. When the reply
 * is recorded, the bubble keeps the blocks it rendered and renders only the rest: what it then
 * holds must be what rendering the recorded text whole gives, whatever was streamed before.
 */
import { Marked } from 'marked';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the page, without types
import { BlockSplitter, StreamView } from '../../src/channels/web/public/streaming.js';

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

/** Just enough of the DOM for a StreamView: an element whose children are rendered HTML strings. */
class FakeNode {
  parent: FakeEl | null = null;
  constructor(readonly html: string) {}
  remove(): void {
    if (!this.parent) return;
    this.parent.children.splice(this.parent.children.indexOf(this), 1);
    this.parent = null;
  }
}

class FakeEl {
  children: FakeNode[] = [];
  get firstChild(): FakeNode | null {
    return this.children[0] ?? null;
  }
  append(frag: { childNodes: FakeNode[] }): void {
    for (const n of frag.childNodes) {
      n.parent = this;
      this.children.push(n);
    }
  }
  get html(): string {
    return this.children.map((n) => n.html).join('');
  }
}

/** A bubble as the page drives it; `rendered` lists every text given to the renderer. */
function bubble(slowMs = 0) {
  const el = new FakeEl();
  const rendered: string[] = [];
  const view = new StreamView(el, (text: string) => {
    rendered.push(text);
    for (const until = performance.now() + slowMs; performance.now() < until; );
    return { childNodes: [new FakeNode(html(text))] };
  });
  // What is rendered must not depend on how fast this machine is right now: only the tests of
  // the frame budget itself (a slow renderer) keep it.
  if (slowMs === 0) view.frameBudgetMs = Infinity;
  return { el, rendered, view };
}

/** Stream `text` in `chunk`-sized pieces, bringing the screen up to date after each, tail included. */
function stream(view: InstanceType<typeof StreamView>, text: string, chunk: number): void {
  for (let i = 0; i < text.length; i += chunk) {
    view.append(text.slice(i, i + chunk));
    view.tailNotBefore = 0;
    while (view.flush()) view.tailNotBefore = 0;
  }
}

const finishNow = (view: InstanceType<typeof StreamView>, text: string): boolean => view.finish(text, () => {
  throw new Error('finished later');
});

describe('StreamView.finish: the recorded reply keeps the streamed blocks', () => {
  for (const [name, text] of Object.entries(SAMPLES)) {
    it(`${name}: what was streamed, finished, is the whole text rendered`, () => {
      for (const chunk of [1, 4, 64]) {
        const { el, rendered, view } = bubble();
        stream(view, text, chunk);
        rendered.length = 0;
        expect(finishNow(view, text)).toBe(true);
        expect(el.html).toBe(html(text));
        // The screen was up to date: nothing is rendered again.
        expect(rendered).toEqual([]);
      }
    });

    it(`${name}: a reply recorded with more than was streamed renders only what is new`, () => {
      const { el, rendered, view } = bubble();
      const half = text.slice(0, Math.floor(text.length / 2));
      stream(view, half, 3);
      const kept = view.blocks.length;
      rendered.length = 0;
      expect(finishNow(view, text)).toBe(true);
      expect(el.html).toBe(html(text));
      expect(view.blocks.length).toBe(rendered.length + kept);
    });
  }

  it('a recorded text that differs from what streamed (a stray pass token, trimmed white space) is rendered as recorded', () => {
    const text = 'First.\n\nSecond [PASS] part.\n\nThird.\n\nLast words   \n\n';
    const { el, view } = bubble();
    stream(view, text, 5);
    expect(el.html).not.toBe(html(text));
    const recorded = text.replace('[PASS] ', '').trimEnd();
    expect(finishNow(view, recorded)).toBe(true);
    expect(el.html).toBe(html(recorded));
    const other = bubble();
    stream(other.view, 'Something else entirely.\n\nAnd more.', 4);
    expect(finishNow(other.view, text)).toBe(true);
    expect(other.el.html).toBe(html(text));
  });

  it('Markdown that reaches across blocks (link references, raw HTML) is rendered whole', () => {
    for (const text of ['See [the docs][d].\n\nMore.\n\n[d]: https://example.com/docs', 'Before.\n\n<div>\n\n*inside*\n\n</div>\n\nAfter.']) {
      const { el, rendered, view } = bubble();
      stream(view, text, 4);
      rendered.length = 0;
      expect(finishNow(view, text)).toBe(true);
      expect(rendered).toEqual([text]);
      expect(el.html).toBe(html(text));
    }
  });

  it('a long remainder is rendered in later tasks, a frame budget each, then `later` is called', async () => {
    const text = Array.from({ length: 6 }, (_, i) => `Paragraph ${i}.`).join('\n\n');
    // Nothing streamed (a reply that came all at once); each block takes longer than a frame's budget.
    const { el, rendered, view } = bubble(15);
    let later!: () => void;
    const done = new Promise<void>((resolve) => (later = resolve));
    expect(view.finish(text, later)).toBe(false);
    expect(rendered.length).toBe(1);
    await done;
    // Four settled paragraphs, and the last two as the tail (the last line has no newline).
    expect(rendered.length).toBe(5);
    expect(el.html).toBe(html(text));
    // Nothing streamed after the end changes it.
    view.append('\n\nlate text');
    expect(view.flush()).toBe(false);
    expect(el.html).toBe(html(text));
  });
});
