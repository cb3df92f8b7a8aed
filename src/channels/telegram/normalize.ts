/**
 * Turning Bot API updates into Chorus's channel-agnostic shapes. Every bot in a chat receives its
 * own copy of a human message; everything here is computed from what all copies share, so the
 * router's (channel, chatId, messageId) dedupe sees one message however many bots delivered it.
 */
import type { CallbackQuery, ChatMemberUpdated, Message, MessageEntity, Update, User } from 'grammy/types';
import { cleanDisplayName } from '../../core/text/displayName.js';
import type { InboundMessage, NormalizedMessage } from '../../core/types.js';

/** What the adapter knows about the agents' bots (filled from getMe). */
export interface BotDirectory {
  agentByBotId(botUserId: number): string | undefined;
  agentByUsername(username: string): string | undefined;
  /** An agent's bot or the relay bot: their messages are Chorus's own, never input. */
  isOwnBot(botUserId: number): boolean;
}

// ---------------------------------------------------------------------------------------------
// Chat ids

/**
 * A private chat's Telegram id is the user's id, and it is the same for every bot the user talks
 * to. Chorus treats a DM with each agent's bot as its own 1:1 conversation, so the chat id it
 * hands the router names the agent too: `dm:<agentId>:<userId>`.
 */
export function dmChatId(agentId: string, userId: number | string): string {
  return `dm:${agentId}:${userId}`;
}

/** The Telegram chat id to call the API with, and the agent of a DM chat id. */
export function parseChatId(chatId: string): { tgId: number; dmAgentId?: string | undefined } {
  const m = /^dm:([^:]+):(-?\d+)$/.exec(chatId);
  if (m) return { tgId: Number(m[2]), dmAgentId: m[1] };
  return { tgId: Number(chatId) };
}

/** Basic groups have ids in (-1e12, 0); supergroups and channels start with -100… */
export const isBasicGroupId = (id: number) => id < 0 && id > -1_000_000_000_000;

/** Chorus's chat id for a Telegram chat seen by `viaAgentId`'s bot. */
function chorusChatId(chat: { id: number; type: string }, viaAgentId: string): string {
  return chat.type === 'private' ? dmChatId(viaAgentId, chat.id) : String(chat.id);
}

/**
 * Basic groups number messages per account: the same human message has a different message_id
 * for every bot. The dedupe key there is built from what every copy shares (author, second,
 * text, file); supergroups and DMs have real shared ids. Two identical texts by one person within
 * one second collapse into one message, which is the price of this. A file's unique id is the same
 * for every bot, so the photos of an album (sent in one second, no captions) stay apart.
 */
export function messageKey(msg: Message): string {
  if (msg.chat.type !== 'group') return String(msg.message_id);
  const file = msg.photo?.at(-1)?.file_unique_id ?? msg.document?.file_unique_id;
  const text = (msg.text ?? msg.caption ?? '') + (file !== undefined ? `\u0000${file}` : '');
  return `g${msg.from?.id ?? msg.sender_chat?.id ?? 0}.${msg.date}.${fnv1a(text)}`;
}

function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36);
}

// ---------------------------------------------------------------------------------------------
// Messages

function authorOf(msg: Message): { id: string; name: string } | undefined {
  // Anonymous admins post "as the group": from is a helper bot, sender_chat the group.
  // Names are cleaned (no bidi overrides, invisible or control characters, at most 64
  // characters): a first name of "\u202Etsylan\u202CA" must not render as "Analyst".
  if (msg.sender_chat) return { id: String(msg.sender_chat.id), name: cleanDisplayName(msg.sender_chat.title ?? '') || 'Anonymous' };
  const u = msg.from;
  if (!u) return undefined;
  return { id: String(u.id), name: userName(u) };
}

/**
 * Why a bot's message is not input, or undefined when it is: Telegram delivers other bots'
 * messages only in Bot-to-Bot Communication Mode (set in @BotFather; the receiving bot must be
 * an admin with privacy mode off to get them all). Chorus's own bots — the agents', the relay —
 * are never input (a loop); another bot in a group speaks like a person, marked as a bot.
 */
