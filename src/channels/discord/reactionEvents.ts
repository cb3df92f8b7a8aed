/**
 * People's reactions, from the gateway's reaction events to `ChannelHost.reacted`.
 *
 * The client asks for the GuildMessageReactions intent and the Message, Reaction and User partials,
 * so a reaction on a message discord.js does not hold (posted before the bot started, or pushed out
 * of its cache) still arrives, as a partial naming the message, emoji and user.
 *
 * Kept: unicode emoji by people in the channels Chorus serves (a thread's reactions belong to its
 * parent channel's group, as its messages do). Skipped: the gateway bot's own reactions (agents'
 * reactions, see agentReactions.ts), other bots' unless `allow_bots`, custom server emoji (they
 * have an id; Chorus keeps emoji characters only), DMs and channels outside the allow-list.
 *
 * Discord's "remove all" and "remove emoji" events (a moderator clearing a message) do not say who
 * had reacted, so the removals are made for the people this adapter saw react since it started
 * (`Reactors`); reactions from before that stay recorded, and that is logged.
 */
import type { Client, Message, MessageReaction, PartialMessage, PartialMessageReaction, PartialUser, User } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { PlatformReaction } from '../../core/types.js';
import { personName } from './normalize.js';

export interface ReactionContext {
  botUserId: string | undefined;
  allowBots: boolean;
  /** Empty = every channel the bot can read. */
  allowList: ReadonlySet<string>;
}

type AnyMessage = Message | PartialMessage;
type AnyReaction = MessageReaction | PartialMessageReaction;

/** The chat a message is in (a thread: its parent channel), or why Chorus does not serve it. */
function chatOf(m: AnyMessage, allowList: ReadonlySet<string>): { chatId: string } | { skip: string } {
  if (!m.inGuild()) return { skip: 'not in a server' };
  const channel = m.channel;
  const chatId = (channel?.isThread() ? channel.parentId : null) ?? m.channelId;
  if (allowList.size > 0 && !allowList.has(chatId)) return { skip: 'channel not in channels.discord.channels' };
  return { chatId };
}

/** A gateway reaction event as the core takes it, or why it is skipped. */
export function normalizeReaction(reaction: AnyReaction, user: User | PartialUser, on: boolean, ctx: ReactionContext): { reaction: PlatformReaction } | { skip: string } {
  if (ctx.botUserId !== undefined && user.id === ctx.botUserId) return { skip: "the gateway bot's own reaction (an agent's)" };
  // A removal may name only the user's id (`bot` unknown): taking back what was not kept is harmless.
  if (user.bot === true && !ctx.allowBots) return { skip: 'bot' };
  const emoji = reaction.emoji;
  if (emoji.id) return { skip: `custom emoji :${emoji.name ?? '?'}: (only unicode emoji are kept)` };
  if (!emoji.name) return { skip: 'no emoji' };
  const chat = chatOf(reaction.message, ctx.allowList);
  if ('skip' in chat) return chat;
  const member = reaction.message.guild?.members.cache.get(user.id);
  return { reaction: { channel: 'discord', chatId: chat.chatId, platformMessageId: reaction.message.id, by: { id: user.id, name: personName(member, user) }, emoji: emoji.name, on } };
}

/** Messages whose reactors are remembered (for "remove all"); the oldest are forgotten first. */
const REMEMBERED_MESSAGES = 5000;

/**
 * Who reacted with what, per message, as forwarded since the adapter started: what Discord's
 * "remove all" and "remove emoji" events leave out.
 */
export class Reactors {
  /** message id → `${emoji}\n${user id}` → the reaction as forwarded. */
  private readonly byMessage = new Map<string, Map<string, PlatformReaction>>();

  constructor(private readonly capacity = REMEMBERED_MESSAGES) {}

  note(r: PlatformReaction): void {
    const key = `${r.emoji}\n${r.by.id}`;
    const known = this.byMessage.get(r.platformMessageId);
    if (!r.on) {
      known?.delete(key);
      if (known?.size === 0) this.byMessage.delete(r.platformMessageId);
      return;
    }
    const people = known ?? new Map<string, PlatformReaction>();
    people.set(key, r);
    if (!known) {
      this.byMessage.set(r.platformMessageId, people);
      if (this.byMessage.size > this.capacity) this.byMessage.delete(this.byMessage.keys().next().value!);
    }
  }

  /** Removals for everyone known to have reacted to `messageId` (with `emoji`: that emoji only), forgotten here. */
  takeBack(messageId: string, emoji?: string): PlatformReaction[] {
    const people = this.byMessage.get(messageId);
    if (!people) return [];
    const out: PlatformReaction[] = [];
    for (const [key, r] of people) {
      if (emoji !== undefined && r.emoji !== emoji) continue;
      people.delete(key);
      out.push({ ...r, on: false });
    }
    if (people.size === 0) this.byMessage.delete(messageId);
    return out;
  }
}

export interface ReactionListenerOptions {
  log: Logger;
  allowBots: boolean;
  allowList: ReadonlySet<string>;
  reactors: Reactors;
}

export interface ReactionListenerHooks {
  /** False when this client is not the adapter's live gateway session (the event is dropped). */
  live(): boolean;
  /** Hand a reaction to the router (in order with the chat's messages). */
  deliver(r: PlatformReaction): void;
  /** A message's reactions (with `emoji`: that emoji's) were cleared, the bot's included. */
  cleared(messageId: string, emoji: string | undefined): void;
}

/** Listen to the four reaction events of a gateway client. */
export function listenForReactions(client: Client, o: ReactionListenerOptions, h: ReactionListenerHooks): void {
  const one = (reaction: AnyReaction, user: User | PartialUser, on: boolean) => {
    if (!h.live()) return;
    const result = normalizeReaction(reaction, user, on, { botUserId: client.user?.id, allowBots: o.allowBots, allowList: o.allowList });
    if ('skip' in result) {
      o.log.debug({ messageId: reaction.message.id, userId: user.id, reason: result.skip }, 'discord: reaction skipped');
      return;
    }
    o.reactors.note(result.reaction);
    h.deliver(result.reaction);
  };
  const cleared = (message: AnyMessage, emoji: string | undefined) => {
    if (!h.live()) return;
    h.cleared(message.id, emoji);
    if ('skip' in chatOf(message, o.allowList)) return;
    const removals = o.reactors.takeBack(message.id, emoji);
    for (const r of removals) h.deliver(r);
    o.log.info(
      { messageId: message.id, emoji, removed: removals.length },
      `discord: ${emoji ? `the ${emoji} reactions were` : 'all reactions were'} cleared from a message; taken back for the people seen reacting since start (earlier ones stay recorded: Discord does not say whose they were)`,
    );
  };
  client.on('messageReactionAdd', (reaction, user) => one(reaction, user, true));
  client.on('messageReactionRemove', (reaction, user) => one(reaction, user, false));
  // Neither says who had reacted (discord.js passes the reactions it had cached, which for a
  // message it did not hold is nothing).
  client.on('messageReactionRemoveAll', (message) => cleared(message, undefined));
  client.on('messageReactionRemoveEmoji', (reaction) => {
    // A custom emoji's reactions were never kept; the bot never adds one.
    if (!reaction.emoji.id && reaction.emoji.name) cleared(reaction.message, reaction.emoji.name);
  });
}
