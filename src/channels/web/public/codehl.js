// Colours for code blocks. highlight.js (its core and a few common languages) is not part of the
// page's first script: the build splits the core and each language into chunks of their own,
// fetched the first time a message shows a code block marked with a language they know, so a
// page without code loads none of it. Blocks without a language, in another language or very
// long stay plain. The highlighted markup is cleaned by DOMPurify down to spans with classes
// before it replaces the plain code, like all message markup; if a chunk fails to load the block
// simply keeps its plain text.
// Blocks are coloured a few at a time between other work, so a reply with dozens of code blocks
// never holds the page up in one long task.
import DOMPurify from 'dompurify';

/**
 * Language → how to load it, and the names a fence may use for it (```js, ```ts, ```sh …). Each
 * import names its file literally, so the bundler makes one chunk per language.
 */
const LANGUAGES = {
  bash: [() => import('highlight.js/lib/languages/bash'), 'bash', 'sh', 'shell', 'zsh', 'console'],
  css: [() => import('highlight.js/lib/languages/css'), 'css'],
  diff: [() => import('highlight.js/lib/languages/diff'), 'diff', 'patch'],
  go: [() => import('highlight.js/lib/languages/go'), 'go', 'golang'],
  java: [() => import('highlight.js/lib/languages/java'), 'java'],
  javascript: [() => import('highlight.js/lib/languages/javascript'), 'javascript', 'js', 'jsx', 'mjs', 'cjs', 'node'],
  json: [() => import('highlight.js/lib/languages/json'), 'json', 'jsonc', 'json5'],
  python: [() => import('highlight.js/lib/languages/python'), 'python', 'py', 'python3'],
  rust: [() => import('highlight.js/lib/languages/rust'), 'rust', 'rs'],
  sql: [() => import('highlight.js/lib/languages/sql'), 'sql', 'postgres', 'postgresql', 'mysql', 'sqlite'],
  typescript: [() => import('highlight.js/lib/languages/typescript'), 'typescript', 'ts', 'tsx', 'mts'],
  xml: [() => import('highlight.js/lib/languages/xml'), 'xml', 'html', 'svg', 'xhtml'],
  yaml: [() => import('highlight.js/lib/languages/yaml'), 'yaml', 'yml'],
};
const FILE_OF = new Map(Object.entries(LANGUAGES).flatMap(([file, [, ...names]]) => names.map((n) => [n, file])));
/** Longer code is left plain: colouring it would cost more than it helps. */
const MAX_CODE_CHARS = 20_000;

/** Colouring stops for the browser after this long, and goes on in a later task. */
const SLICE_MS = 8;

let core = null;
const languages = new Map();
const queue = [];
let pumping = false;

function pump() {
  const until = performance.now() + SLICE_MS;
  while (queue.length > 0 && performance.now() < until) {
    try {
      queue.shift()();
    } catch {
      // That block stays plain; the others go on.
    }
  }
  pumping = queue.length > 0;
  if (pumping) setTimeout(pump, 0);
}

function later(job) {
  queue.push(job);
  if (!pumping) {
    pumping = true;
    setTimeout(pump, 0);
  }
}

function load(file) {
  core ??= import('highlight.js/lib/core').then((mod) => mod.default);
  if (!languages.has(file)) {
    languages.set(file, core.then(async (hljs) => {
      const mod = await LANGUAGES[file][0]();
      hljs.registerLanguage(file, mod.default);
      return hljs;
    }));
  }
  return languages.get(file);
}

/** The language file for a `<code class="language-…">`, or null. */
function fileFor(code) {
  const m = /(?:^|\s)language-([\w+#.-]+)/.exec(code.getAttribute('class') || '');
  return m ? FILE_OF.get(m[1].toLowerCase()) || null : null;
}

/** Colour the code blocks under `root` once their language is loaded (the text never changes). */
export function highlightCode(root) {
  for (const code of root.querySelectorAll('pre > code[class]')) {
    const file = fileFor(code);
    const source = code.textContent || '';
    if (!file || source.length > MAX_CODE_CHARS) continue;
    load(file).then((hljs) => later(() => {
      if (code.textContent !== source) return;
      const html = hljs.highlight(source, { language: file, ignoreIllegals: true }).value;
      code.replaceChildren(DOMPurify.sanitize(html, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'], RETURN_DOM_FRAGMENT: true }));
      code.classList.add('hljs');
    })).catch(() => {
      // Plain code is still all there.
    });
  }
}
