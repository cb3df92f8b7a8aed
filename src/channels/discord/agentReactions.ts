/**
 * Agents' reactions on Discord. Webhooks cannot react, so with `agent_reactions: bot` the gateway
 * bot shows them — under its own name, not the agent's (`PUT`/`DELETE
 * /channels/{id}/messages/{id}/reactions/{emoji}/@me`); with `off` they are recorded and shown on
 * the web page only, and nothing is asked of Discord.
 *
 * The bot has one reaction per emoji per message, so several agents reacting with the same emoji on
 * one message share it: the agents holding each (message, emoji) are counted, the bot's reaction is
 * added with the first and taken back with the last. The count lives in memory: after a restart an
 * agent taking one back removes the bot's reaction unless another agent took it since.
 *
 * Discord's refusals (unknown emoji 10014, missing permission 50013, unknown message 10008, ...)
 * are logged, with what to do, and answered false; nothing here throws.
 */
import { Routes, type REST } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { AgentDef, ChatRef } from '../../core/types.js';
import { KeyedQueue } from '../../core/lib/KeyedQueue.js';
import { DiscordCode, apiErrorInfo, sanitizeError } from './errors.js';

export type AgentReactionMode = 'off' | 'bot';

/** (message, emoji) pairs whose agents are counted; the oldest are forgotten past it. */
const COUNTED = 10_000;

const UnknownMessage = 10008;
const UnknownEmoji = 10014;

export class AgentReactions {
  /** `${message id}\n${emoji}` → the agents whose reaction the bot's one shows. */
  private readonly holders = new Map<string, Set<string>>();
  /** Changes of one (message, emoji) run one after another: a PUT never races its DELETE. */
  private readonly serial = new KeyedQueue();

  constructor(
    private readonly mode: AgentReactionMode,
    private readonly log: Logger,
  ) {}

  /**
   * Show (`on`) or take back `agent`'s reaction with the bot; true when Discord shows the state
   * asked for. `rest` is the bot's REST client (undefined: the channel is not running).
   */
  async react(rest: REST | undefined, chat: ChatRef, agent: AgentDef, messageId: string, emoji: string, on: boolean): Promise<boolean> {
    if (this.mode !== 'bot' || !rest) return false;
    const key = `${messageId}\n${emoji}`;
    try {
      return await this.serial.run(key, async () => {
        const holders = this.holders.get(key) ?? new Set<string>();
        if (on) {
          // Another agent's reaction with this emoji is already the bot's.
          if (holders.size === 0 && !(await this.call(rest, 'put', chat, agent, messageId, emoji))) return false;
          holders.add(agent.id);
          this.keep(key, holders);
          return true;
        }
        holders.delete(agent.id);
        if (holders.size > 0) return true;
        this.holders.delete(key);
        return this.call(rest, 'delete', chat, agent, messageId, emoji);
      });
    } catch (err) {
      this.log.error({ messageId, emoji, agent: agent.id, reason: sanitizeError(err, 'reaction').message }, "discord: an agent's reaction failed");
      return false;
    }
  }

  /** A moderator cleared a message's reactions (or one emoji's): the bot's went with them. */
  cleared(messageId: string, emoji: string | undefined): void {
    if (emoji !== undefined) {
      this.holders.delete(`${messageId}\n${emoji}`);
      return;
    }
    for (const key of [...this.holders.keys()]) if (key.startsWith(`${messageId}\n`)) this.holders.delete(key);
  }

  private keep(key: string, holders: Set<string>): void {
    this.holders.delete(key);
    this.holders.set(key, holders);
    if (this.holders.size > COUNTED) this.holders.delete(this.holders.keys().next().value!);
  }

  private async call(rest: REST, method: 'put' | 'delete', chat: ChatRef, agent: AgentDef, messageId: string, emoji: string): Promise<boolean> {
    const channelId = chat.threadId ?? chat.chatId;
    const route = Routes.channelMessageOwnReaction(channelId, messageId, encodeURIComponent(emoji));
    try {
      await (method === 'put' ? rest.put(route) : rest.delete(route));
      return true;
    } catch (err) {
      const { code } = apiErrorInfo(err);
      this.log.warn(
        { channelId, messageId, emoji, agent: agent.id, code, reason: sanitizeError(err, `Discord: ${method === 'put' ? 'adding' : 'removing'} the bot's reaction`).message },
        `discord: the bot could not ${method === 'put' ? 'add' : 'take back'} ${agent.id}'s reaction ${emoji}: ${refusal(code, channelId)}`,
      );
      return false;
    }
  }
}

/** What a refusal means, and what to do about it. */
function refusal(code: number | string | undefined, channelId: string): string {
  if (code === UnknownEmoji) return 'Discord does not know that emoji';
  if (code === UnknownMessage) return 'the message is gone (deleted, or not in that channel)';
  if (code === DiscordCode.MissingPermissions || code === DiscordCode.MissingAccess) {
    return `the bot lacks Add Reactions or Read Message History in channel ${channelId}; grant them to its role, or set channels.discord.agent_reactions: off`;
  }
  return 'Discord refused it';
}
