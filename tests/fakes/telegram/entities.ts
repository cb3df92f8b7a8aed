/**
 * Text handling of the fake Bot API: the entities Telegram detects in what a human types, and the
 * parse-mode check Telegram applies to what a bot sends. Only the parts Chorus relies on are
 * modelled, but those follow the platform: a bad tag is a 400, and the length limit counts the
 * visible text after entities are parsed, not the markup.
 */

export interface FakeEntity {
  type: 'mention' | 'bot_command' | 'text_mention';
  offset: number;
  length: number;
  user?: Record<string, unknown>;
}

/** Entities a Telegram client marks in plain typed text: @usernames and a leading /command. */
export function detectEntities(text: string): FakeEntity[] {
  const out: FakeEntity[] = [];
  const cmd = /^\/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{3,32})?/.exec(text);
  if (cmd) out.push({ type: 'bot_command', offset: 0, length: cmd[0].length });
  // Telegram only links @words of 5..32 username characters that are not part of a longer word.
  const re = /(^|[^A-Za-z0-9_@.])@([A-Za-z0-9_]{5,32})(?![A-Za-z0-9_])/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const offset = m.index + m[1]!.length;
    if (cmd && offset < cmd[0].length) continue;
    out.push({ type: 'mention', offset, length: m[2]!.length + 1 });
  }
  return out.sort((a, b) => a.offset - b.offset);
}

export class EntityParseError extends Error {}

const HTML_TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'code', 'pre', 'a', 'tg-spoiler', 'span', 'blockquote']);
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Parse Telegram-flavoured HTML into its visible text; throws EntityParseError like the Bot API. */
export function parseHtml(src: string): string {
  let out = '';
  const stack: string[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (ch === '<') {
      const close = src.indexOf('>', i);
      if (close < 0) throw new EntityParseError(`Unclosed start tag at byte offset ${i}`);
      const inner = src.slice(i + 1, close).trim();
      if (inner.startsWith('/')) {
        const name = inner.slice(1).trim().toLowerCase();
        if (stack.pop() !== name) throw new EntityParseError(`Unmatched end tag at byte offset ${i}, expected "</${stack.at(-1) ?? ''}>", found "</${name}>"`);
      } else {
        const name = (/^[a-zA-Z-]+/.exec(inner)?.[0] ?? '').toLowerCase();
        if (!HTML_TAGS.has(name)) throw new EntityParseError(`Unsupported start tag "${name}" at byte offset ${i}`);
        stack.push(name);
      }
      i = close + 1;
    } else if (ch === '&') {
      const semi = src.indexOf(';', i);
      const name = semi > 0 ? src.slice(i + 1, semi) : '';
      if (name in ENTITIES) {
        out += ENTITIES[name];
        i = semi + 1;
      } else if (/^#\d+$/.test(name)) {
        out += String.fromCodePoint(Number(name.slice(1)));
        i = semi + 1;
      } else {
        // Telegram tolerates a bare '&' that starts no entity.
        out += ch;
        i++;
      }
    } else {
      out += ch;
      i++;
    }
  }
  if (stack.length) throw new EntityParseError(`Can't find end tag corresponding to start tag "${stack.at(-1)}"`);
  return out;
}

const MDV2_RESERVED = '_*[]()~`>#+-=|{}.!';

/** MarkdownV2: every reserved character must be escaped; markup itself is not modelled. */
export function parseMarkdownV2(src: string): string {
  let out = '';
  for (let i = 0; i < src.length; i++) {
    const ch = src[i]!;
    if (ch === '\\') {
      out += src[i + 1] ?? '';
      i++;
    } else if (MDV2_RESERVED.includes(ch)) {
      throw new EntityParseError(`Character '${ch}' is reserved and must be escaped with the preceding '\\'`);
    } else out += ch;
  }
  return out;
}
