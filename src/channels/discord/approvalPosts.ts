/**
 * A request for approval on Discord, every argument shown before the commands that decide it
 * (webhook messages cannot carry buttons; the request names `/approve <id>` and `/deny <id>`):
 * - whole, the arguments as a JSON code block, when it fits one message (2,000 characters);
 * - else in parts, each saying "part k of n" with its piece of the arguments as a code block, the
 *   line naming the commands on the last one only;
 * - else (more than MAX_ARG_PARTS parts: nobody reads a wall of messages) the arguments as a .json
 *   file under a message saying to read it first.
 * The arguments are model output. Inside a code block Discord renders nothing as markup except the
 * fence itself, so every backtick is written as the JSON escape \u0060: the block cannot be closed
 * early, and the JSON shown still reads back as exactly the arguments. The posts ping nobody.
 */
import type { ApprovalRequest, ArgPart } from '../../core/text/approvalText.js';
import { argParts, argsFileName, fileNote, MAX_ARG_PARTS, partHead } from '../../core/text/approvalText.js';
import { DISCORD_MAX_MESSAGE } from './config.js';

/** How a request goes out: its messages in order, and a file with the last one (when the arguments are too long). */
export interface DiscordApproval {
  chunks: string[];
  files: Array<{ attachment: Buffer; name: string }>;
}

const OPEN = '```json\n';
const CLOSE = '\n```';
const BACKTICK_NOTE = '(Backticks in the arguments are shown as \\u0060, which JSON reads as the same character.)';

function message(label: string, before: string, args: string, after: string | undefined): string {
  return `${label}${before}\n${OPEN}${args}${CLOSE}${after === undefined ? '' : `\n${after}`}`;
}

/** The messages of a request, each within Discord's limit; `label` first (an agent shown under another name). */
export function discordApproval(r: ApprovalRequest, label = ''): DiscordApproval {
  const args = r.args.replaceAll('`', '\\u0060');
  const how = args === r.args ? r.how : `${BACKTICK_NOTE}\n${r.how}`;
  const whole = message(label, r.head, args, how);
  if (whole.length <= DISCORD_MAX_MESSAGE) return { chunks: [whole], files: [] };
  // Room for the longest head a part can have ("part 99 of 99, going on …") and the last one's lines.
  const fixed = label.length + partHead(r, 99, 99, true).length + OPEN.length + CLOSE.length + how.length + 2;
  const pieces = argParts(args, DISCORD_MAX_MESSAGE - fixed);
  if (pieces.length <= MAX_ARG_PARTS) {
    const n = pieces.length;
    const part = (p: ArgPart, i: number) =>
      message(label, partHead(r, i + 1, n, p.continues), p.text, i === n - 1 ? how : undefined);
    return { chunks: pieces.map(part), files: [] };
  }
  // A file needs no escaping: it is the arguments exactly.
  const name = argsFileName(r);
  const note = `${label}${r.head}\n${fileNote(r, name)}\n${r.how}`;
  return { chunks: [note], files: [{ attachment: Buffer.from(r.args, 'utf8'), name }] };
}
