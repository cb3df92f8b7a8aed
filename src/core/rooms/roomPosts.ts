/**
 * Posting one entry in one chat of a room, and carrying an edit to a copy: what the per-chat
 * delivery queue (ChatDelivery) asks of the channels. An agent posts under its own identity in
 * every chat, a person is relayed under their name, the system voice speaks as itself; a reply
 * threads to the same entry's message in that chat.
 */
import type { Channel, Logger, PostedMessage } from '../ports.js';
import type { GroupDoc } from '../records.js';
import type { AgentDef, ChannelKind, ChatRef, TranscriptEntry } from '../types.js';
import { PostRefusedError, describeError } from '../errors.js';
import { approvalRequest } from '../text/approvalText.js';
import { channelStepText } from '../text/toolText.js';
import { chatKeyOf, type CarryItem, type ChatAddress, type RelayedAuthor } from '../roomTypes.js';
import { homeOf, sameChat } from './chats.js';
import { entryAt, seqOfId } from '../groups/evolve.js';

/**
 * What became of one attempt: done (with the platform ids of a post), refused for good, passing
 * (try again later, in order), or the chat's channel is not running (resumed at the next start).
 */
export type Attempt = { ok: true; ids: string[]; via?: string | undefined } | { ok: false; refused: string } | { retry: string } | 'later';

/** A post made: its ids, and which of the channel's identities made it (for later edits). */
function made(p: PostedMessage): Attempt {
  return { ok: true, ids: p.ids, ...(p.via ? { via: p.via } : {}) };
}

/** Turns whose reply answers a person's message (the reply threads to it). */
const ANSWERS_A_PERSON = new Set(['addressed', 'sticky', 'rotation', 'direct']);

export interface RoomPostDeps {
  channels: ReadonlyMap<ChannelKind, Channel>;
  agentMap: ReadonlyMap<string, AgentDef>;
  logger: Logger;
}

/** The id an entry has in `chat`: where it was written, its home post, or its copy there. */
export function idIn(g: GroupDoc, e: TranscriptEntry, chat: ChatAddress): string | undefined {
  if (e.kind === 'human' && sameChat(e.origin ?? homeOf(g), chat)) return e.platformMessageId;
  if (sameChat(homeOf(g), chat) && e.postedIds?.length) return e.postedIds[0];
  return e.copies?.[chatKeyOf(chat)]?.ids?.[0];
}

/** The message an entry replies to in `chat`, when that message is known there. */
function replyTargetIn(g: GroupDoc, e: TranscriptEntry, chat: ChatAddress): string | undefined {
  const target = e.replyTo ?? (e.kind === 'agent' && e.meta?.answers && ANSWERS_A_PERSON.has(e.meta.reason) ? e.meta.answers : undefined);
  if (!target) return undefined;
  const t = entryAt(g.transcript, seqOfId(target));
  return t ? idIn(g, t, chat) : undefined;
}

/** How the room shows a relayed person (or foreign bot) in other chats. */
export function relayedAuthor(g: GroupDoc, e: TranscriptEntry): RelayedAuthor {
  return { name: e.authorName, platform: (e.origin ?? homeOf(g)).channel, kind: e.authorKind === 'bot' ? 'bot' : 'person', ...(e.authorAvatarUrl ? { avatarUrl: e.authorAvatarUrl } : {}) };
}

/** Where in `chat` entry `e` is posted or shown (a reaction on it too). */
export function chatRefIn(g: GroupDoc, chat: ChatAddress, e: TranscriptEntry): ChatRef {
  // Threads and the bot that got a command belong to the chat the entry came from.
  const own = sameChat(chat, e.origin ?? homeOf(g));
  return { channel: chat.channel, chatId: chat.chatId, threadId: own ? e.threadId : undefined, viaAgentId: own ? (e.viaAgentId ?? g.dmAgentId) : undefined };
}

/** Post entry `e` in `chat` (its home post or its copy there). */
export async function postIn(d: RoomPostDeps, g: GroupDoc, e: TranscriptEntry, chat: ChatAddress, resumedSince: number | undefined): Promise<Attempt> {
  const channel = d.channels.get(chat.channel);
  if (!channel) return 'later';
  const ref = chatRefIn(g, chat, e);
  const replyToMessageId = replyTargetIn(g, e, chat);
  const attachments = e.attachments?.length && (e.kind === 'agent' || e.kind === 'human') ? e.attachments : undefined;
  const opts = { replyToMessageId, attachments, resumedSince };
  try {
    if (e.kind === 'human') return made(await channel.relay(ref, relayedAuthor(g, e), e.text, opts));
    const agent = e.agentId ? d.agentMap.get(e.agentId) : undefined;
    if (!agent) return made(await channel.postAsSystem(ref, e.text, opts));
    const stepText = e.tool ? channelStepText(agent.name, e.tool, g.config.show_tools) : undefined;
    if (stepText === null) return { ok: true, ids: [] };
    const approval = e.tool ? approvalRequest(agent.name, e.tool) : undefined;
    return made(await channel.postAsAgent(ref, agent, stepText ?? e.text, { ...opts, approval }));
  } catch (err) {
    return failed(d, g, chat, err, 'could not post in a chat of the room');
  }
}

/**
 * Show the agents' reactions on a person's message on its copy just posted in `chat`: an agent
 * that reacted before the copy was there is shown there too, as on the chats that had the message.
 */
export async function reactOnCopy(
  d: RoomPostDeps,
  g: GroupDoc,
  seq: number,
  chat: ChatAddress,
  id: string,
): Promise<void> {
  const channel = d.channels.get(chat.channel);
  const e = entryAt(g.transcript, seq);
  if (!channel || e?.kind !== 'human') return;
  for (const r of e.reactions ?? []) {
    const agent = r.byKey.startsWith('agent:') ? d.agentMap.get(r.byKey.slice('agent:'.length)) : undefined;
    if (!agent) continue;
    try {
      await channel.react(chatRefIn(g, chat, e), agent, id, r.emoji, true);
    } catch (err) {
      const where = { group: g.id, chat: chatKeyOf(chat), agent: agent.id };
      d.logger.warn({ ...where, err: describeError(err) }, 'channel could not show a reaction');
    }
  }
}

/** Carry an edit or a deletion to the copy `item` names. */
export async function carryIn(d: RoomPostDeps, g: GroupDoc, item: CarryItem, chat: ChatAddress): Promise<Attempt> {
  const channel = d.channels.get(chat.channel);
  if (!channel) return 'later';
  const ref: ChatRef = { channel: chat.channel, chatId: chat.chatId };
  try {
    if (item.deleted) await channel.deletePosted(ref, item.ids, item.by, item.via);
    else await channel.editPosted(ref, item.ids, item.by, item.text ?? '', item.via);
    return { ok: true, ids: item.ids };
  } catch (err) {
    return failed(d, g, chat, err, item.deleted ? 'could not remove a copy in a chat of the room' : 'could not edit a copy in a chat of the room');
  }
}

function failed(d: RoomPostDeps, g: GroupDoc, chat: ChatAddress, err: unknown, what: string): Attempt {
  const why = describeError(err);
  if (err instanceof PostRefusedError) {
    d.logger.error({ group: g.id, chat: chatKeyOf(chat), err: why }, `${what}; the platform refused it for good`);
    return { ok: false, refused: why };
  }
  return { retry: why };
}
