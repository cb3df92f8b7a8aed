/**
 * The GroupRouter: the channel-agnostic heart of Chorus. Channels hand it inbound messages; it
 * dedupes, records durably, and runs rounds on a per-group FIFO queue (SPEC §4). It is also the
 * ChannelHost adapters talk to and the GatewayApi the web feed uses.
 */
import PQueue from 'p-queue';
import type {
  Channel,
  ChannelHost,
  Clock,
  GatewayApi,
  GatewayEvent,
  GroupDetail,
  GroupDoc,
  GroupSummary,
  GroupView,
  LlmProvider,
  Logger,
  RoundRecord,
  Store,
} from '../ports.js';
import type { AgentDef, ChannelKind, ChatRef, GroupConfig, InboundMessage, ReceiveResult, TranscriptEntry } from '../types.js';
import { describeError } from '../errors.js';
import { EventHub } from '../events.js';
import { Metrics } from '../metrics.js';
import { GroupManager } from '../groups/GroupManager.js';
import { HandleIndex, findMentions } from './mentions.js';
import { LlmGate } from './LlmGate.js';
import { RoundRunner } from './RoundRunner.js';
import { handleCommand, parseCommand } from '../commands/commands.js';
import { RateLimiter } from './RateLimiter.js';
import { Outbox } from './Outbox.js';
import { GroupAdmin } from '../groups/GroupAdmin.js';

/** Validates a partial group config; returns readable problems (one per key) or the clean patch. */
export type ConfigValidator = (patch: Record<string, unknown>) => { ok: true; value: Partial<GroupConfig> } | { ok: false; problems: string[] };

/** Everything the router needs; built by the composition root (src/app.ts). */
export interface RouterOptions {
  agents: AgentDef[];
  aliases: Record<string, string[]>;
  groupDefaults: GroupConfig;
  limits: { user_messages_per_minute: number; max_message_chars: number };
  llm: LlmProvider;
  llmSettings: { model: string; summaryModel: string; maxTokens: number; maxConcurrency: number };
  validateConfig: ConfigValidator;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Groups from the config file, created on first start. */
  declaredGroups?: Array<{ channel: ChannelKind; chatId: string; title?: string | undefined; participants: string[]; config?: Partial<GroupConfig> | undefined }>;
  scripted?: boolean;
}

/** Dedupe memory for chats that have no group yet (commands sent to several bots). */
const CHATLESS_SEEN = 2000;

export class GroupRouter implements ChannelHost, GatewayApi {
  readonly events: EventHub;
  readonly metrics = new Metrics();
  readonly groups: GroupManager;
  readonly handles: HandleIndex;
  readonly agentMap: ReadonlyMap<string, AgentDef>;
  readonly scriptedProvider: boolean;
  private readonly channels = new Map<ChannelKind, Channel>();
  private readonly queues = new Map<string, PQueue>();
  private readonly chatlessSeen = new Set<string>();
  readonly outbox: Outbox;
  private readonly admin: GroupAdmin;
  private readonly shutdownController = new AbortController();
  private readonly gate: LlmGate;
  private readonly runner: RoundRunner;
  private readonly rate: RateLimiter;
  private started = false;
  private resumed = false;
  readonly logger: Logger;

  constructor(readonly opts: RouterOptions) {
    this.logger = opts.logger;
    this.events = new EventHub(opts.logger);
    this.agentMap = new Map(opts.agents.map((a) => [a.id, a]));
    this.handles = new HandleIndex(opts.agents, opts.aliases);
    this.scriptedProvider = opts.scripted ?? false;
    this.groups = new GroupManager(opts.store, this.agentMap, opts.groupDefaults, () => opts.clock.now(), opts.logger);
    this.outbox = new Outbox(this.groups, this.channels, this.agentMap, this.events, opts.logger);
    this.admin = new GroupAdmin({
      groups: this.groups,
      agentMap: this.agentMap,
      events: this.events,
      outbox: this.outbox,
      channels: this.channels,
      validateConfig: opts.validateConfig,
      clock: opts.clock,
      logger: opts.logger,
    });
    this.gate = new LlmGate(opts.llm, opts.llmSettings.maxConcurrency, opts.clock, this.metrics, this.shutdownController.signal);
    this.rate = new RateLimiter(opts.limits.user_messages_per_minute, 60_000);
    this.runner = new RoundRunner({
      groups: this.groups,
      agents: this.agentMap,
      handles: this.handles,
      gate: this.gate,
      clock: opts.clock,
      events: this.events,
      metrics: this.metrics,
      logger: opts.logger,
      models: opts.llmSettings,
      shutdown: this.shutdownController.signal,
      post: (g, e, replyTo) => this.outbox.postEntry(g, e, replyTo),
      notice: (g, text, o) => this.outbox.notice(g, text, o),
      typing: (g, a, active) => this.outbox.setTyping(g, a, active),
    });
    this.metrics.gauge('chorus_queue_depth', 'Rounds waiting or running across groups', () => this.groups.all().reduce((n, g) => n + g.rounds.length, 0));
    this.metrics.gauge('chorus_llm_in_flight', 'LLM calls waiting or in flight', () => this.gate.depth);
    this.metrics.gauge('chorus_groups', 'Live groups', () => this.groups.all().filter((g) => !g.state.archived).length);
  }

