/**
 * Changing and removing messages on the fake Bot API, with Telegram's answers: `editMessageText`
 * and `editMessageCaption` (only the bot that sent a message may edit it; a text message has no
 * caption and a photo no text; the same content again is 400 "message is not modified"), and
 * `deleteMessage` (a bot deletes its own messages, or anyone's when it is an admin). A bot that
 * was removed from the chat is answered 403. People editing their messages (`edited_message` to
 * the bots that saw them) are driven from here too. Everything is recorded for tests.
 */
import { EntityParseError, detectEntities, parseHtml, parseMarkdownV2 } from './entities.js';
import type { BotRec, ChatRec, FakeState, MsgRec } from './state.js';

type Json = { [k: string]: unknown };
export type ApiResult = { ok: true; result: unknown } | { ok: false; error_code: number; description: string; parameters?: Record<string, unknown> };

const bad = (description: string): ApiResult => ({ ok: false, error_code: 400, description: `Bad Request: ${description}` });
const NOT_MODIFIED = 'message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message';

/** An edit a bot made (text or caption), as the chat shows it now. */
export interface BotEdit {
  bot: string;
  chatId: number;
  messageId: number;
  kind: 'text' | 'caption';
  text: string;
}

/** A message a bot deleted. */
export interface BotDeletion {
  bot: string;
  chatId: number;
  messageId: number;
  /** What it said (text or caption). */
  text: string | undefined;
}

export class FakeEdits {
  readonly edits: BotEdit[] = [];
  readonly deletions: BotDeletion[] = [];

  constructor(
    private readonly state: FakeState,
    /** Called after a bot's text changed, to keep the fake's list of posts in step. */
    private readonly onEdited: (m: MsgRec, text: string) => void,
  ) {}

  /** The chat and the message `bot` knows by `message_id`, or Telegram's refusal. */
  private find(bot: BotRec, p: Json, missing: string): { chat: ChatRec; msg: MsgRec } | ApiResult {
    const chat = this.state.findChat(p.chat_id);
    if (!chat) return bad('chat not found');
    if (chat.type !== 'private' && !chat.bots.has(bot.token)) {
      return { ok: false, error_code: 403, description: `Forbidden: bot was kicked from the ${chat.type === 'supergroup' ? 'supergroup' : 'group'} chat` };
    }
    const id = Number(p.message_id);
    const msg = chat.messages.find((m) => this.state.idFor(m, bot.token) === id);
    if (!msg) return bad(missing);
    return { chat, msg };
  }

  editText(bot: BotRec, p: Json): ApiResult {
    const found = this.find(bot, p, 'message to edit not found');
    if ('ok' in found) return found;
    const { msg } = found;
    if (msg.fromToken !== bot.token) return bad("message can't be edited");
    if (msg.media) return bad('there is no text in the message to edit');
    const text = this.parse(p.text, p.parse_mode);
    if (typeof text !== 'string') return text;
    if (!text.trim()) return bad('message text is empty');
    if (text.length > 4096) return bad('message is too long');
    if (text === msg.text) return bad(NOT_MODIFIED);
    return this.apply(bot, msg, 'text', text);
  }

  editCaption(bot: BotRec, p: Json): ApiResult {
    const found = this.find(bot, p, 'message to edit not found');
    if ('ok' in found) return found;
    const { msg } = found;
    if (msg.fromToken !== bot.token) return bad("message can't be edited");
    if (!msg.media) return bad('there is no caption in the message to edit');
    const text = this.parse(p.caption ?? '', p.parse_mode);
    if (typeof text !== 'string') return text;
    if (text.length > 1024) return bad('message caption is too long');
    if (text === (msg.text ?? '')) return bad(NOT_MODIFIED);
    return this.apply(bot, msg, 'caption', text);
  }

  deleteMessage(bot: BotRec, p: Json): ApiResult {
    const found = this.find(bot, p, 'message to delete not found');
    if ('ok' in found) return found;
    const { chat, msg } = found;
    if (msg.fromToken !== bot.token && !chat.admins.has(bot.id)) return bad("message can't be deleted");
    const messageId = this.state.idFor(msg, bot.token);
    chat.messages.splice(chat.messages.indexOf(msg), 1);
    this.deletions.push({ bot: bot.username, chatId: chat.id, messageId, text: msg.text });
    return { ok: true, result: true };
  }

  /** A person edits their message: every bot that saw it gets an `edited_message`; returns those bots' usernames. */
  humanEdits(msg: MsgRec, text: string, editDate = Math.floor(Date.now() / 1000)): string[] {
    msg.text = text;
    // The edited text's own mentions and commands, as Telegram sends them (a bot in privacy mode
    // that was addressed in it gets the edit).
    msg.entities = detectEntities(text);
    return this.state.pushEdit(msg, editDate);
  }

  private parse(raw: unknown, mode: unknown): string | ApiResult {
    const s = typeof raw === 'string' ? raw : '';
    try {
      return mode === 'HTML' ? parseHtml(s) : mode === 'MarkdownV2' ? parseMarkdownV2(s) : s;
    } catch (e) {
      if (e instanceof EntityParseError) return bad(`can't parse entities: ${e.message}`);
      throw e;
    }
  }

  private apply(bot: BotRec, msg: MsgRec, kind: 'text' | 'caption', text: string): ApiResult {
    msg.text = text;
    const messageId = this.state.idFor(msg, bot.token);
    this.edits.push({ bot: bot.username, chatId: msg.chatId, messageId, kind, text });
    this.onEdited(msg, text);
    return { ok: true, result: { ...this.state.apiMessage(msg, bot.token), edit_date: Math.floor(Date.now() / 1000) } };
  }
}
