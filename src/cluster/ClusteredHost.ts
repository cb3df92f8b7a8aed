/**
 * Several instances on one database: the one place that decides, for everything that reaches this
 * instance, whether it is handled here or by the instance that runs its group. It wraps the local
 * host (the router) the channels and the web API would otherwise talk to directly.
 *
 * - A group this instance runs: everything goes through unchanged (messages handed over earlier,
 *   waiting in the inbox, are recorded first).
 * - Another instance's group: a message is handed over through the shared inbox (acknowledged once
 *   the inbox row is durable); what the read-only copy here can answer itself (a duplicate, a query
 *   for the asker alone, a refusal by the limits) it answers. A command from the page is handed
 *   over and its answer awaited for a moment; `/stop` and tool decisions are handed over as
 *   commands; a change from the page is refused with 409 naming the owner; an edit, deletion,
 *   reaction or regeneration from the page is refused with 503 (try again: it goes where the
 *   group runs). What a platform reports besides messages — bots joining or leaving, a person's
 *   reaction or edit, a chat's new id — goes through the inbox too, in order with the chat's
 *   messages: only one instance holds a bot's connection, and it is often not the group's owner.
 *
 * The core does not route: it runs the groups it was handed (`RunningGroups`) and refuses writes
 * to the others, and the store's fence refuses any write of a group whose lease is gone.
 */
import type { ChannelHost, PlatformChange, PlatformEvent } from '../core/ports.js';
import type { GatewayApi } from '../core/gatewayApi.js';
import type { ChannelKind, ChatRef, InboundMessage, PlatformReaction, ReceiveResult } from '../core/types.js';
import type { PlatformEdit } from '../core/roomTypes.js';
import { CreatedElsewhereError, StoreUnavailableError, notOwnerError } from '../core/errors.js';
import { UNAVAILABLE } from '../core/router/Inbound.js';
import { BoundedMap } from '../core/lib/BoundedMap.js';
import type { ParsedCommand } from '../core/commands/commands.js';

/** The local router, as the wrapper needs it. */
export interface LocalHost extends ChannelHost {
  gateway: GatewayApi;
  receive(msg: InboundMessage): Promise<ReceiveResult>;
  /** This process was handed the group (it is not a read-only copy of another instance's). */
  runs(groupId: string): boolean;
  groupIdOf(msg: InboundMessage): string | undefined;
  fromCopy(msg: InboundMessage): Promise<{ answer: ReceiveResult } | { handOver: InboundMessage; command: ParsedCommand | null }>;
}

/** How this instance reaches the owners of the groups it does not run (the cluster's inbox). */
export interface Owners {
  /** The instance that runs the group, when known. */
  ownerOf(groupId: string): string | null;
  /**
   * Keep a message for the group's owner (durable when resolved). `awaitAnswer`: wait a few
   * seconds for the owner to run a command and return its outcome on the 'forwarded' result.
   */
  forward(groupId: string, msg: InboundMessage, opts?: { awaitAnswer?: boolean }): Promise<ReceiveResult>;
  /** Keep a change that is not a message for the group's owner (throws when it could not be kept). */
  forwardChange(groupId: string, change: PlatformChange): Promise<void>;
  /** Before a message of a group this instance runs is recorded: messages handed over earlier go first. */
  beforeReceive(groupId: string): Promise<void>;
}

export class ClusteredHost implements ChannelHost {
  readonly gateway: GatewayApi;
  /** `channel:new chat id` → group, for chats re-keyed by another instance (see rekeyChat). */
  private readonly moved = new BoundedMap<string, string>(1000);

  constructor(
    private readonly local: LocalHost,
    private readonly owners: Owners,
  ) {
    this.gateway = this.wrapGateway(local.gateway);
  }

  get files(): ChannelHost['files'] {
    return this.local.files;
  }
  get logger(): ChannelHost['logger'] {
    return this.local.logger;
  }

  handle(ev: { kind: 'message'; message: InboundMessage }): Promise<ReceiveResult>;
  handle(ev: PlatformChange): Promise<void>;
  handle(ev: PlatformEvent): Promise<ReceiveResult | void> {
    return ev.kind === 'message' ? this.receive(ev.message) : this.change(ev);
  }

