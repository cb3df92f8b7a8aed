/**
 * Reactions on the fake Bot API, as Telegram has them.
 *
 * People: `react` queues a `message_reaction` update (the person's whole list before and after)
 * to each bot of the chat that is an administrator of it — only those, as on Telegram; in a
 * private chat to its bot. Each bot gets the message id in its own numbering (basic groups); a bot
 * that has no id for the message (it joined later) gets nothing. Bots' own reactions make no
 * update. `user` 'anonymous' is an anonymous admin: the update has `actor_chat` (the chat).
 *
 * Bots: `setMessageReaction` takes at most one reaction (no Premium), only from Telegram's fixed
 * set (anything else, custom emoji included: 400 REACTION_INVALID), on a message of that chat
 * in the bot's numbering (else 400 "message to react not found"). An empty list takes the bot's
 * reaction away. A chat's admins may allow only some reactions (`allow`, the chat's
 * `available_reactions`): any other is 400 REACTION_INVALID too. Each accepted call is recorded in
 * `set`, with the token of the bot that made it; `shownBy` gives what each bot shows now.
 */
import type { BotRec, FakeState, MsgRec } from './state.js';
import type { ApiResult } from './buttons.js';

type Json = { [k: string]: unknown };

/** A person's reaction: an emoji, a custom emoji, or a paid star reaction. */
export type FakeReaction = string | { custom_emoji_id: string } | 'paid';

/** One accepted setMessageReaction call. */
export interface BotReactionSet {
  bot: string;
  /** The token the call was made with: which bot set it. */
  token: string;
  chatId: number;
  /** In the bot's numbering. */
  messageId: number;
  /** The fake's key of the message (`Posted.key`, `humanSays(…).key`). */
  key: number;
  /** What the bot shows on the message afterwards (empty: taken away). */
  emoji: string[];
}

/** Telegram's reaction emoji for bots (Bot API `ReactionTypeEmoji`). */
export const ALLOWED_REACTIONS: ReadonlySet<string> = new Set([
  '👍', '👎', '❤', '🔥', '🥰', '👏', '😁', '🤔', '🤯', '😱', '🤬', '😢', '🎉', '🤩', '🤮', '💩', '🙏', '👌', '🕊', '🤡',
  '🥱', '🥴', '😍', '🐳', '❤‍🔥', '🌚', '🌭', '💯', '🤣', '⚡', '🍌', '🏆', '💔', '🤨', '😐', '🍓', '🍾', '💋', '🖕', '😈',
  '😴', '😭', '🤓', '👻', '👨‍💻', '👀', '🎃', '🙈', '😇', '😨', '🤝', '✍', '🤗', '🫡', '🎅', '🎄', '☃', '💅', '🤪', '🗿',
  '🆒', '💘', '🙉', '🦄', '😘', '💊', '🙊', '😎', '👾', '🤷‍♂', '🤷', '🤷‍♀', '😡',
]);

const bad = (description: string): ApiResult => ({ ok: false, error_code: 400, description: `Bad Request: ${description}` });

function apiReaction(r: FakeReaction): Json {
  if (r === 'paid') return { type: 'paid' };
  if (typeof r === 'string') return { type: 'emoji', emoji: r };
  return { type: 'custom_emoji', custom_emoji_id: r.custom_emoji_id };
}

export class FakeReactions {
  readonly set: BotReactionSet[] = [];
  /** message key → bot token → what it shows. */
  private readonly shown = new Map<number, Map<string, string[]>>();
  /** chat id → the only reactions its admins allow (absent: all of Telegram's). */
  private readonly allowed = new Map<number, ReadonlySet<string>>();

  constructor(private readonly state: FakeState) {}

  /** A person changes their reactions on `msg`; returns the usernames of the bots told. */
  react(msg: MsgRec, user: Json | 'anonymous', before: FakeReaction[], after: FakeReaction[]): string[] {
    const chat = this.state.chat(msg.chatId);
    const who = user === 'anonymous' ? { actor_chat: this.state.apiChat(chat) } : { user: { is_bot: false, ...user } };
    const told: string[] = [];
    for (const token of chat.bots) {
      const bot = this.state.bots.get(token)!;
      if (chat.type !== 'private' && !chat.admins.has(bot.id)) continue;
      const id = this.state.idFor(msg, token);
      if (id < 0) continue;
      this.state.push(bot, {
        message_reaction: {
          chat: this.state.apiChat(chat), message_id: id, ...who, date: Math.floor(Date.now() / 1000),
          old_reaction: before.map(apiReaction), new_reaction: after.map(apiReaction),
        },
      });
      told.push(bot.username);
    }
    return told;
  }

  /** The chat's admins allow only `emoji` as reactions (null: all of them again). */
  allow(chatId: number, emoji: readonly string[] | null): void {
    if (emoji === null) this.allowed.delete(chatId);
    else this.allowed.set(chatId, new Set(emoji));
  }

  setMessageReaction(bot: BotRec, p: Json): ApiResult {
    const chat = this.state.findChat(p.chat_id);
    if (!chat) return bad('chat not found');
    if (chat.type !== 'private' && !chat.bots.has(bot.token)) return { ok: false, error_code: 403, description: 'Forbidden: bot is not a member of the group chat' };
    const msg = chat.messages.find((m) => this.state.idFor(m, bot.token) === p.message_id);
    if (!msg || msg.service) return bad('message to react not found');
    const list = p.reaction === undefined ? [] : p.reaction;
    if (!Array.isArray(list)) return bad("can't parse reaction types JSON object");
    if (list.length > 1) return bad('REACTIONS_TOO_MANY');
    const emoji: string[] = [];
    for (const r of list as Json[]) {
      if (r?.type !== 'emoji' || typeof r.emoji !== 'string' || !ALLOWED_REACTIONS.has(r.emoji)) return bad('REACTION_INVALID');
      if (this.allowed.has(chat.id) && !this.allowed.get(chat.id)!.has(r.emoji)) return bad('REACTION_INVALID');
      emoji.push(r.emoji);
    }
    let byBot = this.shown.get(msg.key);
    if (!byBot) this.shown.set(msg.key, (byBot = new Map()));
    byBot.set(bot.token, emoji);
    this.set.push({ bot: bot.username, token: bot.token, chatId: chat.id, messageId: this.state.idFor(msg, bot.token), key: msg.key, emoji });
    return { ok: true, result: true };
  }

  /** What each bot (by username) shows on a message now; bots showing nothing are left out. */
  shownBy(key: number): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [token, emoji] of this.shown.get(key) ?? []) if (emoji.length) out[this.state.bots.get(token)!.username] = emoji;
    return out;
  }
}
