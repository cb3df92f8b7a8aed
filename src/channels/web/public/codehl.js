// Colours for code blocks. highlight.js (its core and a few common languages, served from
// node_modules under /vendor/hljs/) is fetched the first time a message shows a code block marked
// with a language it knows, one language file at a time, so a page without code loads none of
// it. Blocks without a language, in another language or very long stay plain. The highlighted
// markup is cleaned by DOMPurify down to spans with classes before it replaces the plain code,
// like all message markup; if anything fails to load the block simply keeps its plain text.
// Blocks are coloured a few at a time between other work, so a reply with dozens of code blocks
// never holds the page up in one long task.

/** Language file → the names a fence may use for it (```js, ```ts, ```sh …). */
const LANGUAGES = {
  bash: ['bash', 'sh', 'shell', 'zsh', 'console'],
  css: ['css'],
  diff: ['diff', 'patch'],
  go: ['go', 'golang'],
  java: ['java'],
  javascript: ['javascript', 'js', 'jsx', 'mjs', 'cjs', 'node'],
  json: ['json', 'jsonc', 'json5'],
  python: ['python', 'py', 'python3'],
  rust: ['rust', 'rs'],
  sql: ['sql', 'postgres', 'postgresql', 'mysql', 'sqlite'],
  typescript: ['typescript', 'ts', 'tsx', 'mts'],
  xml: ['xml', 'html', 'svg', 'xhtml'],
  yaml: ['yaml', 'yml'],
};
const FILE_OF = new Map(Object.entries(LANGUAGES).flatMap(([file, names]) => names.map((n) => [n, file])));
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
  if (!core) {
    core = Promise.all([import('/vendor/hljs/core.js'), import('/vendor/purify.es.mjs')])
      .then(([hl, pur]) => ({ hljs: hl.default, purify: pur.default }));
  }
  if (!languages.has(file)) {
    languages.set(file, core.then(async (libs) => {
      const mod = await import(`/vendor/hljs/${file}.js`);
      libs.hljs.registerLanguage(file, mod.default);
      return libs;
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
    load(file).then(({ hljs, purify }) => later(() => {
      if (code.textContent !== source) return;
      const html = hljs.highlight(source, { language: file, ignoreIllegals: true }).value;
      code.replaceChildren(purify.sanitize(html, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'], RETURN_DOM_FRAGMENT: true }));
      code.classList.add('hljs');
    })).catch(() => {
      // Plain code is still all there.
    });
  }
}
