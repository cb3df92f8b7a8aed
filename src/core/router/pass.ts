/**
 * Pass detection and reply clean-up. The rules live in core/text/passScrubber (one
 * engine for the stream and the posted reply); this module is the router's view of them.
 * Fail-closed: the token is recognised after folding (full-width, zero-width, spaced out), every
 * occurrence is removed, and a reply that is only decoration around it is a pass. The reaction
 * token `[REACT 👍]` is removed the same way; a reply that posts nothing but carried one reacts
 * where reacting is offered (a voluntary turn with a message to react to).
 */
import { scrubReply, type ScrubOptions, type ScrubVerdict, type Speaker } from '../text/passScrubber.js';

/**
 * How much real text (letters, digits, symbols; not decoration) may come before a trailing token
 * for the reply to still count as a pass. Where passing is offered, a sentence or two of filler
 * ("I agree with the analyst, nothing to add. [PASS]") is a pass. On an addressed turn none: a
 * person asked, so any real text next to a token is the answer and the token is stripped; only a
 * reply with no text at all passes. The stream holds back the same amount, so a turn
 * is never shown and then passed.
 */
export const PASS_FILLER_MAX = { offered: 120, addressed: 0 } as const;

export interface JudgeOptions {
  /** The replying agent (its own name label is stripped). */
  agent: Speaker;
  /** The other participants (their name labels are stripped too, and reported). */
  others?: readonly Speaker[] | undefined;
  /**
   * Whether passing was offered (voluntary turns): then a token before the text is a pass too.
   * On addressed turns a token next to real text is stripped and the text kept.
   */
  mayPass: boolean;
  /**
   * Text was already streamed for this turn: the reply is then not turned into a pass by a
   * trailing token, so nothing shown live is taken back (the stream holds text back until that
   * can no longer happen, so this only settles rounding differences).
   */
  streamed?: boolean | undefined;
  /**
   * Whether reacting (`[REACT 👍]`) was offered: a voluntary turn whose round has a person's
   * message. Where it was not, a reply that is only the token is a pass where passing is offered,
   * and on an addressed turn the emoji is the answer: a person asked, and what the agent said is
   * posted (as a reply of only decoration is), never the token.
   */
  mayReact?: boolean | undefined;
}

/** The scrubber settings for one turn: shared by its stream filter and its verdict. */
export function passRules(o: JudgeOptions): ScrubOptions {
  return {
    self: o.agent,
    others: o.others,
    leadingTokenPasses: o.mayPass && !o.streamed,
    fillerMax: o.streamed ? 0 : o.mayPass ? PASS_FILLER_MAX.offered : PASS_FILLER_MAX.addressed,
    decorationPasses: o.mayPass,
  };
}

/** The router's decision on one reply: a reaction, a pass, or the text to post. */
export function judgeReply(text: string, o: JudgeOptions): ScrubVerdict {
  const v = scrubReply(text, passRules(o));
  if (v.reaction === null || o.mayReact) return v;
  return o.mayPass ? { ...v, reaction: null } : { ...v, pass: false, text: v.reaction, reaction: null };
}

/** True when the reply means "I stay silent" where passing is offered. Empty replies count. */
export function isPass(text: string): boolean {
  return scrubReply(text, { leadingTokenPasses: true, fillerMax: PASS_FILLER_MAX.offered }).pass;
}

/**
 * Make a model reply fit to post: strip a leading name label (`Analyst:`, `**Analyst**:`,
 * `[Analyst]`; other participants' labels too when `others` is given) and every pass token.
 * Returns '' when nothing is left.
 */
export function cleanReply(text: string, agent: Speaker, others?: readonly Speaker[]): string {
  return scrubReply(text, { self: agent, others, leadingTokenPasses: false, fillerMax: 0 }).text;
}
