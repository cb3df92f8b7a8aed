/**
 * Pass detection and reply clean-up (SPEC §5). Fail-closed: anything that looks like the pass
 * token at either end makes the reply a pass, and the literal token never reaches a channel.
 */

const EDGE = String.raw`[\s*_~\x60"'“”‘’.,:;!?()\[\]<>{}|-]*`;
const TOKEN = String.raw`\[\s*pass\s*\]`;
const AT_START = new RegExp('^' + EDGE + TOKEN, 'i');
const AT_END = new RegExp(TOKEN + EDGE + '$', 'i');
const ANYWHERE = new RegExp(TOKEN, 'gi');
const BARE = new RegExp('^' + EDGE + 'pass' + EDGE + '$', 'i');

/** True when the reply means "I stay silent". Empty replies count as passes. */
export function isPass(text: string): boolean {
  const t = text.trim();
  if (t === '') return true;
  return AT_START.test(t) || AT_END.test(t) || BARE.test(t);
}

/**
 * Make a model reply fit to post: strip a leading name label (`Analyst:`, `**Analyst**:`,
 * `[Analyst]`) and any pass token left in the middle. Returns '' when nothing is left.
 */
export function cleanReply(text: string, agent: { id: string; name: string }): string {
  let t = text.trim();
  const names = [agent.name, agent.id, '@' + agent.id].map(escapeRe).join('|');
  const label = new RegExp(String.raw`^(?:\[(?:${names})\]|(?:\*\*|__)?(?:${names})(?:\*\*|__)?\s*:)\s*`, 'i');
  for (let i = 0; i < 2 && label.test(t); i++) t = t.replace(label, '').trim();
  // Repeat until stable: removing one token can join its neighbours into another ("[PA[PASS]SS]").
  for (let prev = ''; prev !== t; ) {
    prev = t;
    t = t.replace(ANYWHERE, '');
  }
  t = t.replace(/[ \t]{2,}/g, ' ').trim();
  return t;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
