/**
 * An agent's (or a relayed person's) files with the last chunk of its text, through the channel
 * webhook. A server's upload limit depends on its boosts, so it is learnt from the refusal (413,
 * code 40005): the files are then split into smaller messages, and a file too large even alone is
 * named in a line instead of being posted, so the rest of the post still arrives.
 */
import { sizeText } from '../../core/fileTypes.js';
import type { ChatRef } from '../../core/types.js';
import { DISCORD_MAX_MESSAGE } from './config.js';
import { DiscordPostError } from './errors.js';
import { sendChunk, type OutboundContext, type Sender } from './outbound.js';

/** A file as discord.js uploads it. */
export type Upload = { attachment: Buffer; name: string };

/** Discord's code for "Request entity too large". */
const ENTITY_TOO_LARGE = 40005;

function tooLarge(err: unknown): boolean {
  return err instanceof DiscordPostError && (err.code === ENTITY_TOO_LARGE || err.status === 413);
}

/** Post `content` with `files` (halves, then one by one, while the server finds them too large); the ids in order. */
export async function sendWithFiles(ctx: OutboundContext, chat: ChatRef, content: string, files: readonly Upload[], who: Sender, isSystem: boolean): Promise<string[]> {
  try {
    return [await sendChunk(ctx, chat, content, who, isSystem, [...files])];
  } catch (err) {
    if (!tooLarge(err)) throw err;
    if (files.length > 1) {
      const half = Math.ceil(files.length / 2);
      const first = await sendWithFiles(ctx, chat, content, files.slice(0, half), who, isSystem);
      return [...first, ...(await sendWithFiles(ctx, chat, '', files.slice(half), who, isSystem))];
    }
    const file = files[0]!;
    ctx.log.warn({ chatId: chat.chatId, file: file.name, bytes: file.attachment.byteLength }, "discord: a file is over the server's upload limit; it is named instead of posted");
    const line = `[${file.name} (${sizeText(file.attachment.byteLength)}) is over this server's upload limit and was not posted]`;
    const texts = !content ? [line] : content.length + 1 + line.length <= DISCORD_MAX_MESSAGE ? [`${content}\n${line}`] : [content, line];
    const ids: string[] = [];
    for (const t of texts) ids.push(await sendChunk(ctx, chat, t, who, isSystem));
    return ids;
  }
}
