/** A Channel that records what the router posts; admins configurable. */
import type { Channel, ChannelHost, PostOptions, PostedMessage } from '../../src/core/ports.js';
import type { AgentDef, ChannelKind, ChatRef } from '../../src/core/types.js';
import type { PostedBy, RelayedAuthor } from '../../src/core/roomTypes.js';
import { PostRefusedError } from '../../src/core/errors.js';

/**
 * How a chat answers a post, an edit or a removal (`FakeChannel.fault`):
 * - `down`: fails in passing (a 500, a timeout before the platform took it): tried again later;
 * - `refuse`: refused for good (the bot was removed from the chat): `PostRefusedError`;
 * - `unsure`: the platform takes it but the answer is lost (a timeout after it posted): it fails
 *   in passing, and a later attempt that looks for it (`resumedSince`) finds it instead of posting
 *   twice, as the Discord channel does.
 */
export type FakeFault = 'down' | 'refuse' | 'unsure';

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
  /** Per chat, how posts, relays, edits and removals there fail (none: they succeed). */
  fault: (chatId: string) => FakeFault | undefined = () => undefined;
  /** Posts made under an `unsure` fault that no caller was told of yet: `${chatId}\n${text}` → ids. */
  private readonly unanswered = new Map<string, string[]>();
  private n = 0;

  constructor(readonly kind: ChannelKind = 'web') {}

  async start(host: ChannelHost) {
    this.host = host;
  }
  async stop() {}
  async postAsAgent(chat: ChatRef, agent: AgentDef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    if (this.failPosts) throw new Error('platform down');
    return this.faulty(chat.chatId, text, opts, () => {
      const id = `p${++this.n}`;
      this.posts.push({ chatId: chat.chatId, agentId: agent.id, text, replyTo: opts?.replyToMessageId, id, ...(opts?.attachments?.length ? { files: opts.attachments.map((a) => a.id) } : {}) });
      return [id];
    });
  }

  /**
   * Make a post through `make` as the chat's fault says. An attempt that may repeat an earlier one
   * (`resumedSince`) gets the post an `unsure` attempt made, when there is one.
   */
  private async faulty(chatId: string, text: string, opts: PostOptions | undefined, make: () => string[]): Promise<PostedMessage> {
    const key = `${chatId}\n${text}`;
    const made = opts?.resumedSince !== undefined ? this.unanswered.get(key) : undefined;
    if (made) {
      this.unanswered.delete(key);
      return { ids: made };
    }
    const fault = this.fault(chatId);
    if (fault === 'down') throw new Error(`platform down in ${chatId}`);
    if (fault === 'refuse') throw new PostRefusedError(`the bot was removed from ${chatId}`);
    const ids = make();
    if (fault === 'unsure') {
      this.unanswered.set(key, ids);
      throw new Error(`no answer from ${chatId} (it may have posted)`);
    }
    return { ids };
  }

  /** An edit or a removal in `chatId` as its fault says (`unsure`: done, then the answer is lost). */
  private change(chatId: string, apply: () => void): void {
    if (this.failPosts) throw new Error('platform down');
    const fault = this.fault(chatId);
    if (fault === 'down') throw new Error(`platform down in ${chatId}`);
    if (fault === 'refuse') throw new PostRefusedError(`the bot was removed from ${chatId}`);
    apply();
    if (fault === 'unsure') throw new Error(`no answer from ${chatId} (it may have changed it)`);
  }
  readonly reactions: Array<{ chatId: string; agentId: string; messageId: string; emoji: string; on: boolean }> = [];
  async react(chat: ChatRef, agent: AgentDef, messageId: string, emoji: string, on: boolean): Promise<boolean> {
    this.reactions.push({ chatId: chat.chatId, agentId: agent.id, messageId, emoji, on });
    return true;
  }
  async postAsSystem(chat: ChatRef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    return this.faulty(chat.chatId, text, opts, () => {
      const id = `p${++this.n}`;
      this.posts.push({ chatId: chat.chatId, agentId: null, text, id });
      return [id];
    });
  }
  /** Posts relayed from other chats of a room, edits and removals of posted messages. */
  readonly relayed: Array<{ chatId: string; from: RelayedAuthor; text: string; replyTo?: string | undefined; id: string }> = [];
  readonly changed: Array<{ chatId: string; ids: string[]; by: PostedBy; text?: string; deleted?: true }> = [];
  async relay(chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage> {
    if (this.failPosts) throw new Error('platform down');
    return this.faulty(chat.chatId, `${from.name}: ${text}`, opts, () => {
      const id = `p${++this.n}`;
      this.relayed.push({ chatId: chat.chatId, from, text, replyTo: opts?.replyToMessageId, id });
      return [id];
    });
  }
  async editPosted(chat: ChatRef, ids: readonly string[], by: PostedBy, text: string): Promise<void> {
    this.change(chat.chatId, () => this.changed.push({ chatId: chat.chatId, ids: [...ids], by, text }));
  }
  async deletePosted(chat: ChatRef, ids: readonly string[], by: PostedBy): Promise<void> {
    this.change(chat.chatId, () => this.changed.push({ chatId: chat.chatId, ids: [...ids], by, deleted: true }));
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
