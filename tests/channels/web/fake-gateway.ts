/**
 * A small in-memory GatewayApi + ChannelHost for web channel tests: groups with transcripts,
 * dedupe, commands answered by a system line, membership and config changes, and live events.
 * It counts subscribers so tests can check that SSE clients leave no listener behind.
 */
import { MemoryStore } from '../../helpers/memory-store.js';
import { FileKeeper } from '../../../src/files/FileKeeper.js';
import type { Files } from '../../../src/core/fileTypes.js';
import { UserError } from '../../../src/core/errors.js';
import type { ChannelHost, GatewayApi, PlatformChange, PlatformEvent } from '../../../src/core/ports.js';
import type { AroundPage, GatewayEvent, GroupDetail, GroupSummary, GroupView, RegenerateResult, SearchPage, StopResult, TranscriptPage } from '../../../src/core/readModels.js';
import type { PromptContext } from '../../../src/core/groups/promptContextView.js';
import type { AgentDef, ChannelKind, ChatRef, GroupConfig, InboundMessage, ReceiveResult, TranscriptEntry } from '../../../src/core/types.js';
import { silentLogger } from '../../helpers/logger.js';
import { LINK_CODE_TTL_MS, type ChatAddress } from '../../../src/core/roomTypes.js';

export const DEFAULT_GROUP_CONFIG: GroupConfig = {
  reply_strategy: 'hybrid',
  max_agent_turns_per_message: 3,
  max_depth: 2,
  cooldown_seconds: 2,
  agent_reply_timeout_seconds: 30,
  voluntary_timeout_seconds: 15,
  max_voluntary_responders: 2,
  sticky: false,
  last_speaker: null,
  execution: 'sequential',
  voluntary_execution: 'sequential',
  history_turns: 40,
  budget: { daily_usd: null, daily_tokens: null },
  max_tool_steps: 8,
  tool_timeout_seconds: 30,
  tool_approval_timeout_seconds: 300,
  show_tools: 'compact',
};

export function agent(id: string, name: string, extra: Partial<AgentDef> = {}): AgentDef {
  return { id, name, persona: `You are ${name}.`, model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5, ...extra };
}

export const TEST_AGENTS: AgentDef[] = [
  agent('analyst', 'Analyst', { avatar: '📈', color: '#2563eb', aliases: ['numbers'], telegram: { token: '123:SECRET-TOKEN' } }),
  agent('writer', 'Writer', { avatar: '✍️', color: '#16a34a', aliases: ['words'] }),
  agent('critic', 'Critic', { avatar: '🧐', color: '#dc2626', aliases: ['review'] }),
];

interface FakeGroup {
  view: GroupView;
  transcript: TranscriptEntry[];
  nextSeq: number;
  seen: Set<string>;
  sticky: string | null;
}

export class FakeGateway implements GatewayApi, ChannelHost {
  scriptedProvider = false;
  readonly received: InboundMessage[] = [];
  readonly logger = silentLogger;
  /** Files the web channel keeps, in memory with the real checks (src/files/FileKeeper.ts). */
  readonly fileStore = new MemoryStore();
  readonly files: Files = new FileKeeper(this.fileStore);
  private readonly groups = new Map<string, FakeGroup>();
  private readonly listeners = new Set<(ev: GatewayEvent) => void>();
  /** Called after a human message is recorded (tests script agent replies here). */
  onHuman: ((groupId: string, entry: TranscriptEntry) => void) | null = null;
  /** Force the next receive() to answer this. */
  nextResult: ReceiveResult | null = null;

  constructor(private readonly agentDefs: AgentDef[] = TEST_AGENTS) {}

  get gateway(): GatewayApi {
    return this;
  }

  get subscriberCount(): number {
    return this.listeners.size;
  }

  // ---- GatewayApi

  listAgents(): readonly AgentDef[] {
    return this.agentDefs;
  }

  listGroups(): GroupSummary[] {
    return [...this.groups.values()].map((g) => this.summary(g));
  }

  getGroup(id: string): GroupDetail | undefined {
    const g = this.groups.get(id);
    if (!g) return undefined;
    return {
      ...this.summary(g),
      members: g.view.participants.map((agentId) => ({ agentId, muted: false, cooldownLeftMs: 0, lastSpokeAt: null })),
      warnings: [],
      usage: {},
    };
  }

