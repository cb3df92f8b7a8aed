// Message text as Markdown: parsed by marked, cleaned by DOMPurify, then finished as DOM nodes.
// Three layers keep message text from ever becoming markup or script:
// - marked's `html` renderer escapes raw HTML, so `<img onerror=…>` shows as the characters typed;
// - DOMPurify keeps only the tags and attributes a chat message needs, and only http(s)/mailto
//   links, and returns inert DOM nodes (never a string given to innerHTML);
// - links are checked once more here and get rel=noopener/noreferrer/nofollow and a new tab.
// The page's CSP (script-src 'self', no inline) stays as it is: nothing here needs inline code.
// Both libraries are bundled into the page's script at build time (scripts/build-page.cjs), so
// they arrive with it and messages are never first drawn as plain text.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { appendMentions, h, renderText } from './dom.js';

const marked = new Marked({
  gfm: true,
  // Chat text: a single newline is a line break, as people type it.
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    // Images are not shown (no remote loads from message text); their description stays.
    image: ({ text, href }) => escapeHtml(text || href || ''),
  },
});

const ALLOWED_TAGS = ['p', 'br', 'strong', 'em', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'hr'];
const ALLOWED_ATTR = ['href', 'title', 'align', 'start', 'class'];
/** The one class kept: a code block's language, for its colours (codehl.js). */
const CODE_LANGUAGE = /^language-[\w+#.-]{1,40}$/;
const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);
/** Mentions are not highlighted inside these: code is shown exactly as written, links keep their text. */
const NO_MENTIONS = 'code, pre, a';
const COPIED_MS = 1500;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/** True when the Markdown renderer can run (DOMPurify needs a real DOM); false means plain text. */
export function markdownReady() {
  return DOMPurify.isSupported;
}

/**
 * `text` as a fragment of sanitised Markdown, with @mentions of known handles highlighted
 * (`handleColor(handle)` gives a colour, or null for an unknown handle).
 */
export function renderMarkdown(text, handleColor) {
  if (!markdownReady()) return renderText(text, handleColor);
  const html = marked.parse(text, { async: false });
  const frag = DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    ALLOWED_URI_REGEXP: /^(?:https?|mailto):/i,
    RETURN_DOM_FRAGMENT: true,
  });
  for (const el of frag.querySelectorAll('[class]')) {
    if (el.nodeName !== 'CODE' || !CODE_LANGUAGE.test(el.getAttribute('class'))) el.removeAttribute('class');
  }
  dropLayoutWhitespace(frag);
  for (const a of frag.querySelectorAll('a')) finishLink(a);
  highlightMentions(frag, handleColor);
  for (const pre of frag.querySelectorAll('pre')) addCopyButton(pre);
  return frag;
}

/** Containers whose whitespace-only text is only the parser's line breaks between blocks. */
const BLOCK_CONTAINERS = new Set(['UL', 'OL', 'BLOCKQUOTE', 'TABLE', 'THEAD', 'TBODY', 'TR']);

/**
 * marked puts a newline after each block (`<p>…</p>\n`). Those are not part of the message: drop
 * them so the text of a one-line message is exactly what was typed. Text inside code is untouched.
 */
function dropLayoutWhitespace(root) {
  const containers = [root, ...root.querySelectorAll('ul, ol, blockquote, table, thead, tbody, tr')];
  for (const c of containers) {
    if (c !== root && !BLOCK_CONTAINERS.has(c.nodeName)) continue;
    for (const n of [...c.childNodes]) {
      if (n.nodeType === Node.TEXT_NODE && n.nodeValue.trim() === '') n.remove();
    }
  }
}

function finishLink(a) {
  let ok = false;
  try {
    ok = SAFE_PROTOCOLS.has(new URL(a.getAttribute('href') || '').protocol);
  } catch {
    ok = false;
  }
  if (!ok) {
    // Keep the words, drop the link.
    a.replaceWith(...a.childNodes);
    return;
  }
  a.setAttribute('rel', 'noopener noreferrer nofollow');
  a.setAttribute('target', '_blank');
}

function highlightMentions(root, handleColor) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeValue.includes('@') && !n.parentElement?.closest(NO_MENTIONS)) nodes.push(n);
  }
  for (const n of nodes) {
    const frag = document.createDocumentFragment();
    appendMentions(frag, n.nodeValue, handleColor);
    n.replaceWith(frag);
  }
}

/** Code blocks get a Copy button; the block itself scrolls sideways (app.css) and keeps its spaces. */
function addCopyButton(pre) {
  const code = pre.querySelector('code') || pre;
  const button = h('button', { type: 'button', className: 'copy-btn', title: 'Copy the code', text: 'Copy' });
  let timer = null;
  button.addEventListener('click', async () => {
    const ok = await copyText(code.textContent || '', code);
    button.textContent = ok ? 'copied' : 'copy failed';
    clearTimeout(timer);
    timer = setTimeout(() => (button.textContent = 'Copy'), COPIED_MS);
  });
  const wrap = h('div', { className: 'code-block' });
  pre.replaceWith(wrap);
  wrap.append(button, pre);
}

async function copyText(text, el) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Permission refused: fall through to the selection copy.
    }
  }
  // Plain http on a LAN address has no Clipboard API: select the code and copy the selection.
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  } finally {
    sel.removeAllRanges();
  }
}
