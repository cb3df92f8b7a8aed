/**
 * Handing recorded entries to channels: agent replies and system notices through the group's
 * channel, command answers in chats without a group, typing indicators, and the platform-id →
 * agent map that makes replies to an agent's message address that agent. Recording happens
 * before (see Recorder); this class never writes.
 */
import type { Channel, Logger } from '../ports.js';
import type { GroupDoc } from '../records.js';
import type { AgentDef, ChannelKind, ChatRef, InboundMessage, TranscriptEntry } from '../types.js';
import { approvalRequest } from '../text/approvalText.js';
import { channelStepText } from '../text/toolText.js';
import { describeError } from '../errors.js';
import type { EventHub } from '../events.js';
import { PostedIndex } from '../rooms/PostedIndex.js';

/** What became of one post: posted with ids, failed for good, or no channel running yet. */
export type PostOutcome = { ok: true; ids: string[] } | { ok: false } | 'later';

export class Outbox {
  /** Which entry (and agent) each platform message is, in every chat of every room. */
  readonly posted = new PostedIndex();
  private readonly typingStops = new Map<string, () => void>();

  constructor(
    private readonly channels: ReadonlyMap<ChannelKind, Channel>,
    private readonly agentMap: ReadonlyMap<string, AgentDef>,
    private readonly events: EventHub,
    private readonly logger: Logger,
  ) {}

  /** Which agent posted this platform message, if known. */
  agentFor(channel: ChannelKind, chatId: string, platformMessageId: string): string | undefined {
    return this.posted.find({ channel, chatId }, platformMessageId)?.agentId;
  }

  /** Stop every typing indicator (shutdown). */
  stopAllTyping(): void {
    for (const stop of this.typingStops.values()) stop();
    this.typingStops.clear();
  }

  /** How a post waits for its platform: the router makes it let go of the group meanwhile (see GroupMailbox). */
  aside: <T>(groupId: string, wait: () => Promise<T>) => Promise<T> = (_id, wait) => wait();

  chatOf(g: GroupDoc, threadId?: string, viaAgentId?: string): ChatRef {
    return { channel: g.channel, chatId: g.chatId, threadId, viaAgentId: viaAgentId ?? g.dmAgentId };
  }

  /**
   * Post one recorded entry in the home chat as its agent, or as the system voice. Never throws.
   * `resumedSince`: the post was owed before a restart (see PostOptions).
   */
  async post(g: GroupDoc, entry: TranscriptEntry, replyTo: string | undefined, resumedSince?: number, opts: { holder?: boolean } = {}): Promise<PostOutcome> {
    const channel = this.channels.get(g.channel);
    if (!channel) {
      this.logger.warn({ group: g.id, channel: g.channel }, 'channel not running; entry kept for later delivery');
      return 'later';
    }
    const agent = entry.agentId ? this.agentMap.get(entry.agentId) : undefined;
    try {
      const chat = this.chatOf(g, entry.threadId, entry.viaAgentId);
      // A tool step is posted as its line under `show_tools` (`none`: not at all; the web page
      // shows every step from the transcript); a request for approval goes whole, laid out by the channel.
      const stepText = entry.tool && agent ? channelStepText(agent.name, entry.tool, g.config.show_tools) : undefined;
      if (stepText === null) return { ok: true, ids: [] };
      const text = stepText ?? entry.text;
      const approval = entry.tool && agent ? approvalRequest(agent.name, entry.tool) : undefined;
      // Files an agent's tools made go out with its reply, under its identity.
      const attachments = entry.kind === 'agent' && entry.attachments?.length ? entry.attachments : undefined;
      const send = () => (agent ? channel.postAsAgent(chat, agent, text, { replyToMessageId: replyTo, approval, attachments, resumedSince }) : channel.postAsSystem(chat, text, resumedSince ? { resumedSince } : undefined));
      // The caller holds the group and lets go of it for the post, unless it is outside already.
      const res = await (opts.holder === false ? send() : this.aside(g.id, send));
      if (agent || g.links?.length) for (const id of res.ids) this.posted.note(g, id, entry);
      return { ok: true, ids: res.ids };
    } catch (err) {
      this.logger.error({ group: g.id, agent: entry.agentId, err: describeError(err) }, agent ? 'channel could not post a reply' : 'channel could not post a notice');
      return { ok: false };
    }
  }

  /**
   * Show an agent's reaction on a platform message of `chat` (one of the group's room) natively
   * (`Channel.react`). False when that chat's channel cannot (a platform's fixed set of emoji, a
   * setting) or is not running: the reaction stays recorded and the web page shows it. Never throws.
   */
  async react(g: GroupDoc, agent: AgentDef, chat: ChatRef, platformMessageId: string, emoji: string): Promise<boolean> {
    const channel = this.channels.get(chat.channel);
    if (!channel) return false;
    try {
      return await this.aside(g.id, () => channel.react(chat, agent, platformMessageId, emoji, true));
    } catch (err) {
      const where = { group: g.id, agent: agent.id, channel: chat.channel };
      this.logger.warn({ ...where, err: describeError(err) }, 'channel could not show a reaction');
      return false;
    }
  }

  /** Answer a command in a chat that has no group (e.g. /help before /group create). */
  async replyInChat(msg: InboundMessage, text: string): Promise<void> {
    const channel = this.channels.get(msg.channel);
    try {
      await channel?.postAsSystem({ channel: msg.channel, chatId: msg.chatId, threadId: msg.threadId, viaAgentId: msg.viaAgentId }, text, { replyToMessageId: msg.messageId });
    } catch (err) {
      this.logger.warn({ chat: msg.chatId, err: describeError(err) }, 'could not answer a command');
    }
  }

  setTyping(g: GroupDoc, agent: AgentDef, active: boolean): void {
    const key = `${g.id}/${agent.id}`;
    this.typingStops.get(key)?.();
    this.typingStops.delete(key);
    if (active) {
      const stop = this.channels.get(g.channel)?.startTyping(this.chatOf(g), agent);
      if (stop) this.typingStops.set(key, stop);
    }
    this.events.emit({ type: 'typing', groupId: g.id, agentId: agent.id, active });
  }

  /** Learn the platform ids of a loaded entry (reply-to threading and addressing). */
  indexPosted(g: GroupDoc, e: TranscriptEntry): void {
    this.posted.learn(g, e);
  }
}
