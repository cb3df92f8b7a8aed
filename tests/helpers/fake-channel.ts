/** A Channel that records what the router posts; admins configurable. */
import type { Channel, ChannelHost, PostOptions, PostedMessage } from '../../src/core/ports.js';
import type { AgentDef, ChannelKind, ChatRef } from '../../src/core/types.js';
import type { PostedBy, RelayedAuthor } from '../../src/core/roomTypes.js';

export interface FakePost {
  chatId: string;
  agentId: string | null;
  text: string;
  replyTo?: string | undefined;
  id: string;
  /** Ids of the files posted with it. */
  files?: string[] | undefined;
}

export class FakeChannel implements Channel {
  readonly capabilities = { maxMessageLength: 4000 };
  readonly posts: FakePost[] = [];
  readonly typing: Array<{ agentId: string; active: boolean }> = [];
  host: ChannelHost | null = null;
  admins: Set<string> | 'everyone' = 'everyone';
  failPosts = false;
  private n = 0;

  constructor(readonly kind: ChannelKind = 'web') {}

  async start(host: ChannelHost) {
    this.host = host;
  }
  async stop() {}
  async postAsAgent(chat: ChatRef, agent: AgentDef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    if (this.failPosts) throw new Error('platform down');
    const id = `p${++this.n}`;
    this.posts.push({ chatId: chat.chatId, agentId: agent.id, text, replyTo: opts?.replyToMessageId, id, ...(opts?.attachments?.length ? { files: opts.attachments.map((a) => a.id) } : {}) });
    return { ids: [id] };
  }
  readonly reactions: Array<{ chatId: string; agentId: string; messageId: string; emoji: string; on: boolean }> = [];
  async react(chat: ChatRef, agent: AgentDef, messageId: string, emoji: string, on: boolean): Promise<boolean> {
    this.reactions.push({ chatId: chat.chatId, agentId: agent.id, messageId, emoji, on });
    return true;
  }
  async postAsSystem(chat: ChatRef, text: string): Promise<PostedMessage> {
    const id = `p${++this.n}`;
    this.posts.push({ chatId: chat.chatId, agentId: null, text, id });
    return { ids: [id] };
  }
  /** Posts relayed from other chats of a room, edits and removals of posted messages. */
  readonly relayed: Array<{ chatId: string; from: RelayedAuthor; text: string; replyTo?: string | undefined; id: string }> = [];
  readonly changed: Array<{ chatId: string; ids: string[]; by: PostedBy; text?: string; deleted?: true }> = [];
  async relay(chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage> {
    if (this.failPosts) throw new Error('platform down');
    const id = `p${++this.n}`;
    this.relayed.push({ chatId: chat.chatId, from, text, replyTo: opts?.replyToMessageId, id });
    return { ids: [id] };
  }
  async editPosted(chat: ChatRef, ids: readonly string[], by: PostedBy, text: string): Promise<void> {
    if (this.failPosts) throw new Error('platform down');
    this.changed.push({ chatId: chat.chatId, ids: [...ids], by, text });
  }
  async deletePosted(chat: ChatRef, ids: readonly string[], by: PostedBy): Promise<void> {
    if (this.failPosts) throw new Error('platform down');
    this.changed.push({ chatId: chat.chatId, ids: [...ids], by, deleted: true });
  }
  startTyping(_chat: ChatRef, agent: AgentDef) {
    this.typing.push({ agentId: agent.id, active: true });
    return () => void this.typing.push({ agentId: agent.id, active: false });
  }
  async isAdmin(_chat: ChatRef, userId: string) {
    return this.admins === 'everyone' || this.admins.has(userId);
  }
  warnings(): string[] {
    return [];
  }
  /** Texts posted by agents (and the system with `null`). */
  texts(agentId?: string | null): string[] {
    return this.posts.filter((p) => agentId === undefined || p.agentId === agentId).map((p) => p.text);
  }
}
