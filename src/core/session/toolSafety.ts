/**
 * A tool's answer is text from outside that nobody vetted. It reaches the model only as a tool
 * result, and before that the pass token, forged `<message …>` tags and name labels in it are
 * made harmless, as they are in replies and observations.
 */
import { escapeBlockText } from './prompt.js';
import { removeTokens } from '../text/passToken.js';
import { cleanDisplayName } from '../text/displayName.js';

/**
 * A tool's answer made safe to hand to a model: every pass token removed, every `<` that would
 * open or close a `message` tag escaped, and a line that starts with a participant's name label
 * (`Critic:`, `[Critic]:`, `**Critic**:`) quoted so it cannot pass for that participant speaking.
 */
export function neutralizeToolText(text: string, names: readonly string[]): string {
  let out = escapeBlockText(removeTokens(text));
  const labels = names.map((n) => cleanDisplayName(n)).filter((n) => n.length > 0);
  if (labels.length === 0) return out;
  const alternatives = labels.map(escapeRegExp).join('|');
  const label = new RegExp(`^([ \\t]*)(\\*\\*|\\[|__)?(${alternatives})(\\*\\*|\\]|__)?\\s*:`, 'gimu');
  out = out.replace(label, (_m, lead: string, _open, name: string) => `${lead}(text from the tool) ${name} said:`);
  return out;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
