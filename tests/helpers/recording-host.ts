/**
 * A ChannelHost that records what an adapter hands over, for adapter tests that do not need the
 * whole router. Behaves like the router on dedupe: the same (channel, chat, message id) twice is
 * answered 'duplicate'.
 */
import type { ChannelHost, GatewayApi, PlatformChange, PlatformEvent } from '../../src/core/ports.js';
import type { GroupView } from '../../src/core/readModels.js';
import type { AgentDef, ChannelKind, ChatRef, InboundMessage, PlatformReaction, ReceiveResult } from '../../src/core/types.js';
import { silentLogger } from './logger.js';
import { MemoryStore } from './memory-store.js';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import type { Files } from '../../src/core/fileTypes.js';
import type { PlatformEdit } from '../../src/core/roomTypes.js';

export class RecordingHost implements ChannelHost {
  readonly received: InboundMessage[] = [];
  readonly memberships: Array<{ chat: ChatRef; joined?: string[] | undefined; left?: string[] | undefined }> = [];
  readonly rekeys: Array<{ from: string; to: string }> = [];
  readonly posted = new Map<string, string>();
  readonly groups = new Map<string, GroupView>();
  private readonly seen = new Set<string>();
  private waiters: Array<() => void> = [];
  logger = silentLogger;
  /** Files adapters keep, in memory with the real checks (src/files/FileKeeper.ts). */
  readonly fileStore = new MemoryStore();
  readonly files: Files = new FileKeeper(this.fileStore);

  /** Only the web channel uses the gateway; adapter tests of other channels never should. */
  get gateway(): GatewayApi {
    throw new Error('RecordingHost has no gateway; test the web channel against the real app');
  }

  constructor(private readonly agentList: AgentDef[]) {}

  handle(ev: { kind: 'message'; message: InboundMessage }): Promise<ReceiveResult>;
  handle(ev: PlatformChange): Promise<void>;
  async handle(ev: PlatformEvent): Promise<ReceiveResult | void> {
    switch (ev.kind) {
      case 'message':
        return this.receive(ev.message);
      case 'membership':
        this.memberships.push({ chat: ev.chat, joined: ev.change.joined, left: ev.change.left });
        return;
      case 'rekey':
        this.rekeys.push({ from: ev.oldChatId, to: ev.newChatId });
        return;
      case 'edit':
        this.edits.push(ev.edit);
        for (const w of this.waiters.splice(0)) w();
        return;
      case 'reaction':
        this.reactions.push(ev.reaction);
        return;
    }
  }
  protected async receive(msg: InboundMessage): Promise<ReceiveResult> {
    const key = `${msg.channel}:${msg.chatId}:${msg.messageId}`;
    if (this.seen.has(key)) return { status: 'duplicate' };
    this.seen.add(key);
    this.received.push(msg);
    for (const w of this.waiters.splice(0)) w();
    const groupId = `${msg.channel}-${msg.chatId}`;
    return { status: 'recorded', groupId, entryId: `${groupId}.${this.received.length}` };
  }
  agents(): readonly AgentDef[] {
    return this.agentList;
  }
  findGroup(channel: ChannelKind, chatId: string): GroupView | undefined {
    return this.groups.get(`${channel}:${chatId}`);
  }
  readonly handles = new Map<string, string>();
  registerHandle(handle: string, agentId: string): void {
    this.handles.set(handle, agentId);
  }
  /** Edits and deletions the adapter reported. */
  readonly edits: PlatformEdit[] = [];
  readonly reactions: PlatformReaction[] = [];
  agentForPostedMessage(channel: ChannelKind, chatId: string, id: string): string | undefined {
    return this.posted.get(`${channel}:${chatId}:${id}`);
  }
  /** Remember that `agentId` posted platform message `id` (what the router does on delivery). */
  notePosted(chat: ChatRef, id: string, agentId: string): void {
    this.posted.set(`${chat.channel}:${chat.chatId}:${id}`, agentId);
  }
  /** Resolve once at least `n` messages were received (or reject after `ms`). */
  async waitForReceived(n: number, ms = 5000): Promise<InboundMessage[]> {
    const deadline = Date.now() + ms;
    while (this.received.length < n) {
      if (Date.now() > deadline) throw new Error(`expected ${n} inbound message(s), got ${this.received.length}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.received;
  }
}