  get gateway(): GatewayApi {
    return this;
  }

  /** Register a channel before `start`. */
  addChannel(channel: Channel): void {
    this.channels.set(channel.kind, channel);
  }

  channel(kind: ChannelKind): Channel | undefined {
    return this.channels.get(kind);
  }

  /**
   * Load state, create declared groups, resume unfinished rounds and deliveries. With
   * `resume: false` the resuming waits for `resume()`: the app calls it once the channels are up,
   * so replies left undelivered by a crash are not handed to a channel whose bots cannot post yet.
   */
  async start(opts: { resume?: boolean } = {}): Promise<void> {
    if (this.started) return;
    this.started = true;
    const { groups, sessions } = await this.opts.store.loadAll();
    this.groups.load(groups, sessions);
    for (const g of this.groups.all()) for (const e of g.transcript) this.outbox.indexPosted(g, e);
    for (const d of this.opts.declaredGroups ?? []) {
      if (this.groups.find(d.channel, d.chatId)) continue;
      const g = this.groups.create({ channel: d.channel, chatId: d.chatId, title: d.title ?? d.chatId, participants: d.participants, config: d.config, id: d.channel === 'web' ? d.chatId : undefined });
      await this.admin.persistNew(g);
    }
    if (opts.resume !== false) this.resume();
  }

  /** Post replies a crash left undelivered and finish recorded rounds (once per start). */
  resume(): void {
    if (this.resumed) return;
    this.resumed = true;
    for (const g of this.groups.all()) {
      if (g.state.archived) continue;
      const pending = g.transcript.filter((e) => e.delivery === 'pending');
      if (pending.length > 0 || g.rounds.length > 0) {
        this.logger.info({ group: g.id, rounds: g.rounds.length, undelivered: pending.length }, 'resuming unfinished work');
        this.queue(g.id).add(async () => {
          for (const e of pending) await this.outbox.postEntry(g, e, undefined);
        });
        this.schedule(g);
      }
    }
  }

  /** Stop taking work, cancel model calls (their turns stay queued on disk), flush writes. */
  async stop(): Promise<void> {
    this.shutdownController.abort();
    this.outbox.stopAllTyping();
    await Promise.all([...this.queues.values()].map((q) => q.onIdle()));
    await this.opts.store.flush();
  }