  async createGroup(input: { title: string; participants: string[]; id?: string | undefined }): Promise<GroupView> {
    for (const p of input.participants) this.requireAgent(p);
    const id = input.id ?? input.title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') ?? 'room';
    if (this.groups.has(id)) throw new UserError(`a group "${id}" already exists`, 'group_exists', 409);
    return this.addGroup({ id, title: input.title, channel: 'web', chatId: id, participants: input.participants });
  }

  /** Test setup: add a group on any channel without events. */
  addGroup(v: { id: string; title: string; channel: ChannelKind; chatId: string; participants: string[] }): GroupView {
    const view: GroupView = { ...v, config: { ...DEFAULT_GROUP_CONFIG }, archived: false, createdAt: Date.now() };
    this.groups.set(v.id, { view, transcript: [], nextSeq: 1, seen: new Set(), sticky: null });
    this.emit({ type: 'group', groupId: v.id, action: 'created' });
    return view;
  }

  async dissolveGroup(id: string): Promise<void> {
    const g = this.require(id);
    g.view = { ...g.view, archived: true };
    this.emit({ type: 'group', groupId: id, action: 'dissolved' });
  }

  async updateConfig(id: string, patch: Record<string, unknown>): Promise<GroupConfig> {
    const g = this.require(id);
    const next: Record<string, unknown> = { ...g.view.config };
    for (const [k, v] of Object.entries(patch)) {
      if (!(k in DEFAULT_GROUP_CONFIG)) throw new UserError(`unknown config key "${k}"`, 'invalid_config', 400);
      if (k === 'reply_strategy' && !['hybrid', 'mention_only', 'round_robin', 'selector'].includes(String(v))) {
        throw new UserError('reply_strategy: must be one of hybrid, mention_only, round_robin, selector', 'invalid_config', 400);
      }
      if (typeof (DEFAULT_GROUP_CONFIG as unknown as Record<string, unknown>)[k] === 'number' && (typeof v !== 'number' || v < 0)) {
        throw new UserError(`${k}: must be a number >= 0`, 'invalid_config', 400);
      }
      next[k] = v;
    }
    g.view = { ...g.view, config: next as unknown as GroupConfig };
    this.emit({ type: 'config', groupId: id, config: g.view.config });
    return g.view.config;
  }

  async addMember(id: string, agentId: string): Promise<GroupView> {
    const g = this.require(id);
    this.requireAgent(agentId);
    if (g.view.participants.includes(agentId)) throw new UserError(`${agentId} is already in the group`, 'already_member', 409);
    g.view = { ...g.view, participants: [...g.view.participants, agentId] };
    this.emit({ type: 'member', groupId: id, participants: g.view.participants, added: agentId });
    return g.view;
  }

  async removeMember(id: string, agentId: string): Promise<GroupView> {
    const g = this.require(id);
    if (!g.view.participants.includes(agentId)) throw new UserError(`${agentId} is not in the group`, 'not_member', 404);
    g.view = { ...g.view, participants: g.view.participants.filter((p) => p !== agentId) };
    this.emit({ type: 'member', groupId: id, participants: g.view.participants, removed: agentId });
    return g.view;
  }

  readiness() {
    return { ready: true, store: { ok: true, writable: true, error: null }, channels: { web: { ok: true } } };
  }

  async messages(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    const g = this.require(id);
    const older = opts.before === undefined ? g.transcript : g.transcript.filter((e) => e.seq < opts.before!);
    return older.slice(Math.max(0, older.length - opts.limit));
  }

