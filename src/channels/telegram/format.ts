/**
 * Agent replies are Markdown-ish; Telegram renders a small HTML subset. We convert only what is
 * unambiguous (code fences, inline code, **bold**, [links](https://…)) and escape everything else,
 * so the common case renders nicely and the rare miss still reads as the agent wrote it. If
 * Telegram rejects the markup anyway, the sender falls back to the plain chunk.
 */

import { inlineCodeSpans, parseFenceLine } from '../../core/text/markdownScan.js';

export const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttr = (s: string): string => escapeHtml(s).replace(/"/g, '&quot;');

/**
 * Inline markup of one line outside code blocks. A hand-written scanner, linear in the line:
 * the regular expressions it replaces backtracked quadratically on long runs of `[` or `**`.
 * Inline code first (nothing inside a code span is markup; CommonMark's rule that a run of N
 * backticks closes at the next run of exactly N), then **bold** and [links](https://…).
 */
function inline(line: string): string {
  let out = '';
  let last = 0;
  for (const [s, e] of inlineCodeSpans(line)) {
    let n = 0;
    while (line.charCodeAt(s + n) === 96) n++;
    out += markup(line.slice(last, s), true, true) + `<code>${escapeHtml(line.slice(s + n, e - n))}</code>`;
    last = e;
  }
  return out + markup(line.slice(last), true, true);
}

/**
 * Bold and links in a code-free segment, everything else escaped. Bold content has no `*`; a
 * link label has no `]`; the target is http(s) up to the `)`, without whitespace. Bold may hold
 * a link and a link label may hold bold (one level each way). Each `]` is looked up once and its
 * link target checked once, so a line of `[[[[…` stays linear.
 */
function markup(s: string, links: boolean, bold: boolean): string {
  let out = '';
  let from = 0; // start of text not yet written
  let linksOn = links;
  let close = -1; // the next `]` after the current `[` (cached: positions only grow)
  let stop = -1; // the next `)` or whitespace after the current link target start (cached likewise)
  const target = new Map<number, number>(); // `]` index → end of a valid `(https://…)` after it, or -1
  const targetEnd = (at: number): number => {
    if (s[at] !== '(') return -1;
    const scheme = /^https?:\/\//.exec(s.slice(at + 1, at + 9));
    if (!scheme) return -1;
    const begin = at + 1 + scheme[0].length;
    if (stop < begin) {
      stop = begin;
      while (stop < s.length && s[stop] !== ')' && !/\s/.test(s[stop]!)) stop++;
    }
    return stop > begin && s[stop] === ')' ? stop + 1 : -1;
  };
  for (let i = 0; i < s.length; ) {
    const c = s[i];
    if (bold && c === '*' && s[i + 1] === '*') {
      const j = s.indexOf('*', i + 2);
      if (j > i + 2 && s[j + 1] === '*') {
        out += escapeHtml(s.slice(from, i)) + '<b>' + markup(s.slice(i + 2, j), links, false) + '</b>';
        i = from = j + 2;
        continue;
      }
    } else if (linksOn && c === '[') {
      if (close < i + 1) close = s.indexOf(']', i + 1);
      if (close === -1) linksOn = false; // no `]` after this one: no more links in this segment
      else if (close > i + 1) {
        let end = target.get(close);
        if (end === undefined) target.set(close, (end = targetEnd(close + 1)));
        if (end !== -1) {
          const url = s.slice(close + 2, end - 1);
          out += escapeHtml(s.slice(from, i)) + `<a href="${escapeAttr(url)}">${markup(s.slice(i + 1, close), false, bold)}</a>`;
          i = from = end;
          continue;
        }
      }
    }
    i++;
  }
  return out + escapeHtml(s.slice(from));
}

/** Convert one chunk (already split to the limit, fences balanced) to Telegram HTML. */
export function toTelegramHtml(chunk: string): string {
  const lines = chunk.split('\n');
  const out: string[] = [];
  let fence: { marker: string; lang: string; body: string[] } | undefined;
  for (const line of lines) {
    const m = fenceLine(line);
    if (fence) {
      if (m && m[0].startsWith(fence.marker[0]!) && m[0].length >= fence.marker.length && !m[1]) {
        const cls = fence.lang ? ` class="language-${escapeAttr(fence.lang)}"` : '';
        out.push(`<pre><code${cls}>${escapeHtml(fence.body.join('\n'))}</code></pre>`);
        fence = undefined;
      } else fence.body.push(line);
      continue;
    }
    if (m) {
      fence = { marker: m[0], lang: m[1], body: [] };
      continue;
    }
    out.push(inline(line));
  }
  // An unclosed fence (should not happen after splitMessage) is shown as the raw text.
  if (fence) out.push(escapeHtml([fence.marker + fence.lang, ...fence.body].join('\n')));
  return out.join('\n');
}

/**
 * A fence line with an optional language word: [marker, lang], or null. Same language as
 * /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/ but linear (that pattern backtracked over spaces).
 */
function fenceLine(line: string): [string, string] | null {
  // `\s` in the pattern took carriage returns and separators as spaces: so do we.
  const f = parseFenceLine(line.replace(/[\r\u2028\u2029]/g, ' '));
  if (!f) return null;
  const lang = f.info.trim();
  return /^[\w+#.-]*$/.test(lang) ? [f.marker, lang] : null;
}
