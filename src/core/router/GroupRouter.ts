/**
 * The GroupRouter: the inbox and the per-group queues of Chorus. Channels hand it inbound messages;
 * it dedupes them, records them through the Recorder (durable before the channel may acknowledge)
 * and runs rounds on a per-group FIFO queue (SPEC §4). Group management and the web feed's API
 * live in GroupAdmin (`router.gateway`); commands get a narrow CommandContext.
 */
import PQueue from 'p-queue';
import type { Channel, ChannelHost, Clock, GatewayApi, GroupDoc, GroupView, LlmProvider, Logger, RoundRecord, Store } from '../ports.js';
import type { AgentDef, ChannelKind, ChatRef, GroupConfig, InboundMessage, ReceiveResult } from '../types.js';
import { StoreUnavailableError, describeError } from '../errors.js';
import { EventHub } from '../events.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { GroupManager } from '../groups/GroupManager.js';
import { HandleIndex, findMentions } from './mentions.js';
import { LlmGate, type GateSettings } from './LlmGate.js';
import { RoundRunner } from './RoundRunner.js';
import { handleCommand, parseCommand, type CommandContext } from '../commands/commands.js';
import { RateLimiter } from './RateLimiter.js';
import { Outbox } from './Outbox.js';
import { Recorder, type NewEntry } from './Recorder.js';
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
  /** Model settings; the per-group/per-agent shares and the reply limit default to none / 32 KiB (see LlmGate). */
  llmSettings: { model: string; summaryModel: string; maxTokens: number } & GateSettings;
  validateConfig: ConfigValidator;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Groups from the config file, created on first start. */
  declaredGroups?: Array<{ channel: ChannelKind; chatId: string; title?: string | undefined; participants: string[]; config?: Partial<GroupConfig> | undefined }>;
  scripted?: boolean;
  /** Records between checkpoints of a group (tests make it small to crash around checkpoints). */
  checkpointEvery?: number | undefined;
  /** Where counts and timings go (`/metrics`); nothing is reported without it. */
  metrics?: Metrics | undefined;
}

/** Dedupe memory for chats that have no group yet (commands sent to several bots). */
const CHATLESS_SEEN = 2000;
/** First wait before reloading a group after a failed write; doubles up to RECOVER_MAX_MS. */
const RECOVER_FIRST_MS = 500;
const RECOVER_MAX_MS = 30_000;

const UNAVAILABLE: ReceiveResult = { status: 'rejected', code: 'unavailable', reason: 'storage is unavailable; nothing was recorded, try again shortly' };

export class GroupRouter implements ChannelHost {
  readonly events: EventHub;
  readonly metrics: Metrics;
  readonly groups: GroupManager;
  readonly handles: HandleIndex;
  readonly agentMap: ReadonlyMap<string, AgentDef>;
  readonly outbox: Outbox;
  readonly recorder: Recorder;
  /** Group management and live events for user interfaces (the web feed's API). */
  readonly gateway: GroupAdmin;
  readonly logger: Logger;
  private readonly channels = new Map<ChannelKind, Channel>();
  private readonly queues = new Map<string, PQueue>();
  private readonly chatlessSeen = new Set<string>();
  private readonly recovering = new Set<string>();
  private readonly shutdownController = new AbortController();
  private readonly gate: LlmGate;
  private readonly runner: RoundRunner;
  private readonly rate: RateLimiter;
  private readonly commands: CommandContext;
  private started = false;
  private resumed = false;

