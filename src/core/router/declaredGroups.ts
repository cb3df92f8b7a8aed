/**
 * The groups of the config file's `groups:`, created at start when their chat has none yet. One
 * declared group that cannot be made must never stop the others, nor the daemon: it is left out
 * with a log line saying why, and declared again at the next start.
 */
import type { Logger } from '../ports.js';
import type { ChannelKind, GroupConfig } from '../types.js';
import { StoreUnavailableError, UserError, describeError } from '../errors.js';
import type { GroupManager } from '../groups/GroupManager.js';
import { naturalGroupId } from '../groups/groupIds.js';
import type { GroupAdmin } from '../groups/GroupAdmin.js';

/** A group as the config file declares it. */
export interface DeclaredGroup {
  channel: ChannelKind;
  chatId: string;
  title?: string | undefined;
  participants: string[];
  config?: Partial<GroupConfig> | undefined;
  /** The room's other chats (`groups[].chats` after the first); a web chat's id is the group's. */
  links?: Array<{ channel: ChannelKind; chatId?: string | undefined }> | undefined;
}

export async function createDeclaredGroups(d: { groups: GroupManager; gateway: GroupAdmin; logger: Logger }, declared: readonly DeclaredGroup[]): Promise<void> {
  for (const decl of declared) {
    const existing = d.groups.find(decl.channel, decl.chatId);
    if (existing) {
      // Made at an earlier start: its chats are linked again only where they are not (yet).
      if (decl.links?.length && existing.channel === decl.channel && existing.chatId === decl.chatId) await d.gateway.links.declare(existing, decl.links);
      continue;
    }
    const title = decl.title ?? decl.chatId;
    // A web room's id is its chat id; other chats get an id made from theirs.
    const id = decl.channel === 'web' ? decl.chatId : undefined;
    // Sorted, the id without a -2, -3… comes first.
    const [unreadable] = d.groups.unreadable().filter((x) => mayHoldDeclared(x, decl)).sort();
    if (unreadable) {
      // Its data is there but cannot be read (the store's error line named the file and the
      // problem). A new group in its place would split the chat's history, and writing over the
      // files would lose it: the group is left out until its files can be read again.
      d.logger.warn({ group: unreadable, channel: decl.channel, chatId: decl.chatId }, 'a declared group whose data cannot be read is left out; its files are kept untouched, the other groups start');
      continue;
    }
    let g;
    try {
      g = d.groups.create({ channel: decl.channel, chatId: decl.chatId, title, participants: decl.participants, config: decl.config, id });
    } catch (err) {
      // Its id is taken by a group kept for its history (a dissolved web room, still declared).
      if (err instanceof UserError) {
        d.logger.warn({ group: id, channel: decl.channel, chatId: decl.chatId, err: err.message }, 'a declared group was not created; the other groups start');
        continue;
      }
      throw err;
    }
    try {
      await d.gateway.persistNew(g);
    } catch (err) {
      // Another instance sharing the database created it at the same moment: it is theirs.
      if (err instanceof UserError && err.code === 'conflict') continue;
      // Its first record was refused (the store cannot write, or another instance took the new
      // group's lease first): nothing of it was kept. It is declared again at the next start (or
      // by its owner's start).
      if (err instanceof StoreUnavailableError) {
        d.groups.forget(g);
        d.logger.warn({ group: g.id, err: describeError(err) }, 'a declared group could not be created now; nothing was kept, the others start');
        continue;
      }
      throw err;
    }
    if (decl.links?.length) await d.gateway.links.declare(g, decl.links);
  }
}

/**
 * Whether group `id` may hold this declared chat's data: a web room's id is its chat id; other
 * chats' is made from theirs, with a `-2`, `-3`… added when that was taken when it was created.
 */
export function mayHoldDeclared(id: string, decl: Pick<DeclaredGroup, 'channel' | 'chatId' | 'title'>): boolean {
  if (decl.channel === 'web') return id === decl.chatId;
  const natural = naturalGroupId(decl.channel, decl.chatId, decl.title ?? decl.chatId);
  const stem = `${natural.slice(0, 56)}-`;
  return id === natural || (id.startsWith(stem) && /^\d+$/.test(id.slice(stem.length)));
}
