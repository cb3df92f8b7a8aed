/**
 * Reactions on Telegram, both ways.
 *
 * In: a person's `message_reaction` update carries their whole list before and after the change;
 * each emoji added or taken back is handed to the core (`ChannelHost.reacted`), which finds the
 * entry the message is and records it idempotently. Custom and paid reactions are not emoji
 * Chorus keeps (logged at debug). Telegram sends the update to every agent bot that is an admin
 * of the chat: the first copy is handed over and the others, recognised by what they share (chat,
 * message, person, second, lists before and after, and how many such changes this bot has seen —
 * so the same change made twice in one second still counts twice), are not. A copy arriving while
 * the first is being handed over waits for it and fails with it, so a store failure leaves every
 * copy unconfirmed (polling) or answered 503 (webhook): Telegram delivers them again.
 *
 * Out: an agent's reaction is set through its own bot (`setMessageReaction`). Bots may use only
 * Telegram's reaction emoji (reactionEmoji.ts) and, without Premium, one per message: setting one
 * replaces the bot's earlier one there. Refusals are logged and answered false, never thrown.
 */
import { GrammyError } from 'grammy';
import type { MessageReactionUpdated, ReactionType, ReactionTypeEmoji } from 'grammy/types';
import type { ChannelHost, Logger } from '../../core/ports.js';
import type { InboundAuthor } from '../../core/types.js';
import { BoundedMap, BoundedSet } from '../../core/lib/BoundedMap.js';
import { cleanDisplayName } from '../../core/text/displayName.js';
import type { AgentBot } from './bots.js';
import type { BasicGroupIds } from './basicIds.js';
import { describeError } from './errors.js';
import { dmChatId, userName } from './normalize.js';
import { qualifiedEmoji, telegramReaction } from './reactionEmoji.js';

const KEPT = 2000;

export interface ReactionDeps {
  log: Logger;
  host: () => ChannelHost | undefined;
  basic: BasicGroupIds;
}

/** One emoji added (on) or taken back. */
interface Change {
  emoji: string;
  on: boolean;
}

export class TelegramReactions {
  /** Changes handed over (see the top of the file for the key). */
  private readonly done = new BoundedSet<string>(KEPT);
  private readonly inflight = new Map<string, Promise<void>>();
  /** `${agent}\n${change}` → the update ids of this bot's copies of such a change, in order. */
  private readonly seen = new BoundedMap<string, number[]>(KEPT);
  /** `${agent}|${chat}|${message}` → the emoji its bot shows there now ('' for none). */
  private readonly shown = new BoundedMap<string, string>(KEPT);

  constructor(private readonly d: ReactionDeps) {}

  /** `b`'s bot got a message_reaction update. Throws (the update comes again) when it was not recorded. */
  async received(b: AgentBot, updateId: number, u: MessageReactionUpdated): Promise<void> {
    const host = this.d.host();
    if (!host) return;
    const agent = b.agent.id;
    const where = { agent, chatId: u.chat.id, messageId: u.message_id };
    const by = reactor(u);
    if (!by || u.chat.type === 'channel') return this.d.log.debug({ ...where }, 'telegram: a reaction by a bot or in a channel; skipped');
    const chatId = u.chat.type === 'private' ? dmChatId(agent, u.chat.id) : String(u.chat.id);
    // In a basic group the id is this bot's own number for the message (basicIds.ts).
    const platformMessageId = u.chat.type === 'group' ? this.d.basic.nameOf(u.chat.id, agent, u.message_id) : String(u.message_id);
    if (platformMessageId === undefined) return this.d.log.debug({ ...where }, 'telegram: a reaction on a basic-group message this bot cannot name; its poster\'s bot hands it over');
    const before = emojiOf(u.old_reaction);
    const after = emojiOf(u.new_reaction);
    if (before.others + after.others > 0) this.d.log.debug({ ...where }, 'telegram: custom and paid reactions are not kept; only emoji');
    const changes: Change[] = [
      ...before.emoji.filter((e) => !after.emoji.includes(e)).map((emoji) => ({ emoji, on: false })),
      ...after.emoji.filter((e) => !before.emoji.includes(e)).map((emoji) => ({ emoji, on: true })),
    ];
    if (changes.length === 0) return;
    const change = JSON.stringify([chatId, platformMessageId, by.id, u.date, before.emoji, after.emoji]);
    const key = `${change}#${this.occurrence(agent, change, updateId)}`;
    if (this.done.has(key)) return this.d.log.debug({ ...where }, 'telegram: reaction already handed over (another bot\'s copy)');
    let p = this.inflight.get(key);
    if (!p) {
      p = (async () => {
        try {
          const dmAgentId = u.chat.type === 'private' ? agent : undefined;
          for (const c of changes) await host.handle({ kind: 'reaction', reaction: { channel: 'telegram', chatId, platformMessageId, by, emoji: c.emoji, on: c.on, dmAgentId } });
          this.done.add(key);
        } finally {
          this.inflight.delete(key);
        }
      })();
      this.inflight.set(key, p);
    }
    await p;
    this.d.log.debug({ ...where, changes }, 'telegram: reaction handed over');
  }