  constructor(readonly opts: RouterOptions) {
    this.logger = opts.logger;
    this.metrics = opts.metrics ?? noMetrics;
    this.events = new EventHub(opts.logger);
    this.agentMap = new Map(opts.agents.map((a) => [a.id, a]));
    this.handles = new HandleIndex(opts.agents, opts.aliases);
    this.groups = new GroupManager(opts.store, this.agentMap, opts.groupDefaults, () => opts.clock.now(), opts.logger, opts.checkpointEvery);
    this.groups.onBroken = (g) => this.recover(g.id);
    this.outbox = new Outbox(this.channels, this.agentMap, this.events, opts.logger);
    this.recorder = new Recorder(this.groups, this.events, this.outbox);
    this.gateway = new GroupAdmin({
      groups: this.groups,
      agents: opts.agents,
      agentMap: this.agentMap,
      events: this.events,
      outbox: this.outbox,
      recorder: this.recorder,
      channels: this.channels,
      validateConfig: opts.validateConfig,
      clock: opts.clock,
      logger: opts.logger,
      scriptedProvider: opts.scripted ?? false,
      store: opts.store,
    });
    this.gate = new LlmGate(opts.llm, opts.llmSettings, opts.clock, this.metrics, this.shutdownController.signal, opts.logger);
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
      recorder: this.recorder,
      typing: (g, a, active) => this.outbox.setTyping(g, a, active),
    });
    this.commands = {
      agents: opts.agents,
      agentMap: this.agentMap,
      handles: this.handles,
      admin: this.gateway,
      logger: opts.logger,
      now: () => opts.clock.now(),
      channel: (kind) => this.channels.get(kind),
      ask: (g, msg, ids, text) => this.ask(g, msg, ids, text),
      reply: (msg, g, text) => (g ? this.recorder.notice(g, text, { viaAgentId: msg.viaAgentId, threadId: msg.threadId }).then(() => undefined) : this.outbox.replyInChat(msg, text)),
    };
  }

  /** How busy the router is right now (gauges on `/metrics`, and tests waiting for quiet). */
  load(): { queuedRounds: number; llmCalls: number; groups: number } {
    const all = this.groups.all();
    return {
      queuedRounds: all.reduce((n, g) => n + g.rounds.length, 0),
      llmCalls: this.gate.depth,
      groups: all.filter((g) => !g.state.archived).length,
    };
  }

  /** Register a channel before `start`. */
  addChannel(channel: Channel): void {
    this.channels.set(channel.kind, channel);
  }

  channel(kind: ChannelKind): Channel | undefined {
    return this.channels.get(kind);
  }

  /**
   * Config reload: agents, aliases and group defaults are replaced in place, because the rounds,
   * commands, outbox and channels all hold these same objects; the next round sees the new ones.
   * The caller refuses a reload that removes an agent (groups may still hold it).
   */
  reconfigure(next: { agents: AgentDef[]; aliases: Record<string, string[]>; groupDefaults: GroupConfig; shares?: { perGroup: number; perAgent: number } | undefined }): void {
    this.opts.agents.splice(0, this.opts.agents.length, ...next.agents);
    const map = this.agentMap as Map<string, AgentDef>;
    map.clear();
    for (const a of next.agents) map.set(a.id, a);
    for (const k of Object.keys(this.opts.aliases)) delete this.opts.aliases[k];
    Object.assign(this.opts.aliases, next.aliases);
    // Replaced, not merged: a key the new file leaves out goes back to its default there.
    for (const k of Object.keys(this.opts.groupDefaults)) delete (this.opts.groupDefaults as unknown as Record<string, unknown>)[k];
    Object.assign(this.opts.groupDefaults, next.groupDefaults);
    this.handles.reset(next.agents, next.aliases);
    if (next.shares) this.gate.setShares(next.shares);
  }

  /**
   * Load state, create declared groups, resume unfinished rounds and deliveries. With
   * `resume: false` the resuming waits for `resume()`: the app calls it once the channels are up,
   * so replies left undelivered by a crash are not handed to a channel whose bots cannot post yet.
   */
  async start(opts: { resume?: boolean } = {}): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.groups.load();
    for (const g of this.groups.all()) for (const e of g.transcript) this.outbox.indexPosted(g, e);
    for (const d of this.opts.declaredGroups ?? []) {
      if (this.groups.find(d.channel, d.chatId)) continue;
      const g = this.groups.create({ channel: d.channel, chatId: d.chatId, title: d.title ?? d.chatId, participants: d.participants, config: d.config, id: d.channel === 'web' ? d.chatId : undefined });
      await this.gateway.persistNew(g);
    }
    if (opts.resume !== false) this.resume();
  }

  /** Post entries a crash left undelivered and finish recorded rounds (once per start). */
  resume(): void {
    if (this.resumed) return;
    this.resumed = true;
    for (const g of this.groups.all()) this.resumeGroup(g);
  }

  private resumeGroup(g: GroupDoc): void {
    if (g.state.archived || (g.undelivered.length === 0 && g.rounds.length === 0)) return;
    this.logger.info({ group: g.id, rounds: g.rounds.length, undelivered: g.undelivered.length }, 'resuming unfinished work');
    if (g.undelivered.length > 0) void this.queue(g.id).add(() => this.recorder.redeliver(g));
    this.schedule(g);
  }

  /** Stop taking work, cancel model calls (their turns stay queued on disk), flush writes. */
  async stop(): Promise<void> {
    this.shutdownController.abort();
    this.outbox.stopAllTyping();
    await Promise.all([...this.queues.values()].map((q) => q.onIdle()));
    await this.groups.checkpointAll();
    await this.opts.store.flush();
  }

  /** Wait until every group's queue is empty and its records are written (tests, benchmarks). */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.queues.values()].filter((q) => q.size > 0 || q.pending > 0);
      if (busy.length === 0) {
        await this.groups.settle();
        if ([...this.queues.values()].every((q) => q.size === 0 && q.pending === 0)) return;
        continue;
      }
      await Promise.all(busy.map((q) => q.onIdle()));
    }
  }

  // -------------------------------------------------------------------------------------------
  // Inbound

  async receive(msg: InboundMessage): Promise<ReceiveResult> {
    try {
      return await this.take(msg);
    } catch (err) {
      if (err instanceof StoreUnavailableError) return UNAVAILABLE;
      throw err;
    }
  }

  private async take(msg: InboundMessage): Promise<ReceiveResult> {
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
        await handleCommand(this.commands, msg, command, undefined);
        return { status: 'command' };
      }
      if (!dm) return { status: 'no_group', reason: 'this chat has no group; use /group create' };
      const agent = this.agentMap.get(dm)!;
      g = this.groups.create({ channel: msg.channel, chatId: msg.chatId, dmAgentId: dm, title: `${agent.name} · ${msg.author.name}`, participants: [dm] });
      await this.gateway.persistNew(g);
      this.events.emit({ type: 'group', groupId: g.id, action: 'created' });
    }
    if (!this.groups.usable(g)) return UNAVAILABLE;
    if (this.groups.isSeen(g, msg.messageId)) {
      // Another copy (a second Telegram bot, a redelivery) may still be writing the original: the
      // channel confirms this copy as soon as we return, so the original must be durable first.
      await this.groups.durable(g);
      return { status: 'duplicate', groupId: g.id };
    }
    if (command) {
      const [entry] = await this.recorder.record(g, { entries: [this.humanEntry(msg, true)] });
      await handleCommand(this.commands, msg, command, g);
      return { status: 'command', groupId: g.id, entryId: entry!.id };
    }
    const refusal = this.checkLimits(g, msg);
    if (refusal) {
      await this.recorder.notice(g, refusal.text, { decision: 'cap', seen: msg.messageId });
      return { status: 'rejected', groupId: g.id, code: refusal.code, reason: refusal.text };
    }
    const addressed = this.addressedBy(g, msg);
    if (addressed.length > 0) this.groups.setSticky(g, addressed.at(-1)!);
    // The message and its round are one record: durable before the channel acknowledges (§4.2).
    const round = this.newRound(g, [`${g.id}.${g.nextSeq}`], addressed, false);
    const [entry] = await this.recorder.record(g, { entries: [this.humanEntry(msg, false)], round: { record: round, add: true } });
    this.metrics.messageRecorded(msg.channel);
    this.schedule(g);
    return { status: 'recorded', groupId: g.id, entryId: entry!.id };
  }

  /** `/ask`: record the optional text and force these agents to answer. */
  private async ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string | null): Promise<void> {
    const entries: NewEntry[] = text ? [{ ...this.humanEntry(msg, false), text }] : [];
    const round = this.newRound(g, text ? [`${g.id}.${g.nextSeq}`] : [], agentIds, true);
    await this.recorder.record(g, { entries, round: { record: round, add: true } });
    this.schedule(g);
  }

  /** A round for the entries about to be recorded (ids known in advance: seqs are assigned in order). */
  private newRound(g: GroupDoc, triggerIds: string[], addressed: string[], forced: boolean): RoundRecord {
    return { id: `r${g.nextSeq + triggerIds.length}`, createdAt: this.opts.clock.now(), triggerIds, addressed, forced, planned: false, queue: [], asked: [], capped: 0, voluntary: 0 };
  }

  private humanEntry(msg: InboundMessage, command: boolean): NewEntry {
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
    if (!this.rate.allow(`${g.id}:${msg.channel}:${msg.rateKey ?? msg.author.id}`, this.opts.clock.now())) {
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
    if (q.size === 0) void q.add(() => this.drain(g)).catch((err) => this.roundFailed(g, err));
  }

  private roundFailed(g: GroupDoc, err: unknown): void {
    // A failed write is handled by reloading the group (see recover); anything else is a bug.
    if (err instanceof StoreUnavailableError) this.logger.warn({ group: g.id, err: describeError(err) }, 'round paused: the store refused a write');
    else this.logger.error({ group: g.id, err: describeError(err) }, 'round failed');
  }

  /** Run the group's recorded rounds in order; waiting rounds are answered as one batch (§4.7). */
  private async drain(g: GroupDoc): Promise<void> {
    while (g.rounds.length > 0 && !this.shutdownController.signal.aborted && !g.state.archived && this.groups.usable(g)) {
      const round = g.rounds[0]!;
      if (!round.planned) {
        const waiting = g.rounds.filter((r) => !r.planned);
        if (waiting.length > 1) {
          // Not written on its own: the next record carries the merge, and a restart before it
          // merges the same rounds again.
          for (const r of waiting.slice(1)) {
            round.triggerIds.push(...r.triggerIds);
            for (const a of r.addressed) if (!round.addressed.includes(a)) round.addressed.push(a);
            round.forced ||= r.forced;
            this.groups.finishRound(g, r);
          }
          this.groups.touchRound(g, round);
          this.logger.info({ group: g.id, messages: waiting.length }, 'answering waiting messages as one batch');
        }
      }
      await this.runner.run(g, round);
      if (g.rounds.includes(round)) break; // interrupted by shutdown or a failed write
    }
  }

  /**
   * A write of this group failed: it refuses new work (503) while it is read back from the store,
   * as after a crash, once the store accepts writes again. Then its unfinished work resumes.
   */
  private recover(id: string): void {
    if (this.recovering.has(id)) return;
    this.recovering.add(id);
    const attempt = (wait: number) => {
      const timer = setTimeout(async () => {
        if (this.shutdownController.signal.aborted) return;
        try {
          await this.queue(id).onIdle();
          await this.opts.store.checkWritable();
          const g = await this.groups.reload(id);
          this.recovering.delete(id);
          this.logger.info({ group: id }, 'store writable again; group reloaded from disk');
          if (g) {
            for (const e of g.transcript) this.outbox.indexPosted(g, e);
            this.resumeGroup(g);
          }
        } catch (err) {
          this.logger.warn({ group: id, err: describeError(err), retryInMs: Math.min(wait * 2, RECOVER_MAX_MS) }, 'store still refuses writes');
          attempt(Math.min(wait * 2, RECOVER_MAX_MS));
        }
      }, wait);
      timer.unref?.();
    };
    attempt(RECOVER_FIRST_MS);
  }

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

  membershipChanged(chat: ChatRef, change: { joined?: string[]; left?: string[]; title?: string | undefined; autoCreate: boolean }): Promise<void> {
    return this.gateway.membershipChanged(chat, change);
  }

  rekeyChat(channel: ChannelKind, oldChatId: string, newChatId: string): Promise<void> {
    return this.gateway.rekeyChat(channel, oldChatId, newChatId);
  }
}

/** The gateway API as the web channel sees it. */
export type { GatewayApi };

function rememberBounded(set: Set<string>, key: string, max: number): void {
  set.add(key);
  if (set.size > max) set.delete(set.values().next().value!);
}
