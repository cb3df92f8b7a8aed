/**
 * Group lifecycle and management: creating groups (web API, `/group create`, Telegram bots being
 * added), membership, muting, memory resets, config changes, dissolving, and the read models the
 * web API lists. Every change is recorded through the Recorder, then announced as a live event.
 */
import type { ChatAddress } from '../roomTypes.js';
import type { AroundPage, RegenerateResult, SearchCursor, SearchPage, StopResult, ToolDecision } from '../readModels.js';
import type { Channel, Clock, GatewayApi, Peers, ReactionRequest, Store, Logger } from '../ports.js';
import type { GroupDoc } from '../records.js';
import type { ChannelStatus, GatewayEvent, GroupDetail, GroupSummary, GroupView, Readiness, TranscriptPage } from '../readModels.js';
import type { AgentDef, ChannelKind, ChatRef, ConfigValidator, GroupConfig, InboundMessage, TranscriptEntry } from '../types.js';
import { CreatedElsewhereError, StoreUnavailableError, UserError, describeError, notOwnerError } from '../errors.js';
import type { EventHub } from '../events.js';
import type { Outbox } from '../router/Outbox.js';
import type { Recorder } from '../router/Recorder.js';
import type { GroupManager } from './GroupManager.js';
import { PAGE_MAX, pageOf, summaryOf, viewOf } from './groupReads.js';
import { promptContext, type PromptContext } from './promptContext.js';
import type { RunningGroups } from '../peers.js';
import { pageAround, searchHistory, type HistoryDeps } from './history.js';
import { MessageEditor } from './MessageEditor.js';
import { Reactions } from './Reactions.js';
import type { GroupMailbox, GroupTask } from './GroupMailbox.js';
import { RoomLinks } from './RoomLinks.js';

export interface GroupAdminDeps {
  groups: GroupManager;
  agents: readonly AgentDef[];
  agentMap: ReadonlyMap<string, AgentDef>;
  events: EventHub;
  outbox: Outbox;
  recorder: Recorder;
  channels: ReadonlyMap<ChannelKind, Channel>;
  validateConfig: ConfigValidator;
  clock: Clock;
  logger: Logger;
  scriptedProvider: boolean;
  store: Store;
  /** The other instances on the same database (none for a single instance). */
  peers: Peers;
  /** The groups this process runs; only their owner changes the others. */
  running: RunningGroups;
  /** `limits.reactions_per_minute` (default 30). */
  reactionsPerMinute?: number | undefined;
  /** Each group's one writer: every change here runs as a task of its group's mailbox. */
  mailbox: GroupMailbox;
  /** Rounds started or ended on request (the router's RoundRequests). */
  rounds: {
    regenerate(groupId: string, entryId: string): Promise<RegenerateResult>;
    stopGroup(groupId: string, by: string): Promise<StopResult>;
    decideTool(groupId: string, id: string, approve: boolean, by: string, digest?: string): Promise<ToolDecision>;
  };
}

export class GroupAdmin implements GatewayApi {
  readonly editor: MessageEditor;
  /** People's reactions, and agents' (`byAgent`, for the rounds). */
  readonly reactions: Reactions;
  /** Chats joining and leaving the groups' rooms. */
  readonly links: RoomLinks;

  constructor(private readonly d: GroupAdminDeps) {
    // Edits, deletions and reactions are tasks of their group's mailbox like every other change.
    const entryChanges = { groups: d.groups, store: d.store, now: () => d.clock.now(), running: d.running, mailbox: d.mailbox };
    this.editor = new MessageEditor(entryChanges);
    this.reactions = new Reactions({ ...entryChanges, perMinute: d.reactionsPerMinute });
    this.links = new RoomLinks({ groups: d.groups, recorder: d.recorder, clock: d.clock, logger: d.logger, owned: (id) => this.owned(id), mailbox: d.mailbox });
  }

  // Rooms across chats: the web page's side (its token holder is an admin).
  linkCode(groupId: string, by: string): Promise<{ code: string; until: number }> {
    this.d.logger.info({ group: groupId, by }, 'link code asked for on the web');
    return this.links.makeCode(groupId, { channel: 'web', chatId: groupId });
  }
  linkWeb(code: string, by: string): Promise<GroupView> {
    this.d.logger.info({ by }, 'the web joins a room by code');
    return this.links.joinWeb(code);
  }
  unlinkChat(groupId: string, chat: ChatAddress, by: string): Promise<GroupView> {
    this.d.logger.info({ group: groupId, chat: `${chat.channel}:${chat.chatId}`, by }, 'a chat is unlinked on the web');
    return this.links.unlink(groupId, chat);
  }

