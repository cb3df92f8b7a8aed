/**
 * `groups:` of the config file: groups created at start. A group lives in one chat (`channel` and
 * `chat_id`) or in several (`chats:`, its home first; the others are linked to its room). A web
 * chat in `chats:` has no chat id of its own: the web room of a group is found by the group's id,
 * which for a web home is its `chat_id` or else made from the title. The output always has the
 * home chat as `channel`/`chat_id`; `chats` is kept when the group was declared with it.
 */
import { z } from 'zod';
import { naturalGroupId } from '../core/groups/groupIds.js';

const CHANNELS = ['web', 'telegram', 'discord'] as const;

const chatId = z.union([z.string().min(1), z.number()]).transform(String);

/** One chat of a declared room; a web chat other than the home has no chat id. */
export interface DeclaredChat {
  channel: (typeof CHANNELS)[number];
  chat_id?: string | undefined;
}

const declaredChatSchema = z
  .object({
    channel: z.enum(CHANNELS),
    chat_id: chatId.optional(),
  })
  .strict();

export function declaredGroupSchema<C extends z.ZodType>(slug: z.ZodString, config: C) {
  return z
    .object({
      channel: z.enum(CHANNELS).optional(),
      chat_id: chatId.optional(),
      chats: z.array(declaredChatSchema).min(1).optional(),
      title: z.string().min(1).max(100).optional(),
      participants: z.array(slug).min(1),
      config: config.optional(),
    })
    .strict()
    .superRefine((g, ctx) => {
      const problem = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
      if (g.chats) {
        if (g.channel !== undefined) problem(['channel'], 'give either channel and chat_id, or chats (the group\'s chats, its home first), not both');
        else if (g.chat_id !== undefined) problem(['chat_id'], 'give either channel and chat_id, or chats (the group\'s chats, its home first), not both');
        g.chats.forEach((c, j) => {
          if (c.channel !== 'web' && c.chat_id === undefined) problem(['chats', j, 'chat_id'], `required for a ${c.channel} chat`);
          if (c.channel === 'web' && j > 0 && c.chat_id !== undefined) problem(['chats', j, 'chat_id'], "leave it out: a room's web chat is the page of the group, found by the group's id");
          if (c.channel === 'web' && j === 0 && c.chat_id === undefined && g.title === undefined) problem(['chats', 0, 'chat_id'], 'a web room needs its id here (a slug), or a title to make it from');
          if (c.channel === 'web' && g.chats!.findIndex((x) => x.channel === 'web') < j) problem(['chats', j, 'channel'], 'a room has one web chat');
        });
        return;
      }
      if (g.channel === undefined) problem(['channel'], 'required (or list the group\'s chats under chats)');
      if (g.chat_id === undefined) problem(['chat_id'], 'required');
    })
    .transform((g) => {
      const { chats, channel, chat_id, ...rest } = g;
      if (!chats) return { ...rest, channel: channel!, chat_id: chat_id!, chats: undefined as DeclaredChat[] | undefined };
      const home = chats[0]!;
      // A web home without an id is the room named after its title.
      const homeId = home.chat_id ?? naturalGroupId('web', '', g.title ?? '');
      return { ...rest, channel: home.channel, chat_id: homeId, chats: chats.map((c, j): DeclaredChat => (j === 0 ? { channel: c.channel, chat_id: homeId } : c)) as DeclaredChat[] | undefined };
    });
}