  async messagePage(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage> {
    const page = await this.messages(id, { ...opts, limit: opts.limit + 1 });
    const hasMore = page.length > opts.limit;
    return { entries: hasMore ? page.slice(1) : page, hasMore };
  }

  // What this fake does not model: the web tests that need these run against the real app.
  regenerate(): Promise<RegenerateResult> {
    return Promise.reject(new UserError('FakeGateway does not regenerate replies', 'bad_request', 400));
  }
  stopGroup(): Promise<StopResult> {
    return Promise.reject(new UserError('FakeGateway does not stop rounds', 'bad_request', 400));
  }
  decideTool(): Promise<never> {
    return Promise.reject(new UserError('FakeGateway has no tool calls', 'unknown_call', 404));
  }
  search(): Promise<SearchPage> {
    return Promise.reject(new UserError('FakeGateway does not search', 'bad_request', 400));
  }
  messagesAround(): Promise<AroundPage> {
    return Promise.reject(new UserError('FakeGateway does not load pages around a message', 'bad_request', 400));
  }
  promptContext(): Promise<PromptContext> {
    return Promise.reject(new UserError('FakeGateway does not keep prompts', 'bad_request', 400));
  }
  editMessage(): Promise<TranscriptEntry> {
    return Promise.reject(new UserError('FakeGateway does not edit messages', 'bad_request', 400));
  }
  deleteMessage(): Promise<TranscriptEntry> {
    return Promise.reject(new UserError('FakeGateway does not delete messages', 'bad_request', 400));
  }
  react(): Promise<TranscriptEntry> {
    return Promise.reject(new UserError('FakeGateway does not keep reactions', 'bad_request', 400));
  }

  subscribe(listener: (ev: GatewayEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- ChannelHost

  handle(ev: { kind: 'message'; message: InboundMessage }): Promise<ReceiveResult>;
  handle(ev: PlatformChange): Promise<void>;
  /** Messages are recorded like the router does; other platform changes are not used on the web. */
  async handle(ev: PlatformEvent): Promise<ReceiveResult | void> {
    if (ev.kind === 'message') return this.receive(ev.message);
  }

  private receive(msg: InboundMessage): ReceiveResult {
    this.received.push(msg);
    if (this.nextResult) {
      const r = this.nextResult;
      this.nextResult = null;
      return r;
    }
    // Like the core: a group is found by its home chat or any chat linked to its room.
    const here = (x: FakeGroup) => (x.view.channel === msg.channel && x.view.chatId === msg.chatId) || (x.view.links ?? []).some((l) => l.channel === msg.channel && l.chatId === msg.chatId);
    const g = [...this.groups.values()].find((x) => here(x) && !x.view.archived);
    if (!g) return { status: 'no_group', reason: 'no group here' };
    if (g.seen.has(msg.messageId)) return { status: 'duplicate', groupId: g.view.id };
    g.seen.add(msg.messageId);
    // Like the router: a message with neither words nor files is refused, files are recorded with it.
    if (!msg.text.trim() && !msg.attachments?.length) return { status: 'rejected', code: 'empty', reason: 'Empty messages are ignored.' };
    const human = this.append(g.view.id, {
      kind: 'human',
      authorId: msg.author.id,
      authorName: msg.author.name,
      text: msg.text,
      platformMessageId: msg.messageId,
      ...(msg.attachments?.length ? { attachments: msg.attachments } : {}),
    });
    if (msg.text.startsWith('/')) {
      this.append(g.view.id, { kind: 'system', authorId: 'system', authorName: 'Chorus', text: `command ${msg.text.split(/\s/)[0]} done` });
      return { status: 'command', groupId: g.view.id, entryId: human.id };
    }
    this.onHuman?.(g.view.id, human);
    return { status: 'recorded', groupId: g.view.id, entryId: human.id };
  }

  agents(): readonly AgentDef[] {
    return this.agentDefs;
  }

  findGroup(channel: ChannelKind, chatId: string): GroupView | undefined {
    return [...this.groups.values()].find((g) => g.view.channel === channel && g.view.chatId === chatId)?.view;
  }

  readonly handles = new Map<string, string>();
  registerHandle(handle: string, agentId: string): void {
    this.handles.set(handle.toLowerCase(), agentId);
  }
  /** Link codes made and not used yet (code → group); `linkCalls` records who asked what. */
  readonly linkCodes = new Map<string, { groupId: string; until: number }>();
  readonly linkCalls: Array<{ method: 'linkCode' | 'linkWeb' | 'unlinkChat'; groupId?: string; code?: string; chat?: ChatAddress; by: string }> = [];
  private codeCount = 0;

  /** Like GroupAdmin: 404 unknown group, 409 dissolved; a fresh code valid ten minutes. */
  async linkCode(groupId: string, by: string): Promise<{ code: string; until: number }> {
    const g = this.require(groupId);
    this.linkCalls.push({ method: 'linkCode', groupId, by });
    if (g.view.archived) throw new UserError(`group "${groupId}" is dissolved`, 'archived', 409);
    const code = `LINK-${String(++this.codeCount).padStart(4, '0')}`;
    const until = Date.now() + LINK_CODE_TTL_MS;
    this.linkCodes.set(code, { groupId, until });
    return { code, until };
  }

  /** The web joins the room of a code (used once); 404 `unknown_code` otherwise. */
  async linkWeb(code: string, by: string): Promise<GroupView> {
    this.linkCalls.push({ method: 'linkWeb', code, by });
    const made = this.linkCodes.get(code.toUpperCase());
    if (!made || made.until < Date.now()) throw new UserError('no such link code (never made, used, or expired): ask for a new one with /group link', 'unknown_code', 404);
    this.linkCodes.delete(code.toUpperCase());
    return this.link(made.groupId, { channel: 'web', chatId: made.groupId });
  }

  async unlinkChat(groupId: string, chat: ChatAddress, by: string): Promise<GroupView> {
    const g = this.require(groupId);
    this.linkCalls.push({ method: 'unlinkChat', groupId, chat, by });
    const links = g.view.links ?? [];
    if (!links.some((l) => l.channel === chat.channel && l.chatId === chat.chatId)) {
      throw new UserError(`${chat.channel}:${chat.chatId} is not linked to "${groupId}"`, 'not_linked', 404);
    }
    const left = links.filter((l) => !(l.channel === chat.channel && l.chatId === chat.chatId));
    g.view = { ...g.view, links: left.length > 0 ? left : undefined };
    this.emit({ type: 'group', groupId, action: 'updated' });
    return g.view;
  }

  /** Test setup (and linkWeb): another chat joins the group's room; announced as `group updated`. */
  link(groupId: string, chat: ChatAddress & { title?: string }): GroupView {
    const g = this.require(groupId);
    const links = (g.view.links ?? []).filter((l) => !(l.channel === chat.channel && l.chatId === chat.chatId));
    g.view = { ...g.view, links: [...links, { channel: chat.channel, chatId: chat.chatId, title: chat.title, at: Date.now() }] };
    this.emit({ type: 'group', groupId, action: 'updated' });
    return g.view;
  }
  agentForPostedMessage(): string | undefined {
    return undefined;
  }

  // ---- helpers for tests

  /** Record an entry and emit it as a live event. */
  append(groupId: string, e: Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> & { ts?: number }): TranscriptEntry {
    const entry = this.record(groupId, e);
    this.emitEntry(groupId, entry);
    return entry;
  }

  /** Record without emitting (the router may emit only after a durable write). */
  record(groupId: string, e: Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> & { ts?: number }): TranscriptEntry {
    const g = this.require(groupId);
    const seq = g.nextSeq++;
    const entry: TranscriptEntry = { ts: Date.now(), ...e, id: `${groupId}.${seq}`, seq };
    g.transcript.push(entry);
    return entry;
  }

  emitEntry(groupId: string, entry: TranscriptEntry): void {
    this.emit({ type: entry.kind === 'decision' ? 'decision' : 'message', groupId, entry } as GatewayEvent);
  }

  /** The sticky agent of a group (the router tracks the last agent addressed). */
  setSticky(groupId: string, agentId: string | null): void {
    this.require(groupId).sticky = agentId;
  }

  emit(ev: GatewayEvent): void {
    for (const l of [...this.listeners]) l(ev);
  }

  private summary(g: FakeGroup): GroupSummary {
    const last = g.transcript.filter((e) => e.kind !== 'decision').at(-1);
    return {
      ...g.view,
      messageCount: g.transcript.length,
      lastMessage: last ? { authorName: last.authorName, text: last.text, ts: last.ts } : null,
      sticky: g.sticky,
      muted: [],
    };
  }

  private require(id: string): FakeGroup {
    const g = this.groups.get(id);
    if (!g) throw new UserError(`no group "${id}"`, 'unknown_group', 404);
    return g;
  }

  private requireAgent(id: string): void {
    if (!this.agentDefs.some((a) => a.id === id)) {
      throw new UserError(`unknown agent "${id}" (known: ${this.agentDefs.map((a) => a.id).join(', ')})`, 'unknown_agent', 400);
    }
  }
}

export type { ChatRef };
