/**
 * The lines the room is shown of tool steps (the transcript, Telegram and Discord, other agents'
 * mailboxes), and cutting tool text with a marker that says so.
 */
import type { ToolOutcome, ToolStepView } from '../toolTypes.js';
import { approvalPlainText, approvalRequest } from './approvalText.js';
import { cutUtf8, utf8Length } from './utf8.js';

/** How much of a result other agents observe, and a Telegram or Discord line shows. */
export const SHORT_RESULT_CHARS = 200;
/** How much of the arguments and of the result `show_tools: full` posts. */
const FULL_PART_BYTES = 1500;

/** Cut a text to `maxBytes` of UTF-8 with a marker that says how much there was. */
export function cutWithMarker(text: string, maxBytes: number, why: string): string {
  const bytes = utf8Length(text);
  if (bytes <= maxBytes) return text;
  return `${cutUtf8(text, maxBytes)}\n… [${why}: ${bytes.toLocaleString('en-US')} bytes, showing the first ${maxBytes.toLocaleString('en-US')}]`;
}

/** One line of text, at most `max` characters. */
export function shortText(text: string, max = SHORT_RESULT_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The arguments as one compact JSON line. */
export function argsLine(input: Record<string, unknown>, max = SHORT_RESULT_CHARS): string {
  let json: string;
  try {
    json = JSON.stringify(input);
  } catch {
    json = '{…}';
  }
  return shortText(json, max);
}

const OUTCOME_WORDS: Record<ToolOutcome, string> = {
  ok: '',
  error: ' (it answered with an error)',
  timeout: ' (no answer in time)',
  unavailable: ' (the server was unavailable)',
  denied: ' (not approved)',
  interrupted: ' (interrupted; outcome unknown)',
  cancelled: ' (cancelled)',
};

/**
 * The transcript text of a step: "🔧 Analyst used orders.lookup_order", or the whole request for
 * approval with every argument (whoever reads only the text approves what it shows, never a cut).
 */
export function stepLine(agentName: string, step: ToolStepView): string {
  if (step.outcome === 'waiting') return approvalPlainText(approvalRequest(agentName, step)!);
  return `🔧 ${agentName} used ${step.server}.${step.tool}${OUTCOME_WORDS[step.outcome]}`;
}

/** What Telegram and Discord post for a step: a request whole, a finished step as `show_tools` says (null: nothing). */
export function channelStepText(agentName: string, step: ToolStepView, show: 'none' | 'compact' | 'full'): string | null {
  // A request shows every argument whatever `show_tools` says: people approve what they read.
  const request = approvalRequest(agentName, step);
  if (request) return approvalPlainText(request);
  if (show === 'none') return null;
  const line = stepLine(agentName, step);
  if (show === 'compact') return line;
  const args = cutWithMarker(JSON.stringify(step.input, null, 1), FULL_PART_BYTES, 'cut');
  const result = cutWithMarker(step.result, FULL_PART_BYTES, 'cut');
  return `${line}\n${args}\n→ ${result}`;
}

/** What other agents observe of a step: that the call happened and its short result, never the raw payload. */
export function observedStep(step: ToolStepView): string {
  const label = `${step.server}.${step.tool}`;
  const result = step.outcome === 'waiting' ? 'waiting for approval' : step.outcome === 'ok' ? shortText(step.result) : OUTCOME_WORDS[step.outcome].trim().replace(/^\(|\)$/g, '');
  return `used ${label} ${argsLine(step.input, 120)} → ${result}`;
}
