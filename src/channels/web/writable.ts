/**
 * Whether the page may write to a group: its home is the web, or the web is one of the chats of
 * its room (a link `{channel: 'web'}`). Everything the page can change — messages, uploads, edits,
 * deletions, reactions, /stop, regenerating, retries, tool decisions — asks this one question, so
 * a group the web only follows stays read-only everywhere at once.
 */
import type { GroupView } from '../../core/readModels.js';
import { HttpError } from './http.js';

/** What the rule needs to know of a group. */
export type WritableFacts = Pick<GroupView, 'id' | 'archived' | 'channel' | 'chatId' | 'links'>;

/** The web chat of the group (the id messages from the page are handed over with), or undefined. */
export function webChatOf(g: Pick<GroupView, 'channel' | 'chatId' | 'links'>): string | undefined {
  if (g.channel === 'web') return g.chatId;
  return g.links?.find((l) => l.channel === 'web')?.chatId;
}

/**
 * The group and its web chat, or an error: 409 `archived` for a dissolved group, 403 `read_only`
 * for one that lives on another platform and whose room the web has not joined.
 */
export function requireWritable<G extends WritableFacts>(g: G): G & { webChatId: string } {
  if (g.archived) throw new HttpError(409, 'archived', `group "${g.id}" is dissolved`);
  const webChatId = webChatOf(g);
  if (webChatId === undefined) {
    throw new HttpError(
      403,
      'read_only',
      `group "${g.id}" lives on ${g.channel}; the web feed only shows it (to write here, type /group link there and enter its code on the page)`,
    );
  }
  return { ...g, webChatId };
}