  private async receive(msg: InboundMessage): Promise<ReceiveResult> {
    const id = this.local.groupIdOf(msg);
    try {
      if (id === undefined) {
        const moved = this.movedTo(msg);
        if (moved === undefined) return await this.local.receive(msg);
        // A chat re-keyed through the inbox: to the owner, behind the change (the message's
        // limits are the owner's to check here, as the copy does not know the chat yet).
        if (!this.local.runs(moved)) return await this.owners.forward(moved, msg);
        // Taken over since: the change may still wait in the inbox.
        await this.owners.beforeReceive(moved);
        return await this.local.receive(msg);
      }
      if (this.local.runs(id)) {
        await this.owners.beforeReceive(id);
        return await this.local.receive(msg);
      }
      return await this.handOver(id, msg);
    } catch (err) {
      if (err instanceof StoreUnavailableError) return UNAVAILABLE;
      throw err;
    }
  }

  /** A message for another instance's group: what the copy answers, or the inbox. */
  private async handOver(groupId: string, msg: InboundMessage): Promise<ReceiveResult> {
    const copy = await this.local.fromCopy(msg);
    if ('answer' in copy) return copy.answer;
    if (!copy.command || !msg.ephemeral) return this.owners.forward(groupId, copy.handOver);
    // A change asked on the page runs where the group runs; the asker is told what to expect.
    const res = await this.owners.forward(groupId, copy.handOver, { awaitAnswer: true });
    if (res.status !== 'forwarded') return res;
    // The owner ran it meanwhile: its answer (a refusal, or what a query would show) or its line.
    if (res.ephemeral || res.entryId) return { ...res, status: 'command' };
    return { ...res, ephemeral: { kind: 'command', text: `Handed over to ${this.where(groupId)}: the change shows in the chat once it is made (nothing shows if it was refused there).` } };
  }

  agents(): ReturnType<ChannelHost['agents']> {
    return this.local.agents();
  }
  findGroup(channel: ChannelKind, chatId: string): ReturnType<ChannelHost['findGroup']> {
    return this.local.findGroup(channel, chatId);
  }
  registerHandle(handle: string, agentId: string): void {
    this.local.registerHandle(handle, agentId);
  }
  agentForPostedMessage(channel: ChannelKind, chatId: string, platformMessageId: string): string | undefined {
    return this.local.agentForPostedMessage(channel, chatId, platformMessageId);
  }

  /**
   * A change to another instance's group is kept for its owner in the shared inbox, behind the
   * messages handed over before it; any other is applied here.
   */
  private async change(ev: PlatformChange): Promise<void> {
    const chat = chatOfChange(ev);
    const id = this.local.findGroup(chat.channel, chat.chatId)?.id;
    if (id !== undefined && !this.local.runs(id)) {
      await this.owners.forwardChange(id, ev);
      // Until the copy here has the new id (the owner's change reaches it through the relay), the
      // chat's next messages would find no group: they go to the owner, behind the change.
      if (ev.kind === 'rekey') this.moved.set(`${ev.channel}:${ev.newChatId}`, id);
      return;
    }
    try {
      await this.local.handle(ev);
    } catch (err) {
      // Another instance created the chat's group a moment ago: that group takes this change.
      if (err instanceof CreatedElsewhereError) return this.owners.forwardChange(err.groupId, ev);
      throw err;
    }
  }

  /** The group of a chat whose new id the owner has been handed and the copy here does not know yet. */
  private movedTo(msg: InboundMessage): string | undefined {
    const key = `${msg.channel}:${msg.chatId}`;
    const id = this.moved.get(key);
    if (id !== undefined && this.local.findGroup(msg.channel, msg.chatId)) this.moved.delete(key);
    return id;
  }

