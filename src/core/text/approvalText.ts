/**
 * A request for approval of a tool call as people read it: who wants to use which tool, every
 * argument (the whole JSON, pretty-printed), how to decide, and a digest of the call.
 *
 * People approve what they are shown, and approving runs the call the model asked for, so nothing
 * of the arguments may be left out: a model steered by a crafted message could put the harmful part
 * after padding, past any cut. Each channel lays the request out within its own limits
 * (telegram/approvalPosts.ts, discord/approvalPosts.ts): whole when it fits one message, in parts
 * that say "part k of n" with the buttons or commands only after the last, or as a file when it is
 * too long to read in the chat.
 *
 * The digest binds a decision to the call that was shown: the buttons carry it, the page sends it,
 * `/approve <id> <digest>` names it, and a decision naming another digest is refused.
 */
import { createHash } from 'node:crypto';
import type { ToolStepView } from '../toolTypes.js';

/** Hex characters of the digest: short enough to type, long enough that no other call shares it by chance. */
export const DIGEST_CHARS = 10;
/** More parts than this and the arguments go as a file: a wall of messages is not read. */
export const MAX_ARG_PARTS = 5;

/** A request for approval, as a channel posts it (`PostOptions.approval`). */
export interface ApprovalRequest {
  /** The call's id, what `/approve <id>` names. */
  id: string;
  /** The digest of the call's tool and arguments; absent on requests recorded before there was one. */
  digest?: string | undefined;
  /** "🔧 Analyst wants to use orders.cancel" */
  head: string;
  /** Every argument: the JSON, pretty-printed (secrets redacted as everywhere). */
  args: string;
  /** "Approve with /approve t12 or refuse with /deny t12 (arguments #0123456789)" */
  how: string;
}

/** One piece of the arguments; `continues`: it goes on with the previous piece's line (the cut was inside a line). */
export interface ArgPart {
  text: string;
  continues: boolean;
}

/** JSON with the keys of every object sorted: the same call digests alike whatever order a store kept its keys in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    const fields = keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The digest of a call: its server, tool and arguments. */
export function callDigest(server: string, tool: string, input: Record<string, unknown>): string {
  return createHash('sha256').update(`${server}.${tool}\n${canonicalJson(input)}`).digest('hex').slice(0, DIGEST_CHARS);
}

/** A digest as a person or a button gives it: `#0123456789` or `0123456789`, any case. */
export function normalDigest(text: string | undefined): string | undefined {
  const d = text?.trim().replace(/^#/, '').toLowerCase();
  return d ? d : undefined;
}

/** The request for approval of a waiting step, or undefined for any other step. */
export function approvalRequest(agentName: string, step: ToolStepView): ApprovalRequest | undefined {
  if (step.outcome !== 'waiting') return undefined;
  let args: string;
  try {
    args = JSON.stringify(step.input, null, 2);
  } catch {
    args = String(step.input);
  }
  const mark = step.digest ? ` (arguments #${step.digest})` : '';
  return {
    id: step.id,
    digest: step.digest,
    head: `🔧 ${agentName} wants to use ${step.server}.${step.tool}`,
    args,
    how: `Approve with /approve ${step.id} or refuse with /deny ${step.id}${mark}`,
  };
}

/** The whole request as plain text, for a channel that lays nothing out. */
export function approvalPlainText(r: ApprovalRequest): string {
  return `${r.head}\n${r.args}\n${r.how}`;
}

/** What heads part `k` of `n` (1-based). */
export function partHead(r: ApprovalRequest, k: number, n: number, continues: boolean): string {
  return `${r.head} — arguments, part ${k} of ${n}${continues ? ', going on with the line above' : ''}:`;
}

/** The line saying the arguments are in a file, and how long they are. */
export function fileNote(r: ApprovalRequest, name: string): string {
  const size = r.args.length.toLocaleString('en-US');
  return `The arguments (${size} characters of JSON) are in the attached file ${name}: read it before you decide.`;
}

/** The name of the file the arguments go in. */
export function argsFileName(r: ApprovalRequest): string {
  return `${r.id}-arguments.json`;
}

/**
 * The arguments in consecutive pieces of at most `budget` characters. A piece ends at a line's end
 * when one is near (that newline is the break between two messages and is not repeated), else
 * inside the line, never inside a character. Joining the pieces — with "\n" before one that does
 * not continue, directly before one that does — gives back the arguments exactly.
 */
export function argParts(args: string, budget: number): ArgPart[] {
  if (budget < 16) throw new RangeError('argParts: budget must be at least 16');
  const parts: ArgPart[] = [];
  let pos = 0;
  let continues = false;
  while (args.length - pos > budget) {
    const window = args.slice(pos, pos + budget + 1);
    const nl = window.lastIndexOf('\n');
    if (nl >= budget / 2) {
      parts.push({ text: args.slice(pos, pos + nl), continues });
      pos += nl + 1;
      continues = false;
      continue;
    }
    let cut = pos + budget;
    // Never split a character made of two UTF-16 units.
    if (/[\ud800-\udbff]/.test(args[cut - 1] ?? '')) cut--;
    parts.push({ text: args.slice(pos, cut), continues });
    pos = cut;
    continues = true;
  }
  parts.push({ text: args.slice(pos), continues });
  return parts;
}
