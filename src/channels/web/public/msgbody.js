// The text of a finished message as the feed shows it:
// - `dir="auto"`, so Arabic or Hebrew reads right to left and English left to right;
// - Markdown that would show nothing (a message of only backticks parses as an empty code block,
//   "---" as a bare rule) is shown as the characters typed instead;
// - code blocks and tables scroll sideways and can be reached with the keyboard to do so;
// - code in a known language gets colours (codehl.js);
// - a long message is folded to a screenful with "Show more", so one 20 KB reply does not push
//   the rest of the conversation a dozen screens away.
import { h, renderText } from './dom.js';
import { highlightCode } from './codehl.js';

/** A message longer than this (characters or lines) starts folded, if it really is tall. */
const FOLD_CHARS = 1500;
const FOLD_LINES = 25;

let folds = 0;

/**
 * `render(text)` gives the Markdown fragment; `className` is the class of the Markdown text.
 * Returns the nodes to put in the bubble.
 */
export function messageBody(text, render, className, handleColor) {
  const source = String(text ?? '');
  return finishBody(h('div', { className }, render(source)), source, handleColor);
}

/**
 * Everything but the Markdown itself, for a `body` that holds `source` rendered: freshly, or
 * block by block as it streamed in (streaming.js). Returns the nodes to put in the bubble.
 */
export function finishBody(body, source, handleColor) {
  if (source.trim() !== '' && !showsText(body)) {
    body.replaceChildren(renderText(source, handleColor));
    body.className = 'text';
  }
  body.dir = 'auto';
  for (const el of body.querySelectorAll('pre, table')) el.setAttribute('tabindex', '0');
  highlightCode(body);
  return isLong(source) ? fold(body) : body;
}

function showsText(frag) {
  let n = (frag.textContent || '').trim().length;
  for (const b of frag.querySelectorAll('button')) n -= (b.textContent || '').trim().length;
  return n > 0;
}

function isLong(text) {
  if (text.length > FOLD_CHARS) return true;
  let lines = 1;
  for (let i = text.indexOf('\n'); i >= 0 && lines <= FOLD_LINES; i = text.indexOf('\n', i + 1)) lines++;
  return lines > FOLD_LINES;
}

function fold(body) {
  body.id = `msg-body-${++folds}`;
  body.classList.add('folded');
  const btn = h('button', { type: 'button', className: 'show-more', 'aria-expanded': 'false', 'aria-controls': body.id, text: 'Show more',
    onclick: () => {
      const open = body.classList.toggle('folded') === false;
      btn.setAttribute('aria-expanded', String(open));
      btn.textContent = open ? 'Show less' : 'Show more';
      // Folding back up keeps the message's start in view rather than leaving the reader far below.
      if (!open && body.getBoundingClientRect().top < 0) body.scrollIntoView({ block: 'start' });
    } });
  // Long by count but short on screen (wide lines of little text): no fold after all.
  requestAnimationFrame(() => {
    if (body.isConnected && body.classList.contains('folded') && body.scrollHeight <= body.clientHeight + 4) {
      body.classList.remove('folded');
      btn.remove();
    }
  });
  return [body, btn];
}
