/**
 * Changing and removing what Chorus posted on Discord, when the original in another chat of the
 * room was edited or deleted. A post's chunks are edited through the channel webhook that posted
 * them (a webhook may change only its own messages); the system voice's messages the bot posted
 * itself (no Manage Webhooks) through the bot's REST. A text that now needs fewer chunks empties
 * out the rest (deleted); one that needs more is cut to the chunks there are, with a marker.
 *
 * Refusals for good (the message or channel is gone, the webhook that posted it was deleted, the
 * bot may not) become PostRefusedError; 429s, 5xx and dropped connections pass as plain errors
 * and the core tries again later.
 */
import { Routes, type WebhookClient } from 'discord.js';
import { PostRefusedError } from '../../core/errors.js';
import type { ChatRef } from '../../core/types.js';
import { splitMessage } from '../../core/text/split.js';
import { DISCORD_MAX_MESSAGE } from './config.js';
import { isMissingPermission, isUnknownMessage, refusalOf, sanitizeError } from './errors.js';
import type { OutboundContext } from './outbound.js';
import { MissingWebhookPermission, isUnknownWebhook } from './webhooks.js';

/** Ends a text cut to fit the chunks its post has. */
export const CUT_MARKER = '\n… (cut: the edited message is longer than the one posted here)';

/**
 * Which chunk gets which text, and which chunks go. The last chunk is kept when fewer are needed
 * (it carries the post's files); a text longer than the chunks there are is cut, with the marker.
 */
export function planEdit(ids: readonly string[], text: string, max = DISCORD_MAX_MESSAGE): { edits: Array<[string, string]>; deletes: string[] } {
  if (ids.length === 0) return { edits: [], deletes: [] };
  let chunks = splitMessage(text, max).filter((c) => c.trim().length > 0);
  if (chunks.length === 0) chunks = [''];
  if (chunks.length > ids.length) {
    const keep = chunks.slice(0, ids.length - 1);
    const rest = chunks.slice(ids.length - 1).join('\n');
    const room = max - CUT_MARKER.length;
    const points = Array.from(rest.slice(0, room));
    while (points.join('').length > room) points.pop();
    chunks = [...keep, points.join('').trimEnd() + CUT_MARKER];
  }
  const edits: Array<[string, string]> = chunks.slice(0, -1).map((c, i) => [ids[i]!, c]);
  edits.push([ids[ids.length - 1]!, chunks[chunks.length - 1]!]);
  return { edits, deletes: ids.slice(chunks.length - 1, ids.length - 1) };
}

export interface EditJob {
  chat: ChatRef;
  ids: readonly string[];
  /** The text as the post shows it (an agent's label included). */
  text: string;
  /** A relayed person's text pings nobody. */
  mentions: 'none' | 'users';
  /** The system voice: its messages may be the bot's own (posted without the webhook). */
  system: boolean;
}

export async function editChunks(ctx: OutboundContext, job: EditJob): Promise<void> {
  const plan = planEdit(job.ids, job.text);
  for (const [id, content] of plan.edits) await editOne(ctx, job, id, content);
  for (const id of plan.deletes) await deleteOne(ctx, job.chat, id);
}

export async function deleteChunks(ctx: OutboundContext, chat: ChatRef, ids: readonly string[]): Promise<void> {
  for (const id of ids) await deleteOne(ctx, chat, id);
}

async function editOne(ctx: OutboundContext, job: EditJob, id: string, content: string): Promise<void> {
  const { chat } = job;
  const where = `Discord: editing message ${id} in ${chat.chatId}`;
  const parse: Array<'users'> = job.mentions === 'none' ? [] : ['users'];
  let first: Error;
  try {
    await throughWebhook(ctx, chat, where, (hook) => hook.editMessage(id, { content, allowedMentions: { parse }, ...(chat.threadId ? { threadId: chat.threadId } : {}) }));
    return;
  } catch (err) {
    first = failure(err, where);
    if (!job.system || !notThroughWebhook(err)) throw first;
  }
  // The system voice's message may be the bot's own: the bot edits it (another's: 403, refused).
  try {
    await ctx.client.rest.patch(Routes.channelMessage(chat.threadId ?? chat.chatId, id), { body: { content, allowed_mentions: { parse } } });
  } catch (err) {
    throw isMissingPermission(err) || isUnknownMessage(err) ? first : failure(err, where);
  }
}

/**
 * Remove one message: through the webhook, else through the bot (its own messages, or any with
 * Manage Messages). One already gone is done: a deletion resumed after a crash meets the chunks it
 * removed before.
 */
async function deleteOne(ctx: OutboundContext, chat: ChatRef, id: string): Promise<void> {
  const where = `Discord: deleting message ${id} in ${chat.chatId}`;
  let first: Error;
  try {
    await throughWebhook(ctx, chat, where, (hook) => hook.deleteMessage(id, chat.threadId));
    return;
  } catch (err) {
    first = failure(err, where);
    if (!notThroughWebhook(err)) throw first;
  }
  try {
    await ctx.client.rest.delete(Routes.channelMessage(chat.threadId ?? chat.chatId, id));
  } catch (err) {
    if (isUnknownMessage(err)) return;
    throw isMissingPermission(err) ? first : failure(err, where);
  }
}

/** `err` sanitised, as the core reads it (refusals for good are PostRefusedError). */
function failure(err: unknown, where: string): Error {
  return err instanceof PostRefusedError ? err : refusalOf(sanitizeError(err, where));
}

/** The webhook cannot do it (not its message, no webhook to use): the bot may. */
function notThroughWebhook(err: unknown): boolean {
  return err instanceof PostRefusedError || err instanceof MissingWebhookPermission || isUnknownMessage(err) || isMissingPermission(err);
}

/**
 * Run `act` with the channel webhook. One deleted on Discord is forgotten (the next post makes a
 * new one), but what the old one posted no webhook can change any more: refused.
 */
async function throughWebhook(ctx: OutboundContext, chat: ChatRef, where: string, act: (hook: WebhookClient) => Promise<unknown>): Promise<void> {
  const hook = await ctx.webhooks.get(chat.chatId);
  try {
    await act(hook);
  } catch (err) {
    if (!isUnknownWebhook(err)) throw err;
    ctx.webhooks.forget(chat.chatId);
    throw new PostRefusedError(`${where}: the webhook that posted it was deleted on Discord; its messages can no longer be changed`, { cause: sanitizeError(err, where) });
  }
}
