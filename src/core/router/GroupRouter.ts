/**
 * The GroupRouter: the inbox and the per-group queues of Chorus. Channels hand it inbound messages;
 * it dedupes them, records them through the Recorder (durable before the channel may acknowledge)
 * and runs rounds one at a time per group. Every change to a group is a task of the group's
 * mailbox (`mailbox`, its one writer); rounds step outside it while a model, tool or platform
 * answers. Group management and the web feed's API live in GroupAdmin (`router.gateway`).
 */
import type { Channel, ChannelHost, Logger, Peers, PlatformChange, PlatformEvent } from '../ports.js';
import { noFiles, type Files } from '../fileTypes.js';
import type { GroupDoc } from '../records.js';
import type { GroupView, RegenerateResult, StopResult } from '../readModels.js';
import { RunningGroups, noPeers } from '../peers.js';
import { Hosting } from './Hosting.js';
import type { AgentDef, ChannelKind, InboundMessage, ReceiveResult } from '../types.js';
import { StoreUnavailableError, describeError } from '../errors.js';
import { EventHub } from '../events.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { GroupManager } from '../groups/GroupManager.js';
import { viewOf } from '../groups/groupReads.js';
import { eventsOf } from '../groups/projection.js';
import { HandleIndex } from './mentions.js';
import { LlmGate } from './LlmGate.js';
import { RoundRunner } from './RoundRunner.js';
import type { CommandContext } from '../commands/commands.js';
import { Inbound, UNAVAILABLE } from './Inbound.js';
import { RoundRequests } from './RoundRequests.js';
import { Recovery } from './Recovery.js';
import { Outbox } from './Outbox.js';
import { Recorder } from './Recorder.js';
import { GroupAdmin } from '../groups/GroupAdmin.js';
import { createDeclaredGroups } from './declaredGroups.js';
import { KeyedQueue } from '../lib/KeyedQueue.js';
import { Approvals } from './Approvals.js';
import { platformReaction } from './platformReactions.js';
import { replaceInPlace, type Reconfiguration } from './reconfigure.js';
import { noTools } from './toolTurn.js';
import type { RouterOptions } from './RouterOptions.js';
export type { RouterOptions } from './RouterOptions.js';
import { Rooms } from '../rooms/Rooms.js';
import { originOf } from '../rooms/chats.js';
import { BotPairs } from '../rooms/BotPairs.js';
import { GroupMailbox } from '../groups/GroupMailbox.js';

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
  readonly files: Files;
  readonly logger: Logger;
  private readonly channels = new Map<ChannelKind, Channel>();
  /** Each group's rounds (and redeliveries), one at a time. */
  private readonly queues = new KeyedQueue();
  /** Each group's one writer: every change to a group runs as a task of its mailbox. */
  readonly mailbox = new GroupMailbox();
  private readonly recovery: Recovery;
  private readonly shutdownController = new AbortController();
  private readonly gate: LlmGate;
  private readonly runner: RoundRunner;
  private readonly inbound: Inbound;
  private readonly requests: RoundRequests;
  private readonly commands: CommandContext;
  readonly approvals: Approvals;
  /** Rooms across chats: copies in every chat, edits carried across. */
  readonly rooms: Rooms;
  private started = false;
  private resumed = false;
  readonly peers: Peers;
  /** The groups this process runs. */
  readonly running: RunningGroups;
  /** Taking groups on and handing them back (several instances on one database). */
  readonly hosting: Hosting;

  constructor(readonly opts: RouterOptions) {
    this.logger = opts.logger;
    this.metrics = opts.metrics ?? noMetrics;
    this.peers = opts.peers ?? noPeers;
    this.running = new RunningGroups(!opts.peers);
    this.events = new EventHub(opts.logger);
    this.agentMap = new Map(opts.agents.map((a) => [a.id, a]));
    this.handles = new HandleIndex(opts.agents, opts.aliases);
    this.groups = new GroupManager(opts.store, this.agentMap, opts.groupDefaults, () => opts.clock.now(), opts.logger, opts.checkpointEvery);
    this.groups.onlyWriter((id) => this.mailbox.holds(id));
    this.groups.listen({
      broken: (g) => this.recovery.recover(g.id),
      // The one place live events are made from records (groups/projection.ts).
      recorded: (g, rec) => {
        for (const ev of eventsOf(g, rec)) this.events.emit(ev);
        this.rooms.landed(g, rec);
      },
    });
    this.outbox = new Outbox(this.channels, this.agentMap, this.events, opts.logger);
    // A post never holds its group: people's messages are taken in while a platform is slow.
    this.outbox.aside = (id, wait) => this.mailbox.outside(id, wait);
    this.recorder = new Recorder(this.groups, this.outbox, this.mailbox);
    this.files = opts.files ?? noFiles(opts.store);
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
      peers: this.peers,
      running: this.running,
      reactionsPerMinute: opts.limits.reactions_per_minute,
      mailbox: this.mailbox,
      rounds: { regenerate: (...a) => this.requests.regenerate(...a), stopGroup: (...a) => this.requests.stopGroup(...a), decideTool: (...a) => this.requests.decideTool(...a) },
    });
    this.approvals = new Approvals(this.groups, this.recorder, opts.clock);
    this.rooms = new Rooms({
      ...{ groups: this.groups, running: this.running, channels: this.channels, agentMap: this.agentMap, posted: this.outbox.posted, store: opts.store, mailbox: this.mailbox },
      ...{ clock: opts.clock, logger: opts.logger, shutdown: this.shutdownController.signal, maxChars: opts.limits.max_message_chars },
      editEntry: (groupId, entryId, change) => ('deleted' in change ? this.gateway.editor.remove(groupId, entryId, { clientTag: undefined, platform: true }) : this.gateway.editor.edit(groupId, entryId, { clientTag: undefined, platform: true, text: change.text, maxChars: opts.limits.max_message_chars })),
    });
    this.gate = new LlmGate(opts.llm, opts.llmSettings, opts.clock, this.metrics, this.shutdownController.signal, opts.logger);
    // Nor does a model call: the group takes in messages, stops and changes while an agent thinks.
    this.gate.aside = (id, wait) => (id ? this.mailbox.outside(id, wait) : wait());
    const botPairs = BotPairs.from(opts.limits);
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
      files: this.files,
      shutdown: this.shutdownController.signal,
      recorder: this.recorder,
      reactions: this.gateway.reactions,
      typing: (g, a, active) => this.outbox.setTyping(g, a, active),
      tools: opts.tools ?? noTools,
      redact: opts.redact ?? ((text) => text),
      botPairs,
      mailbox: this.mailbox,
    }, (g) => this.schedule(g));
    // A decision on a waiting tool call: the round that stepped aside for it runs again.
    this.approvals.onDecided = (g) => void (this.runner.unpark(g.id), this.schedule(g));
    this.recovery = new Recovery({
      groups: this.groups,
      store: opts.store,
      logger: opts.logger,
      shutdown: this.shutdownController.signal,
      idle: (id) => this.queues.onIdle(id),
      resume: (g) => {
        for (const e of g.transcript) this.outbox.indexPosted(g, e);
        this.resumeGroup(g);
      },
    });
    this.requests = new RoundRequests({
      groups: this.groups,
      recorder: this.recorder,
      running: this.running,
      peers: this.peers,
      clock: opts.clock,
      logger: opts.logger,
      agentMap: this.agentMap,
      stopRuns: (id, why) => this.runner.stop(id, why),
      schedule: (g) => this.schedule(g),
      messages: (id, o) => this.gateway.messages(id, o),
      approvals: this.approvals,
      mailbox: this.mailbox,
    });
    this.commands = {
      agents: opts.agents,
      agentMap: this.agentMap,
      handles: this.handles,
      admin: this.gateway,
      logger: opts.logger,
      now: () => opts.clock.now(),
      channel: (kind) => this.channels.get(kind),
      ask: (g, msg, ids, text) => this.requests.ask(g, msg, ids, text),
      stop: (g, by, seen) => this.requests.stopRounds(g, by, seen),
      decideTool: (g, id, approve, who, digest) => this.approvals.decide(g, id, approve, who, digest),
      reply: (msg, g, text) => (g ? this.recorder.notice(g, text, { viaAgentId: msg.viaAgentId, threadId: msg.threadId, origin: originOf(g, msg) }).then(() => undefined) : this.outbox.replyInChat(msg, text)),
    };
    this.inbound = new Inbound({
      groups: this.groups,
      agentMap: this.agentMap,
      handles: this.handles,
      admin: this.gateway,
      recorder: this.recorder,
      metrics: this.metrics,
      commands: this.commands,
      limits: opts.limits,
      posted: this.outbox.posted,
      now: () => opts.clock.now(),
      shutdown: this.shutdownController.signal,
      newRound: (g, triggerIds, addressed, forced) => this.requests.newRound(g, triggerIds, addressed, forced),
      schedule: (g) => this.schedule(g),
      ask: (g, msg, ids, text) => this.requests.ask(g, msg, ids, text),
      mailbox: this.mailbox,
      botPairs,
    });
    this.hosting = new Hosting({
      groups: this.groups,
      running: this.running,
      outbox: this.outbox,
      queues: this.queues,
      logger: opts.logger,
      stopRounds: (id, why) => this.runner.stop(id, why),
      resume: (g) => {
        if (this.resumed) this.resumeGroup(g);
      },
      platform: this,
    });
  }

  /** How busy the router is right now (gauges on `/metrics`, and tests waiting for quiet). */
  load(): { queuedRounds: number; llmCalls: number; groups: number } {
    // Other instances' groups are read-only copies here: their rounds run elsewhere.
    const all = this.groups.all().filter((g) => this.running.runs(g.id));
    return { queuedRounds: all.reduce((n, g) => n + g.rounds.length, 0), llmCalls: this.gate.depth, groups: all.filter((g) => !g.state.archived).length };
  }

  /** Register a channel before `start`. */
  addChannel(channel: Channel): void {
    this.channels.set(channel.kind, channel);
  }
  channel(kind: ChannelKind): Channel | undefined {
    return this.channels.get(kind);
  }

  /**
   * Config reload: agents, aliases and group defaults are replaced in place (rounds, commands, outbox
   * and channels hold these objects). The caller refuses a reload that removes an agent.
   */
  reconfigure(next: Reconfiguration): void {
    replaceInPlace({ agents: this.opts.agents, agentMap: this.agentMap as Map<string, AgentDef>, aliases: this.opts.aliases, groupDefaults: this.opts.groupDefaults }, next);
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
    await createDeclaredGroups({ groups: this.groups, gateway: this.gateway, logger: this.logger }, this.opts.declaredGroups ?? []);
    if (opts.resume !== false) this.resume();
  }

  /** Post entries a crash left undelivered and finish recorded rounds (once per start). */
  resume(): void {
    if (this.resumed) return;
    this.resumed = true;
    for (const g of this.groups.all()) this.resumeGroup(g);
  }

  private resumeGroup(g: GroupDoc): void {
    if (!this.running.runs(g.id)) return;
    this.rooms.landed(g);
    if (g.state.archived || (g.undelivered.length === 0 && g.rounds.length === 0)) return;
    this.logger.info({ group: g.id, rounds: g.rounds.length, undelivered: g.undelivered.length }, 'resuming unfinished work');
    if (g.undelivered.length > 0) {
      // Nobody awaits this: a failure is logged here, and the entries stay undelivered for the next start.
      this.mailbox.detached(() => this.queues.run(g.id, () => this.mailbox.send(g.id, () => this.recorder.redeliver(g)))).catch((err: unknown) => this.logger.warn({ group: g.id, err: describeError(err) }, 'could not post entries left undelivered; they are offered again at the next start'));
    }
    this.schedule(g);
  }

  /** Stop taking work, cancel model calls (their turns stay queued on disk), flush writes. */
  async stop(): Promise<void> {
    this.shutdownController.abort();
    this.outbox.stopAllTyping();
    await this.queues.onIdleAll();
    // Background summaries: their calls were just aborted, so this is quick; none writes after it.
    await this.runner.settled();
    await this.rooms.settled();
    await this.groups.checkpointAll();
    await this.opts.store.flush();
  }

  /** Wait until every group's queue is empty and its records are written (tests, benchmarks). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.queues.idle && this.mailbox.idle) {
        await this.runner.settled();
        await this.groups.settle();
        if (this.queues.idle && this.mailbox.idle) return;
        continue;
      }
      await this.queues.onIdleAll();
      await this.mailbox.onIdleAll();
    }
  }

  async receive(msg: InboundMessage): Promise<ReceiveResult> {
    return this.receiveAs(msg, false);
  }

  /** A message another instance took and acknowledged for a group this one runs (the cluster's inbox). */
  receiveForwarded(msg: InboundMessage): Promise<ReceiveResult> {
    return this.receiveAs(msg, true);
  }

  private async receiveAs(msg: InboundMessage, forwarded: boolean): Promise<ReceiveResult> {
    try {
      return await this.inbound.take(msg, forwarded);
    } catch (err) {
      if (err instanceof StoreUnavailableError) return UNAVAILABLE;
      throw err;
    }
  }

  // What the cluster's routing (ClusteredHost) asks: is the group handed to this process, which
  // group is a message for, and what does the read-only copy of another instance's group answer.
  runs = (groupId: string): boolean => this.running.runs(groupId);
  groupIdOf = (msg: InboundMessage): string | undefined => this.inbound.groupOf(msg)?.id;
  fromCopy = (msg: InboundMessage): ReturnType<Inbound['fromCopy']> => this.inbound.fromCopy(msg);

  /** `/stop` for one group: its rounds end and their model calls are cancelled (see RoundRequests). */
  stopGroup(groupId: string, by: string): Promise<StopResult> {
    return this.requests.stopGroup(groupId, by);
  }

  /** Another answer from the agent of reply `entryId` to the same message (see RoundRequests). */
  regenerate(groupId: string, entryId: string): Promise<RegenerateResult> {
    return this.requests.regenerate(groupId, entryId);
  }

  /** Make sure one drain task is waiting in the group's queue (from `resume` on: what a crash left undelivered goes first). */
  private schedule(g: GroupDoc): void {
    if (!this.running.runs(g.id) || !this.resumed) return;
    // The round is its own task of the group's mailbox, not part of whatever asked for it.
    if (this.queues.waiting(g.id) === 0) void this.mailbox.detached(() => this.queues.run(g.id, () => this.mailbox.send(g.id, () => this.drain(g)))).catch((err) => this.roundFailed(g, err));
  }

  private roundFailed(g: GroupDoc, err: unknown): void {
    // A failed write is handled by reloading the group (see recover); anything else is a bug.
    if (err instanceof StoreUnavailableError) this.logger.warn({ group: g.id, err: describeError(err) }, 'round paused: the store refused a write');
    else this.logger.error({ group: g.id, err: describeError(err) }, 'round failed');
  }

  /** Run the group's recorded rounds in order; waiting rounds are answered as one batch. */
  private async drain(g: GroupDoc): Promise<void> {
    while (g.rounds.length > 0 && !this.shutdownController.signal.aborted && !g.state.archived && this.groups.usable(g) && this.running.runs(g.id)) {
      const round = this.runner.batchWaiting(g);
      if (!round) break; // every round waits for a person's decision on a tool call
      await this.runner.run(g, round);
      if (g.rounds.includes(round) && !this.runner.isParked(g.id, round.id)) break; // interrupted by shutdown or a failed write
    }
  }

  // ChannelHost

  agents(): readonly AgentDef[] {
    return this.opts.agents;
  }

  findGroup(channel: ChannelKind, chatId: string): GroupView | undefined {
    const g = this.groups.find(channel, chatId);
    return g ? viewOf(g) : undefined;
  }

  registerHandle(handle: string, agentId: string): void {
    if (this.agentMap.has(agentId)) this.handles.addHandle(handle, agentId);
  }

  agentForPostedMessage(channel: ChannelKind, chatId: string, platformMessageId: string): string | undefined {
    return this.outbox.agentFor(channel, chatId, platformMessageId);
  }

  handle(ev: { kind: 'message'; message: InboundMessage }): Promise<ReceiveResult>;
  handle(ev: PlatformChange): Promise<void>;
  handle(ev: PlatformEvent): Promise<ReceiveResult | void> {
    switch (ev.kind) {
      case 'message':
        return this.receive(ev.message);
      case 'edit':
        return this.rooms.edited(ev.edit);
      case 'reaction':
        return platformReaction({ groups: this.groups, gateway: this.gateway, logger: this.logger }, ev.reaction);
      case 'membership':
        return this.gateway.membershipChanged(ev.chat, ev.change);
      case 'rekey':
        return this.gateway.rekeyChat(ev.channel, ev.oldChatId, ev.newChatId);
    }
  }
}
