/**
 * Commands from bots that are not Chorus's agents (Telegram's bot-to-bot mode, Discord with
 * `allow_bots`) are refused, whatever the bot's rights in the chat: an admin bot could otherwise
 * approve a tool call, mute an agent or dissolve the group, and a bot may be a model that can be
 * talked into it. Read-only commands too: each would have the system voice answer the bot, and a
 * bot that answers that answer would loop with Chorus outside every budget. The command line is
 * still recorded (hidden from the agents, like any command): nothing the bot wrote is lost.
 *
 * The room is told once per bot, not per attempt (a bot can repeat itself forever); a restart may
 * tell it once more.
 */
import type { GroupDoc } from '../records.js';
import type { InboundMessage } from '../types.js';
import type { CommandContext } from './CommandContext.js';

/** Bots told, remembered at most (the oldest are forgotten first: at worst told again). */
const MAX_TOLD = 10_000;

/** Which bots were told something already: `key` names the bot and where it was told. */
export class OncePerBot {
  /** Insertion order is age. */
  private readonly told = new Set<string>();

  /** True the first time for `key` (remembered from then on). */
  first(key: string): boolean {
    if (this.told.has(key)) return false;
    this.told.add(key);
    if (this.told.size > MAX_TOLD) this.told.delete(this.told.values().next().value!);
    return true;
  }

  forget(key: string): void {
    this.told.delete(key);
  }
}

/** The key of bot `msg.author` in `g` (or in its chat, without a group). */
export function botKey(msg: InboundMessage, g: GroupDoc | undefined): string {
  return `${g?.id ?? `${msg.channel}:${msg.chatId}`}|${msg.channel}:${msg.author.id}`;
}

export class BotCommands {
  private readonly told = new OncePerBot();

  constructor(private readonly r: Pick<CommandContext, 'reply' | 'logger'>) {}

  /** Refuse `msg`, a bot's command, in `g` (undefined: a chat without a group); say so once per bot. */
  async refuse(msg: InboundMessage, g: GroupDoc | undefined): Promise<void> {
    const where = { group: g?.id, channel: msg.channel, chatId: msg.chatId, bot: msg.author.id };
    this.r.logger.debug(where, 'a command from a bot was refused');
    const key = botKey(msg, g);
    if (!this.told.first(key)) return;
    const text = `⚠ ${msg.author.name} is a bot: Chorus takes commands from people only, `
      + 'so this one and any later ones from it are ignored.';
    try {
      await this.r.reply(msg, g && !g.state.archived ? g : undefined, text);
    } catch (err) {
      // Not told after all (the store is down): the bot's next command tries again.
      this.told.forget(key);
      throw err;
    }
  }
}
