/**
 * Updates that can never be handed over. An update whose shape is not what the Bot API documents
 * (a `message` without `chat`, say) fails the same way however often it comes, and Telegram keeps
 * delivering an update until it is confirmed — in both modes the bot's later updates wait behind
 * it. Such an update is kept as a dead letter (one log line with its id, `/metrics`, and the raw
 * update where an operator can read it) and then confirmed. A failure to record a well-formed
 * update (storage trouble) is a different error type and is never confirmed: it comes again.
 */
import type { Update } from 'grammy/types';
import type { DeadLetters, Logger } from '../../core/ports.js';
import { describeError } from './errors.js';

/** The update does not have the shape Chorus reads: it would fail the same way every time. */
export class MalformedUpdateError extends Error {
  override readonly name = 'MalformedUpdateError';
}

/** Keep one malformed update; throws when it could not be kept (it must not be confirmed then). */
export type KeepDeadLetter = (update: Update, reason: string) => Promise<void>;

/** What a failed `bot.handleUpdate` was about: grammY wraps the handler's error in a BotError. */
export function handlerError(err: unknown): unknown {
  return err instanceof Error && 'error' in err ? (err as { error: unknown }).error : err;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v);

function chatProblem(chat: unknown, where: string): string | null {
  if (!isObj(chat)) return `${where}.chat is missing`;
  if (!isInt(chat.id)) return `${where}.chat.id is not a whole number`;
  return typeof chat.type === 'string' ? null : `${where}.chat.type is not text`;
}

function entityProblem(e: unknown): boolean {
  if (!isObj(e) || !isInt(e.offset) || !isInt(e.length) || typeof e.type !== 'string') return true;
  return e.type === 'text_mention' && !(isObj(e.user) && isInt(e.user.id));
}

/** A file as the Bot API describes one (photo sizes also say their width and height). */
function fileOk(f: unknown, photo: boolean): boolean {
  if (!isObj(f) || typeof f.file_id !== 'string' || typeof f.file_unique_id !== 'string') return false;
  if (f.file_size !== undefined && !isInt(f.file_size)) return false;
  if (f.file_name !== undefined && typeof f.file_name !== 'string') return false;
  return !photo || (isInt(f.width) && isInt(f.height));
}

function messageProblem(m: unknown, where: string): string | null {
  if (!isObj(m)) return `${where} is not an object`;
  const chat = chatProblem(m.chat, where);
  if (chat) return chat;
  for (const k of ['message_id', 'date']) if (!isInt(m[k])) return `${where}.${k} is not a whole number`;
  for (const k of ['message_thread_id', 'migrate_to_chat_id', 'migrate_from_chat_id']) if (m[k] !== undefined && !isInt(m[k])) return `${where}.${k} is not a whole number`;
  for (const k of ['from', 'sender_chat']) if (m[k] !== undefined && !(isObj(m[k]) && isInt(m[k].id))) return `${where}.${k} has no numeric id`;
  for (const k of ['text', 'caption']) if (m[k] !== undefined && typeof m[k] !== 'string') return `${where}.${k} is not text`;
  for (const k of ['entities', 'caption_entities']) {
    const list = m[k];
    if (list !== undefined && (!Array.isArray(list) || list.some(entityProblem))) return `${where}.${k} is not a list of entities`;
  }
  if (m.photo !== undefined && !(Array.isArray(m.photo) && m.photo.every((p) => fileOk(p, true)))) return `${where}.photo is not a list of photo sizes`;
  if (m.document !== undefined && !fileOk(m.document, false)) return `${where}.document is not a file`;
  const r = m.reply_to_message;
  if (r !== undefined && !(isObj(r) && isInt(r.message_id) && (r.from === undefined || (isObj(r.from) && isInt(r.from.id))))) return `${where}.reply_to_message is not a message`;
  return null;
}

function callbackProblem(q: unknown): string | null {
  if (!isObj(q)) return 'callback_query is not an object';
  if (typeof q.id !== 'string' || !q.id) return 'callback_query.id is not text';
  if (!(isObj(q.from) && isInt(q.from.id))) return 'callback_query.from has no numeric id';
  if (q.data !== undefined && typeof q.data !== 'string') return 'callback_query.data is not text';
  const m = q.message;
  // A message too old to read comes with date 0 and only its chat and id.
  if (m !== undefined) return !isObj(m) ? 'callback_query.message is not an object' : (chatProblem(m.chat, 'callback_query.message') ?? (isInt(m.message_id) ? null : 'callback_query.message.message_id is not a whole number'));
  return null;
}

function reactionListProblem(list: unknown): boolean {
  // Kinds other than emoji (custom, paid, ones added later) are skipped, not read.
  return !Array.isArray(list) || list.some((r) => !isObj(r) || typeof r.type !== 'string' || (r.type === 'emoji' && typeof r.emoji !== 'string'));
}

function reactionProblem(r: unknown): string | null {
  if (!isObj(r)) return 'message_reaction is not an object';
  const chat = chatProblem(r.chat, 'message_reaction');
  if (chat) return chat;
  for (const k of ['message_id', 'date']) if (!isInt(r[k])) return `message_reaction.${k} is not a whole number`;
  if (r.user !== undefined ? !(isObj(r.user) && isInt(r.user.id)) : !(isObj(r.actor_chat) && isInt(r.actor_chat.id))) return 'message_reaction has neither a user nor an actor_chat with a numeric id';
  for (const k of ['old_reaction', 'new_reaction']) if (reactionListProblem(r[k])) return `message_reaction.${k} is not a list of reactions`;
  return null;
}

/** Throws MalformedUpdateError when a part of the update Chorus reads is missing or of the wrong type. */
export function checkUpdateShape(u: Update): void {
  const raw = u as unknown as Obj;
  let problem: string | null = null;
  if (raw.message !== undefined) problem = messageProblem(raw.message, 'message');
  else if (raw.edited_message !== undefined) problem = messageProblem(raw.edited_message, 'edited_message');
  else if (raw.my_chat_member !== undefined) {
    const m = raw.my_chat_member;
    if (!isObj(m)) problem = 'my_chat_member is not an object';
    else problem = chatProblem(m.chat, 'my_chat_member') ?? (['old_chat_member', 'new_chat_member'].find((k) => !(isObj(m[k]) && typeof (m[k] as Obj).status === 'string')) ? 'my_chat_member has no old or new status' : null);
  } else if (raw.callback_query !== undefined) problem = callbackProblem(raw.callback_query);
  else if (raw.message_reaction !== undefined) problem = reactionProblem(raw.message_reaction);
  if (problem) throw new MalformedUpdateError(problem);
}

/**
 * How one bot keeps its malformed updates: in the dead-letter store, with one error line naming
 * the update id. Without a store (a channel built by hand) the raw update goes into that line.
 */
export function deadLetterKeeper(o: { agentId: string; store: DeadLetters | undefined; log: Logger; secrets: readonly string[] }): KeepDeadLetter {
  return async (update, reason) => {
    const fields = { agent: o.agentId, updateId: update.update_id, reason: describeError(reason, o.secrets) };
    if (!o.store) {
      o.log.error({ ...fields, update }, 'telegram: an update that can never be handed over (malformed) is confirmed so it does not hold up the bot; it is in this line');
      return;
    }
    const where = await o.store.keep({ channel: 'telegram', part: o.agentId, id: String(update.update_id), reason, raw: update });
    o.log.error({ ...fields, keptIn: where }, 'telegram: an update that can never be handed over (malformed) is kept as a dead letter and confirmed, so it does not hold up the bot');
  };
}
