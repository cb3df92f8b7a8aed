/**
 * Agent replies are Markdown-ish; Telegram renders a small HTML subset. We convert only what is
 * unambiguous (code fences, inline code, **bold**, [links](https://…)) and escape everything else,
 * so the common case renders nicely and the rare miss still reads as the agent wrote it. If
 * Telegram rejects the markup anyway, the sender falls back to the plain chunk (SPEC §7.1).
 */

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttr = (s: string): string => escapeHtml(s).replace(/"/g, '&quot;');

/** Inline markup of one non-code line segment. */
function inline(text: string): string {
  const out: string[] = [];
  // Split off inline code first: nothing inside backticks is markup.
  const parts = text.split(/(`[^`\n]+`)/);
  for (const part of parts) {
    if (part.length > 2 && part.startsWith('`') && part.endsWith('`')) {
      out.push(`<code>${escapeHtml(part.slice(1, -1))}</code>`);
      continue;
    }
    let s = escapeHtml(part);
    s = s.replace(/\*\*([^*\n]+?)\*\*/g, '<b>$1</b>');
    s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_m, label: string, url: string) => `<a href="${escapeAttr(url.replace(/&amp;/g, '&'))}">${label}</a>`);
    out.push(s);
  }
  return out.join('');
}

/** Convert one chunk (already split to the limit, fences balanced) to Telegram HTML. */
export function toTelegramHtml(chunk: string): string {
  const lines = chunk.split('\n');
  const out: string[] = [];
  let fence: { marker: string; lang: string; body: string[] } | undefined;
  for (const line of lines) {
    const m = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      if (m && m[1]!.startsWith(fence.marker[0]!) && m[1]!.length >= fence.marker.length && !m[2]) {
        const cls = fence.lang ? ` class="language-${escapeAttr(fence.lang)}"` : '';
        out.push(`<pre><code${cls}>${escapeHtml(fence.body.join('\n'))}</code></pre>`);
        fence = undefined;
      } else fence.body.push(line);
      continue;
    }
    if (m) {
      fence = { marker: m[1]!, lang: m[2] ?? '', body: [] };
      continue;
    }
    out.push(inline(line));
  }
  // An unclosed fence (should not happen after splitMessage) is shown as the raw text.
  if (fence) out.push(escapeHtml([fence.marker + fence.lang, ...fence.body].join('\n')));
  return out.join('\n');
}