function botSkip(msg: Message, dir: BotDirectory): string | undefined {
  const u = msg.from;
  if (msg.sender_chat || !u?.is_bot) return undefined;
  if (dir.isOwnBot(u.id)) return dir.agentByBotId(u.id) ? "an agent's bot (Chorus's own post)" : "the relay bot (Chorus's own post)";
  if (msg.chat.type === 'private') return 'a bot in a private chat';
  return undefined;
}

/** A person's display name, cleaned (see authorOf). */
export function userName(u: User): string {
  return cleanDisplayName([u.first_name, u.last_name].filter(Boolean).join(' ')) || cleanDisplayName(u.username ?? '') || `user ${u.id}`;
}

/** Agents whose bots the message marks with mention / text_mention entities, in order. */
function mentionedAgents(text: string, entities: readonly MessageEntity[] | undefined, dir: BotDirectory): string[] {
  const out: string[] = [];
  for (const e of [...(entities ?? [])].sort((a, b) => a.offset - b.offset)) {
    let agent: string | undefined;
    // Entity offsets are UTF-16 code units, like JS string indices.
    if (e.type === 'mention') agent = dir.agentByUsername(text.slice(e.offset + 1, e.offset + e.length));
    else if (e.type === 'text_mention') agent = dir.agentByBotId(e.user.id);
    if (agent && !out.includes(agent)) out.push(agent);
  }
  return out;
}

/** `/cmd@bot_username …` → the agent owning that bot, if it is one of ours. */
function commandTarget(text: string, dir: BotDirectory): string | undefined {
  const m = /^\/[A-Za-z0-9_]+@([A-Za-z0-9_]+)/.exec(text);
  return m ? dir.agentByUsername(m[1]!) : undefined;
}

/**
 * The InboundMessage for one human message as received by `viaAgentId`'s bot, or why Chorus does
 * not read it (bots, service messages, stickers without a caption).
 */
export function normalizeMessage(
  msg: Message,
  viaAgentId: string,
  dir: BotDirectory,
  postedBy: (chatId: string, messageId: string) => string | undefined,
  /** Basic groups: the id Chorus knows a message by that this bot numbers `ownId`, when known. */
  nameOf: (ownId: number) => string | undefined = () => undefined,
): NormalizedMessage {
  const skipBot = botSkip(msg, dir);
  if (skipBot) return { skip: skipBot };
  const author = authorOf(msg);
  if (!author) return { skip: 'no author' };
  const byBot = msg.from?.is_bot === true && !msg.sender_chat;
  // A photo or document without a caption is a message: its files stand in for the text.
  const media = (msg.photo?.length ?? 0) > 0 || msg.document !== undefined;
  const text = msg.text ?? msg.caption ?? '';
  if (!text.trim() && !media) return { skip: 'no text' };
  const chatId = chorusChatId(msg.chat, viaAgentId);
  const isPrivate = msg.chat.type === 'private';
  const threadId = msg.is_topic_message && msg.message_thread_id !== undefined ? String(msg.message_thread_id) : undefined;

  let replyToAgentId: string | undefined;
  let replyToPlatformId: string | undefined;
  const r = msg.reply_to_message;
  // In a forum every topic message "replies" to the topic's first message; that is no reply.
  const topicRoot = r !== undefined && msg.is_topic_message === true && r.message_id === msg.message_thread_id;
  if (r && !topicRoot) {
    if (r.from?.is_bot) replyToAgentId = dir.agentByBotId(r.from.id);
    // Reply ids are per account in basic groups, so only the bot id above is reliable there.
    if (!replyToAgentId && msg.chat.type !== 'group') replyToAgentId = postedBy(chatId, String(r.message_id));
    // There a person's message is known by its key, a post by the id its bot got (when known).
    replyToPlatformId = msg.chat.type !== 'group' ? String(r.message_id) : (nameOf(r.message_id) ?? (r.from?.is_bot ? undefined : messageKey(r as Message)));
  }
  const mentions = mentionedAgents(text, msg.entities ?? msg.caption_entities, dir);
  const chatTitle = 'title' in msg.chat && msg.chat.title ? msg.chat.title : isPrivate ? author.name : undefined;
  const message: InboundMessage = {
    channel: 'telegram',
    chatId,
    messageId: messageKey(msg),
    author,
    text,
    ts: msg.date * 1000,
    threadId,
    // Every copy names the same agent for an addressed command, so whichever copy the router
    // keeps, the system voice answers through the bot the human picked.
    viaAgentId: (isPrivate ? undefined : commandTarget(text, dir)) ?? viaAgentId,
    isPrivate: isPrivate || undefined,
    replyToAgentId,
    replyToPlatformId,
    mentionedAgentIds: mentions.length ? mentions : undefined,
    chatTitle,
    ...(byBot ? { authorKind: 'bot' as const } : {}),
  };
  return { message };
}

