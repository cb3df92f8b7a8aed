/**
 * The emoji Telegram takes as reactions. Bots may set only Telegram's fixed set (the Bot API's
 * `ReactionTypeEmoji`), written the way Telegram writes them: without the emoji presentation
 * selector (`❤`, not `❤️`) and without skin tones. Outward, an emoji that is one of them in another
 * form is mapped to it (`❤️` → `❤`, `👍🏽` → `👍`, `🤷🏽‍♀️` → `🤷‍♀`); anything else cannot be shown.
 * Inward, Telegram's form is written fully qualified (`❤` → `❤️`), the way the web page and most
 * keyboards write it, so one heart from Telegram and one from the web page are the same reaction.
 */

/** Telegram's reaction emoji (Bot API `ReactionTypeEmoji.emoji`, as listed by @grammyjs/types 5). */
export const TELEGRAM_REACTIONS: ReadonlySet<string> = new Set([
  '👍', '👎', '❤', '🔥', '🥰', '👏', '😁', '🤔', '🤯', '😱', '🤬', '😢', '🎉', '🤩', '🤮', '💩', '🙏', '👌', '🕊', '🤡',
  '🥱', '🥴', '😍', '🐳', '❤‍🔥', '🌚', '🌭', '💯', '🤣', '⚡', '🍌', '🏆', '💔', '🤨', '😐', '🍓', '🍾', '💋', '🖕', '😈',
  '😴', '😭', '🤓', '👻', '👨‍💻', '👀', '🎃', '🙈', '😇', '😨', '🤝', '✍', '🤗', '🫡', '🎅', '🎄', '☃', '💅', '🤪', '🗿',
  '🆒', '💘', '🙉', '🦄', '😘', '💊', '🙊', '😎', '👾', '🤷‍♂', '🤷', '🤷‍♀', '😡',
]);

/** Presentation selectors (U+FE0E text, U+FE0F emoji) and the five skin tones. */
const VARIANTS = /[\uFE0E\uFE0F\u{1F3FB}-\u{1F3FF}]/gu;

/** The form Telegram takes for `emoji`, or undefined when it is none of Telegram's reactions. */
export function telegramReaction(emoji: string): string | undefined {
  const bare = emoji.trim().replace(VARIANTS, '');
  return TELEGRAM_REACTIONS.has(bare) ? bare : undefined;
}

/** A pictograph shown as text unless a presentation selector follows it (❤, ☃, ✍, 🕊, ♀, ♂). */
const TEXT_DEFAULT = /(?!\p{Emoji_Presentation})(\p{Extended_Pictographic})(?![\uFE0E\uFE0F\u{1F3FB}-\u{1F3FF}])/gu;

/** An emoji as Telegram reported it, written fully qualified (`❤` → `❤️`, `🤷‍♂` → `🤷‍♂️`). */
export function qualifiedEmoji(emoji: string): string {
  return emoji.replace(TEXT_DEFAULT, '$1\uFE0F');
}