  react(groupId: string, entryId: string, reaction: ReactionRequest): Promise<TranscriptEntry> {
    return this.reactions.react(groupId, entryId, reaction);
  }

  editMessage(groupId: string, entryId: string, edit: { clientTag: string | undefined; text: string; maxChars: number }): Promise<TranscriptEntry> {
    return this.editor.edit(groupId, entryId, edit);
  }

  deleteMessage(groupId: string, entryId: string, by: { clientTag: string | undefined }): Promise<TranscriptEntry> {
    return this.editor.remove(groupId, entryId, by);
  }

  get scriptedProvider(): boolean {
    return this.d.scriptedProvider;
  }

  readiness(): Readiness {
    const store = this.d.store.health();
    const channels: Partial<Record<ChannelKind, ChannelStatus>> = {};
    for (const [kind, channel] of this.d.channels) {
      try {
        channels[kind] = channel.status?.() ?? { ok: true };
      } catch (err) {
        channels[kind] = { ok: false, error: `status unavailable: ${describeError(err)}` };
      }
    }
    const cluster = this.d.peers.status();
    const ready = store.writable && Object.values(channels).every((c) => c.ok) && (cluster?.ok ?? true);
    return { ready, store: { ok: store.writable, ...store }, channels, ...(cluster ? { cluster } : {}) };
  }

  listAgents(): readonly AgentDef[] {
    return this.d.agents;
  }

  regenerate(groupId: string, entryId: string): Promise<RegenerateResult> {
    return this.d.rounds.regenerate(groupId, entryId);
  }

  stopGroup(groupId: string, by: string): Promise<StopResult> {
    return this.d.rounds.stopGroup(groupId, by);
  }

  decideTool(groupId: string, id: string, approve: boolean, by: string, digest?: string): Promise<ToolDecision> {
    return this.d.rounds.decideTool(groupId, id, approve, by, digest);
  }

  subscribe(listener: (ev: GatewayEvent) => void): () => void {
    return this.d.events.subscribe(listener);
  }

  /** Record a group just created (with a fresh session per participant: every mailbox starts now). */
  async persistNew(g: GroupDoc, seen?: string): Promise<void> {
    // With several instances, the group's lease is taken before its first record is written.
    let claimed = false;
    try {
      claimed = await this.d.peers.claimNew(g.id);
    } catch (err) {
      // The database could not be asked: nothing was kept, and no half-made group may stay behind
      // (messages for it would wait in the inbox of a group no instance runs).
      this.d.groups.forget(g);
      throw new StoreUnavailableError(`group ${g.id} could not be created: ${describeError(err)}`, { cause: err });
    }
    if (!claimed) {
      this.d.groups.forget(g);
      throw new CreatedElsewhereError(g.id);
    }
    this.d.running.run(g.id);
    try {
      await this.d.recorder.record(g, { seen });
    } catch (err) {
      // Its first record was refused: the group does not exist anywhere, so its lease goes back too.
      this.d.groups.forget(g);
      this.d.running.release(g.id);
      await this.d.peers.releaseNew?.(g.id).catch(() => undefined);
      throw err;
    }
  }

  async membershipChanged(chat: ChatRef, change: { joined?: string[]; left?: string[]; title?: string | undefined; autoCreate: boolean }): Promise<void> {
    const joined = (change.joined ?? []).filter((a) => this.d.agentMap.has(a));
    const left = change.left ?? [];
    let g = this.d.groups.find(chat.channel, chat.chatId);
    if (!g) {
      if (!change.autoCreate || joined.length === 0) return;
      g = this.d.groups.create({ channel: chat.channel, chatId: chat.chatId, title: change.title ?? `Chat ${chat.chatId}`, participants: joined });
      // Another instance may have created the chat's group a moment ago (another bot's copy of the
      // same join reached it): CreatedElsewhereError, and that group takes this change.
      await this.persistNew(g);
      const made = g;
      await this.d.mailbox.send(made.id, () => this.d.recorder.notice(made, this.greeting(made), { viaAgentId: joined[0] }));
      return;
    }
    const found = g;
    await this.d.mailbox.send(found.id, async (t) => {
      for (const a of joined) if (!found.participants.includes(a)) await this.addMember(found.id, a, t);
      for (const a of left) if (found.participants.includes(a)) await this.removeMember(found.id, a, { allowEmpty: true }, t);
      if (found.participants.length === 0) await this.dissolveGroup(found.id, t);
    });
  }