// ---------------------------------------------------------------------------------------------
// Membership

const PRESENT = new Set(['creator', 'administrator', 'member']);

function isPresent(m: ChatMemberUpdated['new_chat_member']): boolean {
  return PRESENT.has(m.status) || (m.status === 'restricted' && m.is_member);
}

/** Did this bot join or leave the chat (ignoring promotions, restrictions, …)? */
export function membershipDirection(u: ChatMemberUpdated): 'joined' | 'left' | undefined {
  const before = isPresent(u.old_chat_member);
  const after = isPresent(u.new_chat_member);
  if (before === after) return undefined;
  return after ? 'joined' : 'left';
}

// ---------------------------------------------------------------------------------------------
// Approval buttons

/**
 * `callback_data` of the buttons under a request for approval: `tool:a:<call id>:<digest>`
 * approves, `tool:d:<call id>:<digest>` denies, the digest being the shown call's. Buttons posted
 * before requests had digests carry none. Telegram allows 64 bytes; call ids are short (`t12`, `t12-2`).
 */
const APPROVAL_DATA = /^tool:([ad]):([A-Za-z0-9_-]{1,57})(?::([0-9a-f]{1,32}))?$/;
const CALLBACK_BYTES = 64;

/** The data of one approval button, or undefined when the call id and digest do not fit. */
export function approvalData(approve: boolean, callId: string, digest?: string): string | undefined {
  const data = `tool:${approve ? 'a' : 'd'}:${callId}${digest ? `:${digest}` : ''}`;
  return APPROVAL_DATA.test(data) && data.length <= CALLBACK_BYTES ? data : undefined;
}

/** A press of an approval button. */
export interface ApprovalPress {
  approve: boolean;
  callId: string;
  /** The digest of the call the buttons were shown with. */
  digest: string | undefined;
  /** The same command a person could type, as `viaAgentId`'s bot received it. */
  message: InboundMessage;
}

/**
 * A press of an approval button (a callback_query, delivered only to the bot that posted the
 * buttons) as the command the router already understands: `/approve <id> <digest>` or
 * `/deny <id> <digest>` by the person who pressed. The query id is the message id, so a
 * redelivered press is a duplicate.
 */
export function normalizePress(q: CallbackQuery, viaAgentId: string, now: number): ApprovalPress | { skip: string } {
  const m = APPROVAL_DATA.exec(q.data ?? '');
  if (!m) return { skip: 'not an approval button' };
  if (!q.message) return { skip: 'no message (an inline-mode button)' };
  if (q.from.is_bot) return { skip: 'bot author' };
  const approve = m[1] === 'a';
  const callId = m[2]!;
  const digest = m[3];
  const chat = q.message.chat;
  // An inaccessible message (date 0) says only where it was.
  const msg = q.message.date === 0 ? undefined : (q.message as Message);
  const threadId = msg?.is_topic_message && msg.message_thread_id !== undefined ? String(msg.message_thread_id) : undefined;
  const message: InboundMessage = {
    channel: 'telegram',
    chatId: chorusChatId(chat, viaAgentId),
    messageId: `cb:${q.id}`,
    author: { id: String(q.from.id), name: userName(q.from) },
    text: `/${approve ? 'approve' : 'deny'} ${callId}${digest ? ` ${digest}` : ''}`,
    ts: now,
    threadId,
    viaAgentId,
    isPrivate: chat.type === 'private' || undefined,
    chatTitle: 'title' in chat && chat.title ? chat.title : undefined,
  };
  return { approve, callId, digest, message };
}

/** The chat an update belongs to: updates of one chat are handed over one at a time; other chats run alongside. */
export function updateChatKey(u: Update): string {
  const chat = u.message?.chat ?? u.edited_message?.chat ?? u.my_chat_member?.chat ?? u.callback_query?.message?.chat ?? u.message_reaction?.chat;
  return chat ? String(chat.id) : `update:${u.update_id}`;
}