  /** Wait until every group's queue is empty (tests, benchmarks). */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.queues.values()].filter((q) => q.size > 0 || q.pending > 0);
      if (busy.length === 0) return;
      await Promise.all(busy.map((q) => q.onIdle()));
    }
  }

  // -------------------------------------------------------------------------------------------
  // Inbound

  async receive(msg: InboundMessage): Promise<ReceiveResult> {
    if (this.shutdownController.signal.aborted) return { status: 'rejected', code: 'shutting_down', reason: 'shutting down' };
    const dm = msg.isPrivate && msg.viaAgentId && this.agentMap.has(msg.viaAgentId) ? msg.viaAgentId : undefined;
    let g = this.groups.find(msg.channel, msg.chatId, dm);
    const command = parseCommand(msg.text);
    // A copy of a command handled before its chat had a group (e.g. the /group create that made
    // it) is a duplicate even if the group exists by now.
    const chatlessKey = `${msg.channel}:${msg.chatId}:${msg.messageId}`;
    if (this.chatlessSeen.has(chatlessKey)) return { status: 'duplicate', groupId: g?.id };
    if (!g) {
      if (command) {
        rememberBounded(this.chatlessSeen, chatlessKey, CHATLESS_SEEN);
        await handleCommand(this, msg, command, undefined);
        return { status: 'command' };
      }
      if (!dm) return { status: 'no_group', reason: 'this chat has no group; use /group create' };
      const agent = this.agentMap.get(dm)!;
      g = this.groups.create({ channel: msg.channel, chatId: msg.chatId, dmAgentId: dm, title: `${agent.name} · ${msg.author.name}`, participants: [dm] });
      await this.admin.persistNew(g);
      this.events.emit({ type: 'group', groupId: g.id, action: 'created' });
    }
    if (!this.groups.markSeen(g, msg.messageId)) {
      // Another copy (a second Telegram bot, a redelivery) may still be writing the original: the
      // channel confirms this copy as soon as we return, so make the original durable first.
      await this.groups.save(g);
      return { status: 'duplicate', groupId: g.id };
    }
    if (command) {
      const entry = this.groups.append(g, this.humanEntry(msg, true));
      await this.groups.save(g);
      this.events.emit({ type: 'message', groupId: g.id, entry });
      await handleCommand(this, msg, command, g);
      return { status: 'command', groupId: g.id, entryId: entry.id };
    }
    const refusal = this.checkLimits(g, msg);
    if (refusal) {
      await this.groups.save(g);
      void this.outbox.notice(g, refusal.text, { decision: 'cap' }).catch(() => undefined);
      return { status: 'rejected', groupId: g.id, code: refusal.code, reason: refusal.text };
    }
    const entry = this.groups.append(g, this.humanEntry(msg, false));
    const addressed = this.addressedBy(g, msg);
    if (addressed.length > 0) g.state.sticky = addressed.at(-1)!;
    this.addRound(g, [entry.id], addressed, false);
    await this.groups.save(g); // durable before the channel acknowledges (SPEC §4 step 2)
    this.metrics.inc('chorus_messages_total', { channel: msg.channel });
    this.events.emit({ type: 'message', groupId: g.id, entry });
    this.schedule(g);
    return { status: 'recorded', groupId: g.id, entryId: entry.id };
  }

  /** `/ask`: record the optional text and force these agents to answer. */
  async ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string | null): Promise<void> {
    const triggers: string[] = [];
    if (text) {
      const entry = this.groups.append(g, { ...this.humanEntry(msg, false), text });
      triggers.push(entry.id);
      this.events.emit({ type: 'message', groupId: g.id, entry });
    }
    this.addRound(g, triggers, agentIds, true);
    await this.groups.save(g);
    this.schedule(g);
  }

  private addRound(g: GroupDoc, triggerIds: string[], addressed: string[], forced: boolean): RoundRecord {
    const round: RoundRecord = { id: `r${g.nextSeq}`, createdAt: this.opts.clock.now(), triggerIds, addressed, forced, planned: false, queue: [], asked: [], capped: 0, voluntary: 0 };
    g.rounds.push(round);
    return round;
  }

  private humanEntry(msg: InboundMessage, command: boolean): Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> {
    return {
      kind: 'human',
      authorId: `${msg.channel}:${msg.author.id}`,
      authorName: msg.author.name,
      text: msg.text,
      platformMessageId: msg.messageId,
      threadId: msg.threadId,
      hiddenFromAgents: command || undefined,
    };
  }

  /** SPEC §4 step 3: text handles, platform mentions, reply-to, in order of appearance. */
  private addressedBy(g: GroupDoc, msg: InboundMessage): string[] {
    const out = findMentions(msg.text, this.handles, g.participants);
    for (const id of msg.mentionedAgentIds ?? []) if (g.participants.includes(id) && !out.includes(id)) out.push(id);
    if (msg.replyToAgentId && g.participants.includes(msg.replyToAgentId) && !out.includes(msg.replyToAgentId)) out.push(msg.replyToAgentId);
    return out;
  }

  private checkLimits(g: GroupDoc, msg: InboundMessage): { code: 'too_long' | 'empty' | 'rate_limited'; text: string } | null {
    const max = this.opts.limits.max_message_chars;
    if (msg.text.length > max) {
      return { code: 'too_long', text: `⚠ ${msg.author.name}, that message is too long (${msg.text.length} characters; the limit is ${max}). Nothing was sent to the agents.` };
    }
    if (!msg.text.trim()) return { code: 'empty', text: '⚠ Empty messages are ignored.' };
    if (!this.rate.allow(`${g.id}:${msg.channel}:${msg.author.id}`, this.opts.clock.now())) {
      return { code: 'rate_limited', text: `⚠ ${msg.author.name}, you are sending messages faster than ${this.opts.limits.user_messages_per_minute} a minute; please wait a moment.` };
    }
    return null;
  }

  private queue(groupId: string): PQueue {
    let q = this.queues.get(groupId);
    if (!q) this.queues.set(groupId, (q = new PQueue({ concurrency: 1 })));
    return q;
  }

  /** Make sure one drain task is waiting in the group's queue. */
  private schedule(g: GroupDoc): void {
    const q = this.queue(g.id);
    if (q.size === 0) void q.add(() => this.drain(g)).catch((err) => this.logger.error({ group: g.id, err: describeError(err) }, 'round failed'));
  }

  /** Run the group's recorded rounds in order; waiting rounds are answered as one batch (§4.7). */
  private async drain(g: GroupDoc): Promise<void> {
    while (g.rounds.length > 0 && !this.shutdownController.signal.aborted && !g.state.archived) {
      const round = g.rounds[0]!;
      if (!round.planned) {
        const waiting = g.rounds.filter((r) => !r.planned);
        if (waiting.length > 1) {
          for (const r of waiting.slice(1)) {
            round.triggerIds.push(...r.triggerIds);
            for (const a of r.addressed) if (!round.addressed.includes(a)) round.addressed.push(a);
            round.forced ||= r.forced;
          }
          g.rounds = g.rounds.filter((r) => r === round || r.planned);
          this.logger.info({ group: g.id, messages: waiting.length }, 'answering waiting messages as one batch');
        }
      }
      await this.runner.run(g, round);
      if (g.rounds.includes(round)) break; // interrupted by shutdown
    }
  }

  // -------------------------------------------------------------------------------------------
  // Outbound

  // -------------------------------------------------------------------------------------------
  // ChannelHost

  agents(): readonly AgentDef[] {
    return this.opts.agents;
  }

  findGroup(channel: ChannelKind, chatId: string): GroupView | undefined {
    const g = this.groups.find(channel, chatId);
    return g ? this.groups.view(g) : undefined;
  }

  registerHandle(handle: string, agentId: string): void {
    if (this.agentMap.has(agentId)) this.handles.addHandle(handle, agentId);
  }

  agentForPostedMessage(channel: ChannelKind, chatId: string, platformMessageId: string): string | undefined {
    return this.outbox.agentFor(channel, chatId, platformMessageId);
  }

  // -------------------------------------------------------------------------------------------
  // Group management (GatewayApi and ChannelHost), implemented by GroupAdmin

  membershipChanged(chat: ChatRef, change: { joined?: string[]; left?: string[]; title?: string | undefined; autoCreate: boolean }): Promise<void> {
    return this.admin.membershipChanged(chat, change);
  }
  rekeyChat(channel: ChannelKind, oldChatId: string, newChatId: string): Promise<void> {
    return this.admin.rekeyChat(channel, oldChatId, newChatId);
  }
  greeting(g: GroupDoc): string {
    return this.admin.greeting(g);
  }
  listAgents(): readonly AgentDef[] {
    return this.opts.agents;
  }
  listGroups(): GroupSummary[] {
    return this.admin.listGroups();
  }
  getGroup(id: string): GroupDetail | undefined {
    return this.admin.getGroup(id);
  }
  createGroup(input: { title: string; participants: string[]; id?: string | undefined }): Promise<GroupView> {
    return this.admin.createGroup(input);
  }
  createGroupInChat(msg: InboundMessage, participants: string[]): Promise<GroupDoc> {
    return this.admin.createGroupInChat(msg, participants);
  }
  dissolveGroup(id: string): Promise<void> {
    return this.admin.dissolveGroup(id);
  }
  updateConfig(id: string, patch: Record<string, unknown>): Promise<GroupConfig> {
    return this.admin.updateConfig(id, patch);
  }
  addMember(id: string, agentId: string): Promise<GroupView> {
    return this.admin.addMember(id, agentId);
  }
  removeMember(id: string, agentId: string, opts: { allowEmpty?: boolean } = {}): Promise<GroupView> {
    return this.admin.removeMember(id, agentId, opts);
  }
  messages(id: string, opts: { before?: number | undefined; limit: number }): TranscriptEntry[] {
    return this.admin.messages(id, opts);
  }

  subscribe(listener: (ev: GatewayEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  /** Agents that act as handles of `agentId`, for help texts. */
  handlesOf(agentId: string): string[] {
    return this.handles.handlesOf(agentId);
  }

  get now(): number {
    return this.opts.clock.now();
  }
}

function rememberBounded(set: Set<string>, key: string, max: number): void {
  set.add(key);
  if (set.size > max) set.delete(set.values().next().value!);
}

