/**
 * Display names of people, as they enter from any channel (web, Telegram, Discord). A name is
 * shown on the page, in notices and in what models read, so it must not carry anything that
 * renders differently from what it is: bidi overrides ("\u202Etsylan\u202CA" showing as
 * "Analyst"), zero-width characters, control characters, or unbounded length.
 *
 * `impersonates` answers whether a person's name would read as one of the agents' names. It is
 * deliberately stricter than handle matching (core/text/normalize.ts keeps letters of other
 * scripts distinct so `@аnalyst` addresses nobody): here a Cyrillic `а` is folded to Latin `a`,
 * because a name that merely *looks* like "Analyst" is exactly the problem.
 */
import { foldForMatching, removeDisplayControls } from './normalize.js';

/** Longest display name kept, in code points. */
export const MAX_DISPLAY_NAME = 64;

/** C0 and C1 control characters (newlines and tabs included: a name is one line). */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * A name ready to show: invisible and bidi characters removed, controls turned into spaces,
 * whitespace collapsed, trimmed, and cut to `max` code points (never inside a surrogate pair).
 * Returns '' when nothing visible is left; callers choose the fallback.
 */
export function cleanDisplayName(raw: string, max = MAX_DISPLAY_NAME): string {
  const cleaned = removeDisplayControls(raw).replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim();
  const points = Array.from(cleaned);
  return points.length > max ? points.slice(0, max).join('').trimEnd() : cleaned;
}

/**
 * Letters of other scripts that render like Latin ones in common fonts (Cyrillic, Greek,
 * Latin small capitals). Only the ones that are indistinguishable at a glance.
 */
const LOOKALIKES: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x',
  і: 'i', ї: 'i', ј: 'j', ѕ: 's', ԁ: 'd', ԛ: 'q', ԝ: 'w', һ: 'h', ӏ: 'l', ɑ: 'a', ɡ: 'g', ı: 'i',
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', μ: 'u', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w',
  ᴀ: 'a', ʙ: 'b', ᴄ: 'c', ᴅ: 'd', ᴇ: 'e', ɢ: 'g', ʜ: 'h', ɪ: 'i', ᴊ: 'j', ᴋ: 'k', ʟ: 'l', ᴍ: 'm', ɴ: 'n', ᴏ: 'o', ᴘ: 'p', ʀ: 'r', ᴛ: 't', ᴜ: 'u', ᴠ: 'v', ᴡ: 'w', ʏ: 'y', ᴢ: 'z',
  '0': 'o', '1': 'l', '3': 'e', '5': 's',
};

/**
 * Words that only decorate a name ("Analyst (bot)", "The Analyst", "Analyst AI", "official
 * analyst"): dropped before comparing, so adding them does not make a different name.
 */
const DECORATION = new Set(['bot', 'ai', 'agent', 'assistant', 'official', 'model', 'llm', 'the', 'real', 'verified', 'gpt', 'claude']);

/** The words of a name as compared: folded (NFKC, invisibles), lower case, look-alikes mapped. */
function nameWords(name: string): string[] {
  const folded = foldForMatching(name).toLowerCase();
  const words = folded.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  return words.map((w) => Array.from(w, (c) => LOOKALIKES[c] ?? c).join(''));
}

/** One comparable key per name: its non-decorative words joined, so spacing and punctuation do not matter. */
function nameKey(name: string): string {
  const words = nameWords(name);
  const meaningful = words.filter((w) => !DECORATION.has(w));
  return (meaningful.length > 0 ? meaningful : words).join('');
}

/** What an agent may be called by: its name, id and aliases. */
export interface AgentIdentity {
  id: string;
  name: string;
  aliases?: readonly string[] | undefined;
}

/**
 * The agent a person's display name would read as, if any: same name, id or alias after case
 * and compatibility folding, with look-alike letters, spacing, punctuation and decorations such
 * as "(bot)" ignored.
 */
export function impersonates(name: string, agents: readonly AgentIdentity[]): AgentIdentity | undefined {
  const key = nameKey(name);
  if (key === '') return undefined;
  for (const a of agents) {
    for (const n of [a.name, a.id, ...(a.aliases ?? [])]) {
      const k = nameKey(n.replace(/^@/, ''));
      if (k !== '' && k === key) return a;
    }
  }
  return undefined;
}
