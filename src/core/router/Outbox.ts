/**
 * Everything the router sends out: agent replies, system notices and command answers through
 * the group's channel, typing indicators, and the platform-id → agent map that makes replies to
 * an agent's message address that agent. A reply is recorded before it is posted; its delivery
 * state tells a restart what still has to go out.
 */
import type { Channel, GroupDoc, Logger } from '../ports.js';
import type { AgentDef, ChannelKind, ChatRef, DecisionType, InboundMessage, TranscriptEntry } from '../types.js';
import { describeError } from '../errors.js';
import type { EventHub } from '../events.js';
import type { GroupManager } from '../groups/GroupManager.js';

/** Platform ids remembered for reply-to addressing (bounded). */
const POSTED_MAX = 50_000;

export class Outbox {
  private readonly postedIndex = new Map<string, string>();
  private readonly typingStops = new Map<string, () => void>();

  constructor(
    private readonly groups: GroupManager,
    private readonly channels: ReadonlyMap<ChannelKind, Channel>,
    private readonly agentMap: ReadonlyMap<string, AgentDef>,
    private readonly events: EventHub,
    private readonly logger: Logger,
  ) {}

  /** Which agent posted this platform message, if known. */
  agentFor(channel: ChannelKind, chatId: string, platformMessageId: string): string | undefined {
    return this.postedIndex.get(`${channel}:${chatId}:${platformMessageId}`);
  }

  /** Stop every typing indicator (shutdown). */
  stopAllTyping(): void {
    for (const stop of this.typingStops.values()) stop();
    this.typingStops.clear();
  }

  chatOf(g: GroupDoc, threadId?: string, viaAgentId?: string): ChatRef {
    return { channel: g.channel, chatId: g.chatId, threadId, viaAgentId: viaAgentId ?? g.dmAgentId };
  }

  async postEntry(g: GroupDoc, entry: TranscriptEntry, replyTo: string | undefined): Promise<void> {
    const channel = this.channels.get(g.channel);
    const agent = entry.agentId ? this.agentMap.get(entry.agentId) : undefined;
    if (!channel) {
      this.logger.warn({ group: g.id, channel: g.channel }, 'channel not running; reply kept for later delivery');
      return;
    }
    try {
      const chat = this.chatOf(g, entry.threadId);
      const res = agent ? await channel.postAsAgent(chat, agent, entry.text, { replyToMessageId: replyTo }) : await channel.postAsSystem(chat, entry.text);
      entry.delivery = 'posted';
      entry.postedIds = res.ids;
      this.indexPosted(g, entry);
    } catch (err) {
      entry.delivery = 'failed';
      this.logger.error({ group: g.id, agent: entry.agentId, err: describeError(err) }, 'channel could not post a reply');
    }
    // Not awaited: the round's next save (usually in this same tick) carries the delivery state,
    // and saves of one tick share one write.
    this.groups.save(g).catch((err: unknown) => this.logger.error({ group: g.id, err: describeError(err) }, 'could not save delivery state'));
  }

  /** A system-voice message in the chat: recorded in the transcript, posted, never shown to agents. */
  async notice(g: GroupDoc, text: string, opts: { decision?: DecisionType; agentId?: string; viaAgentId?: string; threadId?: string } = {}): Promise<void> {
    const entry = this.groups.append(g, {
      kind: 'system',
      authorId: 'system',
      authorName: 'Chorus',
      text,
      hiddenFromAgents: true,
      delivery: 'pending',
      threadId: opts.threadId,
      decision: opts.decision ? { type: opts.decision, agentId: opts.agentId, detail: text } : undefined,
    });
    await this.groups.save(g);
    this.events.emit({ type: 'message', groupId: g.id, entry });
    const channel = this.channels.get(g.channel);
    if (!channel) return;
    try {
      const res = await channel.postAsSystem(this.chatOf(g, opts.threadId, opts.viaAgentId), text);
      entry.delivery = 'posted';
      entry.postedIds = res.ids;
    } catch (err) {
      entry.delivery = 'failed';
      this.logger.warn({ group: g.id, err: describeError(err) }, 'channel could not post a notice');
    }
    await this.groups.save(g);
  }

  /** Reply to a chat that may have no group (commands like /group create, /help). */
  async replyInChat(msg: InboundMessage, g: GroupDoc | undefined, text: string): Promise<void> {
    if (g) return this.notice(g, text, { viaAgentId: msg.viaAgentId, threadId: msg.threadId });
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

  indexPosted(g: GroupDoc, e: TranscriptEntry): void {
    if (!e.agentId || !e.postedIds) return;
    for (const id of e.postedIds) remember(this.postedIndex, `${g.channel}:${g.chatId}:${id}`, e.agentId);
  }
}

function remember(map: Map<string, string>, key: string, value: string): void {
  map.set(key, value);
  if (map.size > POSTED_MAX) map.delete(map.keys().next().value!);
}