  /** The web API: reads from the copy here, changes where the group runs. */
  private wrapGateway(g: GatewayApi): GatewayApi {
    const here = (id: string) => this.local.runs(id) || !g.getGroup(id);
    /** A change from the page goes to the instance that runs the group: 409 naming it. */
    const owned = <T>(id: string, run: () => Promise<T>): Promise<T> => (here(id) ? run() : Promise.reject(notOwnerError(id, this.owners.ownerOf(id))));
    /** A change of one message: 503, try again (the page's next try may reach the owner). */
    const ownedOrRetry = <T>(id: string, run: () => Promise<T>): Promise<T> => (here(id) ? run() : Promise.reject(this.elsewhere(id)));
    return {
      scriptedProvider: g.scriptedProvider,
      listAgents: () => g.listAgents(),
      listGroups: () => g.listGroups(),
      getGroup: (id) => g.getGroup(id),
      createGroup: (input) => g.createGroup(input),
      dissolveGroup: (id) => owned(id, () => g.dissolveGroup(id)),
      updateConfig: (id, patch) => owned(id, () => g.updateConfig(id, patch)),
      addMember: (id, agentId) => owned(id, () => g.addMember(id, agentId)),
      removeMember: (id, agentId) => owned(id, () => g.removeMember(id, agentId)),
      linkCode: (id, by) => owned(id, () => g.linkCode(id, by)),
      linkWeb: (code, by) => g.linkWeb(code, by),
      unlinkChat: (id, chat, by) => owned(id, () => g.unlinkChat(id, chat, by)),
      regenerate: (id, entryId) => ownedOrRetry(id, () => g.regenerate(id, entryId)),
      editMessage: (id, entryId, edit) => ownedOrRetry(id, () => g.editMessage(id, entryId, edit)),
      deleteMessage: (id, entryId, by) => ownedOrRetry(id, () => g.deleteMessage(id, entryId, by)),
      react: (id, entryId, reaction) => ownedOrRetry(id, () => g.react(id, entryId, reaction)),
      stopGroup: async (id, by) => {
        if (here(id)) return g.stopGroup(id, by);
        await this.command(id, '/stop', by, 'the stop');
        return { stopped: true, roundsDropped: null, turnsDropped: null };
      },
      decideTool: async (id, callId, approve, by, digest) => {
        if (here(id)) return g.decideTool(id, callId, approve, by, digest);
        const named = digest ? ` ${digest}` : '';
        await this.command(id, `/${approve ? 'approve' : 'deny'} ${callId}${named}`, by, 'the decision');
        return { decided: true, line: null };
      },
      messages: (id, opts) => g.messages(id, opts),
      messagePage: (id, opts) => g.messagePage(id, opts),
      search: (opts) => g.search(opts),
      messagesAround: (id, opts) => g.messagesAround(id, opts),
      subscribe: (listener) => g.subscribe(listener),
      readiness: () => g.readiness(),
      promptContext: (id, entryId) => g.promptContext(id, entryId),
    };
  }

  /**
   * Hand a command from the page to the instance that runs the group, like any message for it.
   * Only a command the owner will see may be reported as done, so a hand-over that failed throws.
   */
  private async command(groupId: string, text: string, by: string, what: string): Promise<void> {
    const group = this.local.gateway.getGroup(groupId)!;
    const now = Date.now();
    const msg: InboundMessage = { channel: group.channel, chatId: group.chatId, messageId: `ui-${now}-${Math.random().toString(36).slice(2, 8)}`, author: { id: by, name: by }, text, ts: now, ephemeral: true };
    const handed = await this.owners.forward(groupId, msg);
    if (handed.status !== 'forwarded' && handed.status !== 'duplicate') throw new StoreUnavailableError(`${what} could not be handed to the instance that runs group ${groupId}`);
  }

  private where(groupId: string): string {
    const owner = this.owners.ownerOf(groupId);
    return owner ? `instance "${owner}", which runs this group` : 'the instance that runs this group';
  }

  private elsewhere(groupId: string): StoreUnavailableError {
    return new StoreUnavailableError(`group ${groupId} is run by another instance (${this.owners.ownerOf(groupId) ?? 'being taken over'}); try again`);
  }
}

/** The chat a platform change is about (a re-key: the chat under its old id). */
function chatOfChange(ev: PlatformChange): ChatRef {
  switch (ev.kind) {
    case 'membership':
      return ev.chat;
    case 'rekey':
      return { channel: ev.channel, chatId: ev.oldChatId };
    case 'reaction':
      return ev.reaction;
    case 'edit':
      return ev.edit;
  }
}
