/**
 * Inline keyboards on the fake Bot API: `reply_markup.inline_keyboard` checked as Telegram checks
 * it (callback_data 1–64 bytes, else 400 BUTTON_DATA_INVALID), people pressing a button (a
 * `callback_query` update to the bot that sent the message — only that bot, as on Telegram),
 * `answerCallbackQuery` (once, within 15 minutes) and `editMessageReplyMarkup` (400 when nothing
 * changes). Everything is recorded for tests to assert on.
 */
import type { BotRec, FakeState, MsgRec } from './state.js';

type Json = { [k: string]: unknown };

export type ApiResult = { ok: true; result: unknown } | { ok: false; error_code: number; description: string; parameters?: Record<string, unknown> };

const bad = (description: string): ApiResult => ({ ok: false, error_code: 400, description: `Bad Request: ${description}` });

/** One button as Chorus uses them (text and callback_data); other kinds (url, …) are kept as sent. */
export interface FakeButton {
  text: string;
  callback_data?: string;
  url?: string;
}

export type InlineKeyboard = FakeButton[][];

/** Telegram answers a query only this long after the press (and only once). */
export const CALLBACK_ANSWER_WINDOW_MS = 15 * 60 * 1000;
const QUERY_TOO_OLD = 'query is too old and response timeout expired or query ID is invalid';
const NOT_MODIFIED = 'message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message';

/** A press as the fake keeps it. */
export interface CallbackRec {
  id: string;
  token: string;
  update: Json;
  at: number;
  answered: boolean;
}

/** An answerCallbackQuery call that Telegram accepted. */
export interface CallbackAnswer {
  bot: string;
  queryId: string;
  text: string | undefined;
  showAlert: boolean;
}

/** An editMessageReplyMarkup call that Telegram accepted. */
export interface MarkupEdit {
  bot: string;
  chatId: number;
  messageId: number;
  /** The keyboard afterwards; empty when it was removed. */
  keyboard: InlineKeyboard;
}

/**
 * The keyboard of a `reply_markup`, or the 400 Telegram answers. Undefined markup or another kind
 * of markup (a reply keyboard) is no inline keyboard: `keyboard` is then empty.
 */
export function readKeyboard(markup: unknown): { ok: true; keyboard: InlineKeyboard } | { ok: false; error: ApiResult } {
  if (markup === undefined || markup === null) return { ok: true, keyboard: [] };
  if (typeof markup !== 'object' || Array.isArray(markup)) return { ok: false, error: bad("can't parse reply keyboard markup JSON object") };
  const rows = (markup as Json).inline_keyboard;
  if (rows === undefined) return { ok: true, keyboard: [] };
  if (!Array.isArray(rows) || rows.some((r) => !Array.isArray(r))) return { ok: false, error: bad('field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays') };
  const keyboard: InlineKeyboard = [];
  for (const row of rows as unknown[][]) {
    const out: FakeButton[] = [];
    for (const b of row) {
      if (typeof b !== 'object' || b === null) return { ok: false, error: bad("can't parse inline keyboard button: InlineKeyboardButton must be an Object") };
      const { text, callback_data: data, url } = b as Json;
      if (typeof text !== 'string' || !text.trim()) return { ok: false, error: bad('BUTTON_TEXT_INVALID') };
      if (data === undefined && url === undefined) return { ok: false, error: bad("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard") };
      if (data !== undefined) {
        const bytes = typeof data === 'string' ? Buffer.byteLength(data, 'utf8') : 0;
        if (bytes < 1 || bytes > 64) return { ok: false, error: bad('BUTTON_DATA_INVALID') };
      }
      out.push({ text, ...(typeof data === 'string' ? { callback_data: data } : {}), ...(typeof url === 'string' ? { url } : {}) });
    }
    if (out.length) keyboard.push(out);
  }
  return { ok: true, keyboard };
}

export class FakeButtons {
  readonly queries = new Map<string, CallbackRec>();
  readonly answers: CallbackAnswer[] = [];
  readonly edits: MarkupEdit[] = [];
  /** The fake's clock for the answer window; a test moves it to age queries. */
  now: () => number = Date.now;
  private nextQuery = 1;

  constructor(private readonly state: FakeState) {}

  /** `user` presses the button (by its text or callback_data) on bot message `msg`: queued to that bot only. */
  press(msg: MsgRec, user: Json, button: string): CallbackRec {
    const token = msg.fromToken;
    const bot = token ? this.state.bots.get(token) : undefined;
    if (!bot) throw new Error('fake telegram: only a bot\'s message has buttons');
    const found = (msg.keyboard ?? []).flat().find((b) => b.text === button || b.callback_data === button);
    if (!found) throw new Error(`fake telegram: message ${msg.key} has no button "${button}" (now: ${JSON.stringify(msg.keyboard ?? [])})`);
    if (found.callback_data === undefined) throw new Error('fake telegram: a url button sends no callback');
    const chat = this.state.chat(msg.chatId);
    // Query ids are long decimal strings on Telegram.
    const id = `${bot.id}${String(this.nextQuery++).padStart(6, '0')}`;
    const callback = {
      id,
      from: { is_bot: false, ...user },
      message: this.state.apiMessage(msg, bot.token),
      chat_instance: `-${String(Math.abs(chat.id)).padStart(12, '0')}7`,
      data: found.callback_data,
    };
    const rec: CallbackRec = { id, token: bot.token, update: { callback_query: callback }, at: this.now(), answered: false };
    this.queries.set(id, rec);
    this.state.push(bot, rec.update);
    return rec;
  }

  /** The same press delivered once more (a new update id), as after a crash before it was confirmed. */
  redeliver(queryId: string): void {
    const rec = this.queries.get(queryId);
    if (!rec) throw new Error(`fake telegram: no callback query ${queryId}`);
    this.state.push(this.state.bots.get(rec.token)!, rec.update);
  }

  answer(bot: BotRec, p: Json): ApiResult {
    const id = typeof p.callback_query_id === 'string' ? p.callback_query_id : '';
    const rec = this.queries.get(id);
    if (!rec || rec.token !== bot.token || rec.answered || this.now() - rec.at > CALLBACK_ANSWER_WINDOW_MS) return bad(QUERY_TOO_OLD);
    if (p.text !== undefined && (typeof p.text !== 'string' || p.text.length > 200)) return bad('MESSAGE_TOO_LONG');
    rec.answered = true;
    this.answers.push({ bot: bot.username, queryId: id, text: typeof p.text === 'string' ? p.text : undefined, showAlert: p.show_alert === true });
    return { ok: true, result: true };
  }

  editMarkup(bot: BotRec, p: Json): ApiResult {
    const chat = this.state.findChat(p.chat_id);
    if (!chat) return bad('chat not found');
    const msg = chat.messages.find((m) => m.fromToken !== undefined && this.state.idFor(m, bot.token) === p.message_id);
    if (!msg) return bad('message to edit not found');
    if (msg.fromToken !== bot.token) return bad("message can't be edited");
    const read = readKeyboard(p.reply_markup);
    if (!read.ok) return read.error;
    if (JSON.stringify(read.keyboard) === JSON.stringify(msg.keyboard ?? [])) return bad(NOT_MODIFIED);
    msg.keyboard = read.keyboard;
    this.edits.push({ bot: bot.username, chatId: chat.id, messageId: this.state.idFor(msg, bot.token), keyboard: read.keyboard });
    return { ok: true, result: this.state.apiMessage(msg, bot.token) };
  }
}