  /** The how-manieth copy of `change` this bot got (a redelivered update keeps its number). */
  private occurrence(agent: string, change: string, updateId: number): number {
    const k = `${agent}\n${change}`;
    const ids = this.seen.get(k) ?? [];
    let n = ids.indexOf(updateId);
    if (n < 0) {
      n = ids.push(updateId) - 1;
      this.seen.set(k, ids);
    }
    return n;
  }

  /**
   * Show (or take back) `agentId`'s reaction on message `messageId` (its bot's own id of it)
   * through its bot. False when it cannot be shown: not one of Telegram's reaction emoji (no API
   * call), no working bot, a message the bot cannot name, or Telegram refused (logged).
   */
  async show(b: AgentBot | undefined, agentId: string, tgChatId: number, messageId: number | undefined, emoji: string, on: boolean): Promise<boolean> {
    const where = { agent: agentId, chatId: tgChatId, messageId, emoji };
    const form = telegramReaction(emoji);
    if (form === undefined) {
      this.d.log.debug(where, 'telegram: not one of Telegram\'s reaction emoji; not shown there');
      return false;
    }
    if (!b || messageId === undefined) {
      this.d.log.debug(where, b ? 'telegram: a message this bot cannot name; reaction not shown' : 'telegram: no working bot for this agent; reaction not shown');
      return false;
    }
    const key = `${agentId}|${tgChatId}|${messageId}`;
    const now = this.shown.get(key);
    // One reaction per bot per message: a later one replaced it, so there is nothing to take back.
    if (!on && now !== undefined && now !== form) return true;
    // Shown already (a room shows a reaction where the message is and again on its copy as it is posted).
    if (on && now === form) return true;
    try {
      const reaction: ReactionTypeEmoji[] = on ? [{ type: 'emoji', emoji: form as ReactionTypeEmoji['emoji'] }] : [];
      await b.bot.api.setMessageReaction(tgChatId, messageId, reaction);
    } catch (err) {
      const what = `${on ? 'set' : 'take back'} ${agentId}'s reaction ${emoji}`;
      const msg = `telegram: could not ${what}: ${refusal(err)}; it stays recorded (the web page shows it)`;
      this.d.log.warn({ ...where, err: describeError(err, [b.token]) }, msg);
      return false;
    }
    this.shown.set(key, on ? form : '');
    return true;
  }
}

/** What Telegram's refusal of a bot's reaction means, for the operator. */
function refusal(err: unknown): string {
  const said = err instanceof GrammyError ? err.description : '';
  if (/REACTION_INVALID/.test(said)) return 'REACTION_INVALID, not one this chat allows (its admins pick them)';
  if (/REACTIONS_TOO_MANY/.test(said)) return 'REACTIONS_TOO_MANY, the message carries as many as Telegram allows';
  if (/message to react not found/i.test(said)) return 'the message is gone, or this bot cannot see it';
  return 'Telegram refused it';
}

/** Who changed their reactions: a person, or an anonymous admin as the chat (`chat:<id>`); a bot is nobody. */
function reactor(u: MessageReactionUpdated): InboundAuthor | undefined {
  if (u.user) return u.user.is_bot ? undefined : { id: String(u.user.id), name: userName(u.user) };
  const c = u.actor_chat;
  if (!c) return undefined;
  return { id: `chat:${c.id}`, name: cleanDisplayName('title' in c && c.title ? c.title : '') || 'Anonymous' };
}

/** The emoji of a reaction list, as Chorus writes them, and how many others (custom, paid) it had. */
function emojiOf(list: readonly ReactionType[]): { emoji: string[]; others: number } {
  const emoji: string[] = [];
  let others = 0;
  for (const r of list) {
    if (r.type !== 'emoji') others++;
    else if (!emoji.includes(qualifiedEmoji(r.emoji))) emoji.push(qualifiedEmoji(r.emoji));
  }
  return { emoji, others };
}