  async rekeyChat(channel: ChannelKind, oldChatId: string, newChatId: string): Promise<void> {
    const g = this.d.groups.find(channel, oldChatId);
    if (!g || this.d.groups.find(channel, newChatId)) return;
    // The home chat, or a chat linked to the room (a linked Telegram group became a supergroup).
    const home = g.channel === channel && g.chatId === oldChatId;
    await this.d.mailbox.send(g.id, async () => {
      this.d.groups.rekey(g, newChatId, home ? undefined : { channel, chatId: oldChatId });
      this.d.logger.info({ group: g.id, from: oldChatId, to: newChatId }, 'chat moved to a new id; group re-keyed');
      await this.d.recorder.record(g);
    });
  }

  greeting(g: GroupDoc): string {
    const who = g.participants.map((p) => `${this.d.agentMap.get(p)?.name ?? p} (@${p})`).join(', ');
    return `👋 Group "${g.title}" is ready with ${who}. Address an agent with its @handle, @all for everyone, or just talk and agents join in when they have something to add. /help lists the commands.`;
  }

  listGroups(): GroupSummary[] {
    return this.d.groups
      .all()
      .filter((g) => !g.state.archived)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((g) => summaryOf(g));
  }

  getGroup(id: string): GroupDetail | undefined {
    const g = this.d.groups.get(id);
    if (!g || g.state.archived) return undefined;
    const now = this.d.clock.now();
    return {
      ...summaryOf(g),
      members: g.participants.map((p) => {
        const last = g.state.lastSpoke[p] ?? null;
        return { agentId: p, muted: g.state.muted.includes(p), cooldownLeftMs: last === null ? 0 : Math.max(0, last + g.config.cooldown_seconds * 1000 - now), lastSpokeAt: last };
      }),
      warnings: this.d.channels.get(g.channel)?.warnings(this.d.outbox.chatOf(g), g.participants) ?? [],
      usage: structuredClone(g.state.usage),
    };
  }

  async createGroup(input: { title: string; participants: string[]; id?: string | undefined }): Promise<GroupView> {
    if (input.id !== undefined && !/^[a-z0-9][a-z0-9_-]{0,59}$/.test(input.id)) throw new UserError('id must be a slug (a-z 0-9 _ -, at most 60)', 'bad_request', 400);
    if (typeof input.title !== 'string' || !input.title.trim()) throw new UserError('title is required', 'bad_request', 400);
    // Web rooms are addressed by their group id (chatId '' = use the id).
    const g = this.d.groups.create({ channel: 'web', chatId: input.id ?? '', title: input.title, participants: input.participants, id: input.id });
    await this.persistNew(g);
    return viewOf(g);
  }

  /** `/group create` in a chat of any channel. */
  async createGroupInChat(msg: InboundMessage, participants: string[]): Promise<GroupDoc> {
    const g = this.d.groups.create({ channel: msg.channel, chatId: msg.chatId, title: msg.chatTitle ?? `Chat ${msg.chatId}`, participants });
    // Its other copies (one per bot) and redeliveries after a restart are duplicates now.
    await this.persistNew(g, msg.messageId);
    return g;
  }

  dissolveGroup(id: string, via?: GroupTask): Promise<void> {
    return this.writer(id, via, async (g) => {
      this.d.groups.archive(g);
      await this.d.recorder.record(g);
    });
  }

  updateConfig(id: string, patch: Record<string, unknown>, via?: GroupTask): Promise<GroupConfig> {
    return this.writer(id, via, (g) => this.configure(g, patch));
  }

  private async configure(g: GroupDoc, patch: Record<string, unknown>): Promise<GroupConfig> {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new UserError('config must be an object of keys to values', 'bad_request', 400);
    const res = this.d.validateConfig(patch);
    if (!res.ok) throw new UserError(res.problems.join('; '), 'invalid_config', 400);
    const next = { ...g.config, ...res.value };
    if (next.last_speaker && !g.participants.includes(next.last_speaker)) {
      throw new UserError(`last_speaker: "${next.last_speaker}" is not a participant (${g.participants.join(', ')})`, 'invalid_config', 400);
    }
    this.d.groups.setConfig(g, next);
    await this.d.recorder.record(g);
    return { ...g.config };
  }

  addMember(id: string, agentId: string, via?: GroupTask): Promise<GroupView> {
    return this.writer(id, via, (g) => this.add(g, agentId));
  }

