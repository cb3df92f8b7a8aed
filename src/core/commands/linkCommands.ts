/**
 * `/group link`, `/group link <code>` and `/group unlink`: a chat joins or leaves a group's room.
 * The admin check of the chat the command was typed in is made before (commands.ts): a code is
 * made by an admin of a chat of the room and typed by an admin of the joining chat.
 */
import type { GroupDoc } from '../records.js';
import type { InboundMessage } from '../types.js';
import { LINK_CODE_TTL_MS } from '../roomTypes.js';
import { UserError } from '../errors.js';
import type { CommandContext } from './CommandContext.js';

const MINUTES = LINK_CODE_TTL_MS / 60_000;

export async function linkCommand(r: CommandContext, msg: InboundMessage, args: string[], g: GroupDoc | undefined): Promise<string> {
  if (args.length === 0) {
    if (!g) throw new UserError('this chat has no group to share; type /group link <code> here with a code made in the room this chat should join');
    const { code } = await r.admin.links.makeCode(g.id, { channel: msg.channel, chatId: msg.chatId }, r.task);
    return `Link code: ${code} (valid ${MINUTES} minutes, once). Type /group link ${code} in the other chat within ${MINUTES} minutes (an admin of that chat), or enter it in the web page's Link a chat.`;
  }
  // `K7P 4QX` typed with a space is one code too.
  const typed = args.join('');
  if (msg.channel === 'web') {
    const room = await r.admin.links.joinWeb(typed, r.task);
    return `The room “${room.title}” is on the web page now.`;
  }
  const { g: room, archived } = await r.admin.links.joinChat(typed, { channel: msg.channel, chatId: msg.chatId, title: msg.chatTitle, at: r.now() }, { isPrivate: msg.isPrivate === true }, r.task);
  const own = archived ? ` This chat's own group “${archived.title}” was archived; its history is kept.` : '';
  return `This chat joined the room “${room.title}”: messages here and in the room's other chats are shared.${own} /group unlink leaves it.`;
}

/** `/group unlink`: the chat it is typed in leaves the room (null: the answer was given here). */
export async function unlinkCommand(r: CommandContext, msg: InboundMessage, g: GroupDoc | undefined): Promise<string | null> {
  if (!g) throw new UserError('this chat is not part of any room');
  await r.admin.links.unlink(g.id, { channel: msg.channel, chatId: msg.chatId }, r.task);
  const text = `This chat left the room “${g.title}”; what was said here stays in the room's history. An admin can link it again with a new code.`;
  // The web page shows the answer to the asker; a chat that left the room is answered here at once.
  if (msg.channel === 'web') return text;
  await r.reply(msg, undefined, text);
  return null;
}