  private async add(g: GroupDoc, agentId: string): Promise<GroupView> {
    const agent = this.d.agentMap.get(agentId);
    if (!agent) throw new UserError(`unknown agent "${agentId}"; known: ${[...this.d.agentMap.keys()].join(', ')}`, 'unknown_agent', 400);
    if (g.participants.includes(agentId)) throw new UserError(`${agent.name} is already in this group`, 'conflict', 409);
    this.d.groups.addParticipant(g, agentId);
    // The newcomer is shown the last messages so it has context.
    this.d.groups.join(g, agentId, true);
    await this.d.recorder.record(g, { entries: [{ kind: 'system', authorId: 'system', authorName: 'Chorus', text: `${agent.name} joined the group.`, delivery: 'posted' }] });
    return viewOf(g);
  }

  removeMember(id: string, agentId: string, opts: { allowEmpty?: boolean } = {}, via?: GroupTask): Promise<GroupView> {
    return this.writer(id, via, (g) => this.remove(g, agentId, opts));
  }

  private async remove(g: GroupDoc, agentId: string, opts: { allowEmpty?: boolean }): Promise<GroupView> {
    if (!g.participants.includes(agentId)) throw new UserError(`"${agentId}" is not in this group`, 'not_found', 404);
    if (g.participants.length === 1 && !opts.allowEmpty) throw new UserError('cannot remove the last agent; dissolve the group instead', 'conflict', 409);
    this.d.groups.removeParticipant(g, agentId);
    const name = this.d.agentMap.get(agentId)?.name ?? agentId;
    await this.d.recorder.record(g, { entries: [{ kind: 'system', authorId: 'system', authorName: 'Chorus', text: `${name} left the group.`, delivery: 'posted' }] });
    return viewOf(g);
  }

  /** `/group mute` and `unmute`: no voluntary turns; @mentions are still answered. */
  setMuted(id: string, agentId: string, muted: boolean, via?: GroupTask): Promise<void> {
    return this.writer(id, via, async (g) => {
      this.d.groups.setMuted(g, agentId, muted);
      await this.d.recorder.record(g);
    });
  }

  /** `/group reset`: these agents forget the group and listen from now on. */
  resetMemory(id: string, agentIds: string[], via?: GroupTask): Promise<void> {
    return this.writer(id, via, async (g) => {
      for (const a of agentIds) this.d.groups.resetSession(g, a);
      await this.d.recorder.record(g);
    });
  }

  /**
   * A change to a group this instance runs, made as a task of the group's mailbox (`via`: the
   * caller's task, a command typed in the group: the change is part of it).
   */
  private async writer<T>(id: string, via: GroupTask | undefined, change: (g: GroupDoc) => Promise<T>): Promise<T> {
    this.owned(id); // refused at once, not after the tasks ahead of it
    return this.d.mailbox.send(id, () => change(this.owned(id)), via);
  }

  /**
   * A live group this instance may change. Another instance's group answers 409 naming its
   * owner: changes go to the instance that runs the group (messages, by contrast, are handed
   * over through the shared inbox from any instance).
   */
  private owned(id: string): GroupDoc {
    const g = this.d.groups.require(id);
    if (!this.d.running.runs(id)) throw notOwnerError(id, this.d.peers.ownerOf(id));
    return g;
  }

  /** A page of the full transcript (archived groups too: their history is kept). */
  async messages(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    return (await this.messagePage(id, opts)).entries;
  }

  private get history(): HistoryDeps {
    return { groups: this.d.groups, store: this.d.store, page: (id, opts) => this.messagePage(id, opts), owns: (id) => this.d.running.runs(id) };
  }

  search(opts: { groupId?: string | undefined; q: string; limit: number; before?: SearchCursor | undefined }): Promise<SearchPage> {
    return searchHistory(this.history, opts);
  }

  messagesAround(id: string, opts: { around: number; limit: number }): Promise<AroundPage> {
    return pageAround(this.history, id, opts);
  }

  async messagePage(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage> {
    const g = this.d.groups.get(id);
    if (!g) throw new UserError(`unknown group "${id}"`, 'not_found', 404);
    if (!this.d.running.runs(id)) {
      // Another instance writes this group: the copy here may lag, the shared store does not.
      // One entry more than the page tells whether older ones exist.
      const limit = Math.max(1, Math.min(opts.limit, PAGE_MAX));
      return pageOf(await this.d.store.readEntries(id, { beforeSeq: opts.before, limit: limit + 1 }), limit);
    }
    return this.d.groups.page(g, opts);
  }

  /** What the model was shown for one reply, rebuilt from the log (the store is shared: any instance answers). */
  async promptContext(groupId: string, entryId: string): Promise<PromptContext> {
    const g = this.d.groups.get(groupId);
    if (!g) throw new UserError(`unknown group "${groupId}"`, 'not_found', 404);
    return promptContext({ store: this.d.store, agent: (id) => this.d.agentMap.get(id), group: g }, entryId);
  }
}
