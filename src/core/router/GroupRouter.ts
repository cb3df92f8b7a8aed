/**
 * The GroupRouter: the inbox and the per-group queues of Chorus. Channels hand it inbound messages;
 * it dedupes them, records them through the Recorder (durable before the channel may acknowledge)
 * and runs rounds on a per-group FIFO queue. Group management and the web feed's API
 * live in GroupAdmin (`router.gateway`); commands get a narrow CommandContext.
 */
import type { Channel, ChannelHost, Clock, ForwardedChange, GatewayApi, LlmProvider, Logger, Ownership, Store } from '../ports.js';
import type { GroupDoc, RoundRecord } from '../records.js';
import type { GroupView, RegenerateResult, StopResult } from '../readModels.js';
import { cleanDisplayName } from '../text/displayName.js';
import { singleOwner } from '../ownership.js';
import type { AgentDef, ChannelKind, ChatRef, ConfigValidator, GroupConfig, InboundMessage, ReceiveResult, TranscriptEntry } from '../types.js';
import { StoreUnavailableError, describeError } from '../errors.js';
import { EventHub } from '../events.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { GroupManager } from '../groups/GroupManager.js';
import { seqOfId } from '../groups/evolve.js';
import { viewOf } from '../groups/groupReads.js';
import { eventsOf } from '../groups/projection.js';
import { HandleIndex, findMentions } from './mentions.js';
import { LlmGate, type GateSettings } from './LlmGate.js';
import { RoundRunner } from './RoundRunner.js';
import { askArgs, changesState, handleCommand, parseCommand, type CommandContext, type ParsedCommand } from '../commands/commands.js';
import { RateLimiter } from './RateLimiter.js';
import { Outbox } from './Outbox.js';
import { Recorder, type NewEntry } from './Recorder.js';
import { GroupAdmin } from '../groups/GroupAdmin.js';
import { createDeclaredGroups, type DeclaredGroup } from './declaredGroups.js';
import { KeyedQueue } from '../lib/KeyedQueue.js';
import { BoundedSet } from '../lib/BoundedMap.js';

/** Everything the router needs; built by the composition root (src/app.ts). */
export interface RouterOptions {
  agents: AgentDef[];
  aliases: Record<string, string[]>;
  groupDefaults: GroupConfig;
  limits: { user_messages_per_minute: number; max_message_chars: number };
  llm: LlmProvider;
  /** Model settings; the per-group/per-agent shares and the reply limit default to none / 32 KiB (see LlmGate). */
  llmSettings: { model: string; summaryModel: string | null; maxTokens: number; contextTokens?: number | null | undefined; defaultContextTokens?: number | undefined } & GateSettings;
  validateConfig: ConfigValidator;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Groups from the config file, created on first start. */
  declaredGroups?: DeclaredGroup[];
  scripted?: boolean;
  /** Records between checkpoints of a group (tests make it small to crash around checkpoints). */
  checkpointEvery?: number | undefined;
  /** Where counts and timings go (`/metrics`); nothing is reported without it. */
  metrics?: Metrics | undefined;
  /** Which groups this instance runs when several share one database; a single instance runs all. */
  ownership?: Ownership | undefined;
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
  /** Each group's rounds (and redeliveries), one at a time. */
  private readonly queues = new KeyedQueue();
  private readonly chatlessSeen = new BoundedSet<string>(CHATLESS_SEEN);
  private readonly recovering = new Set<string>();
  private readonly shutdownController = new AbortController();
  private readonly gate: LlmGate;
  private readonly runner: RoundRunner;
  private readonly rate: RateLimiter;
  private readonly commands: CommandContext;
  private started = false;
  private resumed = false;
  readonly ownership: Ownership;

  constructor(readonly opts: RouterOptions) {
    this.logger = opts.logger;
    this.metrics = opts.metrics ?? noMetrics;
    this.ownership = opts.ownership ?? singleOwner;
    this.events = new EventHub(opts.logger);
    this.agentMap = new Map(opts.agents.map((a) => [a.id, a]));
    this.handles = new HandleIndex(opts.agents, opts.aliases);
    this.groups = new GroupManager(opts.store, this.agentMap, opts.groupDefaults, () => opts.clock.now(), opts.logger, opts.checkpointEvery);
    this.groups.listen({
      broken: (g) => this.recover(g.id),
      // The one place live events are made from records (groups/projection.ts).
      recorded: (g, rec) => {
        for (const ev of eventsOf(g, rec)) this.events.emit(ev);
      },
    });
    this.outbox = new Outbox(this.channels, this.agentMap, this.events, opts.logger);
    this.recorder = new Recorder(this.groups, this.outbox);
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
      ownership: this.ownership,
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
      stop: (g, by, seen) => this.stopRounds(g, by, seen),
      reply: (msg, g, text) => (g ? this.recorder.notice(g, text, { viaAgentId: msg.viaAgentId, threadId: msg.threadId }).then(() => undefined) : this.outbox.replyInChat(msg, text)),
    };
  }

  /** How busy the router is right now (gauges on `/metrics`, and tests waiting for quiet). */
  load(): { queuedRounds: number; llmCalls: number; groups: number } {
    // Other instances' groups are read-only copies here: their rounds run elsewhere.
    const all = this.groups.all().filter((g) => this.ownership.owns(g.id));
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
    await createDeclaredGroups({ groups: this.groups, gateway: this.gateway, logger: this.logger }, this.opts.declaredGroups ?? []);
    if (opts.resume !== false) this.resume();
  }

  /** Post entries a crash left undelivered and finish recorded rounds (once per start). */
  resume(): void {
    if (this.resumed) return;
    this.resumed = true;
    for (const g of this.groups.all()) this.resumeGroup(g);
  }

  // -------------------------------------------------------------------------------------------
  // Ownership (several instances on one database; called by the cluster adapter)

  /**
   * This instance has just taken the group's lease: read it back from the store as it is now
   * (every record the previous owner made durable), replacing the read-only copy. Its recorded
   * work is resumed by `resumeOwned` once the messages waiting in the inbox are in.
   */
  async adopt(id: string): Promise<boolean> {
    const g = await this.groups.reload(id);
    if (!g) return false;
    for (const e of g.transcript) this.outbox.indexPosted(g, e);
    return true;
  }

  /** Finish an adopted group's recorded rounds and deliveries (after `adopt`, once owned). */
  resumeOwned(id: string): void {
    const g = this.groups.get(id);
    if (g && this.resumed) this.resumeGroup(g);
  }

  /**
   * The group is no longer this instance's to run. Graceful (handing it over to spread groups):
   * the running round ends first and its records are written. Otherwise (the lease was lost) it
   * stops at once: the group object is replaced, so a round still running on the old one finds
   * it unusable at its next step and none of its writes is made (the store's fence refuses any
   * already on their way). Either way a read-only copy is left for the web API.
   */
  async relinquish(id: string, opts: { graceful: boolean }): Promise<void> {
    if (opts.graceful) {
      await this.queues.onIdle(id);
      const g = this.groups.get(id);
      if (g && this.groups.usable(g)) await this.groups.commit(g).durable.catch(() => undefined);
      await this.groups.reload(id);
      return;
    }
    // The old object goes stale at once (synchronously, inside reload), so the model calls
    // cancelled next cannot write even a failure notice.
    const reloaded = this.groups.reload(id);
    this.runner.stop(id, 'this instance no longer runs the group');
    await reloaded;
  }

  /** A change another instance handed over through the inbox (this instance runs the group). */
  async applyForwarded(groupId: string, c: ForwardedChange): Promise<void> {
    if (!this.ownership.owns(groupId)) throw new StoreUnavailableError(`group ${groupId} is no longer run by this instance`);
    if (c.kind === 'membership') await this.gateway.membershipChanged(c.chat, c.change);
  }

  /** Another instance recorded an entry of a group this one does not run: add it to the copy. */
  copyEntry(id: string, entry: TranscriptEntry): void {
    const g = this.groups.get(id);
    if (g && !this.ownership.owns(id)) this.groups.noteRemoteEntry(g, entry);
  }

  /** Another instance changed a group this one does not run: read the copy again. */
  async refreshCopy(id: string): Promise<void> {
    if (this.ownership.owns(id)) return;
    await this.groups.reload(id);
  }

  private resumeGroup(g: GroupDoc): void {
    if (!this.ownership.owns(g.id)) return;
    if (g.state.archived || (g.undelivered.length === 0 && g.rounds.length === 0)) return;
    this.logger.info({ group: g.id, rounds: g.rounds.length, undelivered: g.undelivered.length }, 'resuming unfinished work');
    if (g.undelivered.length > 0) {
      // Nobody awaits this: a failure is logged here, and the entries stay undelivered for the next start.
      this.queues.run(g.id, () => this.recorder.redeliver(g)).catch((err: unknown) => this.logger.warn({ group: g.id, err: describeError(err) }, 'could not post entries left undelivered; they are offered again at the next start'));
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
    await this.groups.checkpointAll();
    await this.opts.store.flush();
  }

  /** Wait until every group's queue is empty and its records are written (tests, benchmarks). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.queues.idle) {
        await this.runner.settled();
        await this.groups.settle();
        if (this.queues.idle) return;
        continue;
      }
      await this.queues.onIdleAll();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Inbound

  async receive(msg: InboundMessage): Promise<ReceiveResult> {
    return this.receiveAs(msg, false);
  }

  /**
   * A message another instance took for a group this one now runs (the cluster inbox). Throws
   * `StoreUnavailableError` instead of forwarding it again if ownership was lost meanwhile, so
   * the inbox keeps it for the next owner.
   */
  receiveForwarded(msg: InboundMessage): Promise<ReceiveResult> {
    return this.receiveAs(msg, true);
  }

  private async receiveAs(msg: InboundMessage, forwarded: boolean): Promise<ReceiveResult> {
    try {
      return await this.take(msg, forwarded);
    } catch (err) {
      if (err instanceof StoreUnavailableError) return UNAVAILABLE;
      throw err;
    }
  }

  private async take(msg: InboundMessage, forwarded = false): Promise<ReceiveResult> {
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
        this.chatlessSeen.add(chatlessKey);
        await handleCommand(this.commands, msg, command, undefined);
        return { status: 'command' };
      }
      if (!dm) return { status: 'no_group', reason: 'this chat has no group; use /group create' };
      const agent = this.agentMap.get(dm)!;
      g = this.groups.create({ channel: msg.channel, chatId: msg.chatId, dmAgentId: dm, title: `${agent.name} · ${msg.author.name}`, participants: [dm] });
      await this.gateway.persistNew(g);
    }
    if (!this.ownership.owns(g.id)) {
      if (forwarded) throw new StoreUnavailableError(`group ${g.id} is no longer run by this instance`);
      // A copy here knows this id already: no need to hand it over again. Only a copy read from
      // the store may say so: right after this instance lost the lease, the object it ran (until
      // the copy replaces it) remembers ids whose records were refused by the fence — answering
      // 'duplicate' from it would acknowledge a message that is nowhere.
      if (this.groups.isSeen(g, msg.messageId) && (await this.seenDurably(g, msg.messageId))) return { status: 'duplicate', groupId: g.id };
      // Pure queries (`/help`, `/group list`…) asked where only the asker sees the answer: the
      // copy here answers them (nothing is recorded), instead of forwarding and losing the answer.
      if (command && msg.ephemeral && !changesState(command)) return this.ephemeralCommand(g, msg, command);
      if (command && msg.ephemeral) {
        // A change runs where the group runs; the asker is told where it went and what to expect.
        const res = await this.ownership.forward(g.id, msg, { awaitAnswer: true });
        if (res.status !== 'forwarded') return res;
        // The owner ran it meanwhile: its answer (a refusal, or what a query would show) or its line.
        if (res.ephemeral || res.entryId) return { ...res, status: 'command' };
        const owner = this.ownership.ownerOf(g.id);
        const where = owner ? `instance "${owner}", which runs this group` : 'the instance that runs this group';
        return { ...res, ephemeral: { kind: 'command', text: `Handed over to ${where}: the change shows in the chat once it is made (nothing shows if it was refused there).` } };
      }
      // Limits are checked where the message is acknowledged: once handed over it is recorded.
      if (!command && msg.ephemeral) {
        const refusal = this.checkLimits(g, msg);
        if (refusal) return this.ephemeralRefusal(g, msg, refusal);
      }
      return this.ownership.forward(g.id, msg);
    }
    // Messages handed over by other instances before this one came in are recorded first.
    if (!forwarded) await this.ownership.beforeReceive(g.id);
    if (!this.groups.usable(g)) return UNAVAILABLE;
    if (this.groups.isSeen(g, msg.messageId)) {
      // Another copy (a second Telegram bot, a redelivery) may still be writing the original: the
      // channel confirms this copy as soon as we return, so the original must be durable first.
      await this.groups.durable(g);
      return { status: 'duplicate', groupId: g.id };
    }
    if (command && msg.ephemeral) return this.ephemeralCommand(g, msg, command);
    const asked = command?.name === 'ask' ? askArgs(this.handles, g.participants, command) : null;
    if (asked && asked.ids.length > 0 && asked.text) {
      // `/ask <agent> <question>`: one entry, the question agents are shown. Recording the
      // command line as well would show agents the text twice.
      const entry = await this.ask(g, msg, asked.ids, asked.text);
      return { status: 'command', groupId: g.id, entryId: entry?.id };
    }
    if (command) {
      const [entry] = await this.recorder.record(g, { entries: [this.humanEntry(msg, true)] });
      await handleCommand(this.commands, msg, command, g);
      return { status: 'command', groupId: g.id, entryId: entry!.id };
    }
    // A message handed over by another instance was acknowledged there (202) after that instance
    // checked the limits: refusing it now would drop it silently (its inbox row is then deleted).
    const refusal = forwarded && msg.ephemeral ? null : this.checkLimits(g, msg);
    if (refusal && msg.ephemeral) return this.ephemeralRefusal(g, msg, refusal);
    if (refusal) {
      await this.recorder.notice(g, refusal.text, { decision: 'cap', seen: msg.messageId });
      return { status: 'rejected', groupId: g.id, code: refusal.code, reason: refusal.text };
    }
    const addressed = this.addressedBy(g, msg);
    if (addressed.length > 0) this.groups.setSticky(g, addressed.at(-1)!);
    // The message and its round are one record: durable before the channel acknowledges.
    const round = this.newRound(g, [`${g.id}.${g.nextSeq}`], addressed, false);
    const [entry] = await this.recorder.record(g, { entries: [this.humanEntry(msg, false)], round: { record: round, add: true } });
    this.metrics.messageRecorded(msg.channel);
    this.schedule(g);
    return { status: 'recorded', groupId: g.id, entryId: entry!.id };
  }

  /** `/ask`: record the optional text and force these agents to answer. */
  private async ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string | null): Promise<TranscriptEntry | undefined> {
    const entries: NewEntry[] = text ? [{ ...this.humanEntry(msg, false), text }] : [];
    const round = this.newRound(g, text ? [`${g.id}.${g.nextSeq}`] : [], agentIds, true);
    // Web "ask again" on a message: answer the question that message was about, not the latest one.
    if (!text && msg.replyToEntryId) round.about = this.questionFor(g, msg.replyToEntryId)?.id;
    // The command's id is remembered with it: on the web the `/ask` line itself is not stored, and a
    // retried or redelivered `/ask` must not make the agents answer twice.
    const [entry] = await this.recorder.record(g, { entries, round: { record: round, add: true }, seen: msg.messageId });
    this.schedule(g);
    return entry;
  }

  /**
   * `/stop` (or the web API) for one group: the running round ends, its model calls in flight are
   * cancelled, and every waiting round is dropped — in one record with a notice saying who stopped
   * it, so a restart does not resume them. The human messages stay recorded (and in the agents'
   * mailboxes); the next message starts a fresh round.
   */
  async stopGroup(groupId: string, by: string): Promise<StopResult> {
    const g = this.groups.require(groupId);
    if (!this.ownership.owns(g.id)) {
      // Another instance runs the group: hand it the command like any message for it.
      const msg: InboundMessage = { channel: g.channel, chatId: g.chatId, messageId: `stop-${this.opts.clock.now()}-${Math.random().toString(36).slice(2, 8)}`, author: { id: by, name: by }, text: '/stop', ts: this.opts.clock.now(), ephemeral: true };
      const handed = await this.ownership.forward(g.id, msg);
      // Only a stop the owner will see may be reported as done.
      if (handed.status !== 'forwarded' && handed.status !== 'duplicate') throw new StoreUnavailableError(`the stop could not be handed to the instance that runs group ${g.id}`);
      return { stopped: true, roundsDropped: null, turnsDropped: null };
    }
    if (!this.groups.usable(g)) throw new StoreUnavailableError(`group ${g.id} is being reloaded after a failed write`);
    return this.stopRounds(g, by);
  }

  private async stopRounds(g: GroupDoc, by: string, seen?: string): Promise<StopResult & { roundsDropped: number; turnsDropped: number }> {
    const name = by.trim() || 'someone';
    this.runner.stop(g.id, `stopped by ${name}`);
    const rounds = [...g.rounds];
    // A round not planned yet has no turns listed: count its addressed agents (or one open turn).
    const turnsDropped = rounds.reduce((n, r) => n + (r.planned ? r.queue.length : Math.max(1, r.addressed.length)), 0);
    for (const r of rounds) {
      // A turn still holding the round sees nothing left to do.
      this.groups.updateRound(g, r, { queue: [] });
      this.groups.finishRound(g, r);
    }
    const what =
      rounds.length === 0
        ? 'nothing was running'
        : `${rounds.length === 1 ? 'the round was ended' : `${rounds.length} rounds were ended`} and replies in progress cancelled`;
    await this.recorder.notice(g, `⏹ Stopped by ${cleanDisplayName(name) || 'someone'}: ${what}. Messages stay recorded; the next message starts afresh.`, { decision: 'stopped', seen });
    this.logger.info({ group: g.id, by: name, rounds: rounds.length, turns: turnsDropped }, 'stopped');
    return { stopped: true, roundsDropped: rounds.length, turnsDropped };
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
      replyTo: msg.replyToEntryId,
      clientTag: msg.clientTag,
    };
  }

  /** Whom a message addresses: text handles, platform mentions, reply-to, in order of appearance. */
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
    if (!this.rate.allow(this.rateKey(g, msg), this.opts.clock.now())) {
      return { code: 'rate_limited', text: `⚠ ${msg.author.name}, you are sending messages faster than ${this.opts.limits.user_messages_per_minute} a minute; please wait a moment.` };
    }
    return null;
  }

  /** A refusal shown to the sender alone, once, with when to try again; the shared chat stays clean. */
  private ephemeralRefusal(g: GroupDoc, msg: InboundMessage, refusal: { code: 'too_long' | 'empty' | 'rate_limited'; text: string }): ReceiveResult {
    const waitMs = refusal.code === 'rate_limited' ? this.rate.retryAfterMs(this.rateKey(g, msg), this.opts.clock.now()) : 0;
    const retryAfterSeconds = refusal.code === 'rate_limited' ? Math.max(1, Math.ceil(waitMs / 1000)) : undefined;
    const text = retryAfterSeconds === undefined ? refusal.text : `${refusal.text.replace(/;? please wait a moment\.$/, '')}; try again in ${retryAfterSeconds} s.`;
    return { status: 'rejected', groupId: g.id, code: refusal.code, reason: text, ephemeral: { text, kind: 'refusal', retryAfterSeconds } };
  }

  /**
   * Whether `key`, remembered by `g`, belongs to a durable record. A usable object's memory is
   * durable once its writes so far are (a refused write breaks it); a broken or replaced one may
   * remember ids whose records never landed, so it proves nothing.
   */
  private async seenDurably(g: GroupDoc, key: string): Promise<boolean> {
    if (!this.groups.usable(g)) return false;
    try {
      await this.groups.durable(g);
    } catch {
      return false;
    }
    return this.groups.usable(g) && this.groups.isSeen(g, key);
  }

  /** Whom the per-person rate limit counts a message against (web: the client's address). */
  private rateKey(g: GroupDoc, msg: InboundMessage): string {
    return `${g.id}:${msg.channel}:${msg.rateKey ?? msg.author.id}`;
  }

  /**
   * A command from a channel that can answer the asker alone (the web page). A query (`/help`,
   * `/group list|usage|config`) and any command that fails leave no trace: the answer comes back
   * in the result only. A command that changes the group is recorded as on every channel — its
   * line (hidden from agents) and the system line everyone sees — once it has succeeded, so a
   * refused one leaves nothing. `/ask` records only its question (if any) and starts the round;
   * `/stop` records only its notice.
   */
  private async ephemeralCommand(g: GroupDoc, msg: InboundMessage, command: ParsedCommand): Promise<ReceiveResult> {
    const ctx: CommandContext = { ...this.commands, reply: async () => {} };
    const outcome = await handleCommand(ctx, msg, command, g);
    const answer = outcome.reply ? { text: outcome.reply, kind: 'command' as const } : undefined;
    // `/ask` and `/stop` leave their own shared record (the question and answers, the stop notice).
    if (outcome.failed || !changesState(command) || command.name === 'ask' || command.name === 'stop' || g.state.archived) {
      return { status: 'command', groupId: g.id, ephemeral: answer };
    }
    const [entry] = await this.recorder.record(g, { entries: [this.humanEntry(msg, true)] });
    if (outcome.reply) await this.commands.reply(msg, g, outcome.reply);
    return { status: 'command', groupId: g.id, entryId: entry!.id };
  }

  /** The human message an entry is about: itself, the message an agent reply answered, or the last one before it. */
  private questionFor(g: GroupDoc, entryId: string): TranscriptEntry | undefined {
    const entry = this.groups.entryAt(g, seqOfId(entryId));
    if (!entry || entry.id !== entryId) return undefined;
    if (entry.kind === 'human' && !entry.hiddenFromAgents) return entry;
    const answered = entry.meta?.answers ? this.groups.entryAt(g, seqOfId(entry.meta.answers)) : undefined;
    if (answered) return answered;
    return g.transcript.filter((e) => e.seq < entry.seq && e.kind === 'human' && !e.hiddenFromAgents).at(-1);
  }

  /**
   * Another answer from the agent of reply `entryId` to the same message: a forced round for that
   * agent about the question the reply answered. Only the agent's latest reply can be regenerated
   * (an older one has been followed by others); the old reply is kept and the new one is marked.
   */
  async regenerate(groupId: string, entryId: string): Promise<RegenerateResult> {
    const g = this.groups.get(groupId);
    if (!g) return { status: 'refused', code: 'unknown_entry', reason: `no group "${groupId}"` };
    if (g.state.archived) return { status: 'refused', code: 'archived', reason: `group "${groupId}" is dissolved` };
    // Several instances on one database: only the one running the group may start its rounds.
    if (!this.ownership.owns(g.id)) throw new StoreUnavailableError(`group ${g.id} is run by another instance (${this.ownership.ownerOf(g.id) ?? 'unknown'}); try again`);
    if (!this.groups.usable(g)) throw new StoreUnavailableError('storage is unavailable');
    const entry = this.groups.entryAt(g, seqOfId(entryId));
    if (!entry || entry.id !== entryId) {
      const [stored] = Number.isSafeInteger(seqOfId(entryId)) && seqOfId(entryId) > 0 ? await this.gateway.messages(g.id, { before: seqOfId(entryId) + 1, limit: 1 }) : [];
      if (stored?.id !== entryId) return { status: 'refused', code: 'unknown_entry', reason: `no message "${entryId}" in this group` };
      if (stored.kind !== 'agent') return { status: 'refused', code: 'not_agent_reply', reason: `message "${entryId}" is not an agent's reply` };
      return { status: 'refused', code: 'not_latest', reason: `only ${stored.authorName}'s latest reply can be regenerated` };
    }
    if (entry.kind !== 'agent' || !entry.agentId) return { status: 'refused', code: 'not_agent_reply', reason: `message "${entryId}" is not an agent's reply` };
    const agentId = entry.agentId;
    const name = this.agentMap.get(agentId)?.name ?? entry.authorName;
    if (!g.participants.includes(agentId)) return { status: 'refused', code: 'not_member', reason: `${name} is no longer in this group` };
    const latest = g.transcript.filter((e) => e.kind === 'agent' && e.agentId === agentId).at(-1);
    if (latest?.id !== entryId) return { status: 'refused', code: 'not_latest', reason: `only ${name}'s latest reply can be regenerated` };
    if (g.rounds.some((r) => r.regenerates === entryId)) return { status: 'refused', code: 'not_latest', reason: `${name} is already writing another answer to this` };
    const round = this.newRound(g, [], [agentId], true);
    // Rounds without a new entry share the next seq; the reply's seq keeps this id unique.
    round.id = `${round.id}-re${entry.seq}`;
    round.about = this.questionFor(g, entryId)?.id;
    round.regenerates = entryId;
    await this.recorder.record(g, { round: { record: round, add: true } });
    this.schedule(g);
    return { status: 'queued', groupId: g.id, roundId: round.id, agentId };
  }

  /** Make sure one drain task is waiting in the group's queue. */
  private schedule(g: GroupDoc): void {
    if (!this.ownership.owns(g.id)) return;
    if (this.queues.waiting(g.id) === 0) void this.queues.run(g.id, () => this.drain(g)).catch((err) => this.roundFailed(g, err));
  }

  private roundFailed(g: GroupDoc, err: unknown): void {
    // A failed write is handled by reloading the group (see recover); anything else is a bug.
    if (err instanceof StoreUnavailableError) this.logger.warn({ group: g.id, err: describeError(err) }, 'round paused: the store refused a write');
    else this.logger.error({ group: g.id, err: describeError(err) }, 'round failed');
  }

  /** Run the group's recorded rounds in order; waiting rounds are answered as one batch. */
  private async drain(g: GroupDoc): Promise<void> {
    while (g.rounds.length > 0 && !this.shutdownController.signal.aborted && !g.state.archived && this.groups.usable(g) && this.ownership.owns(g.id)) {
      const round = g.rounds[0]!;
      if (!round.planned) {
        const waiting = g.rounds.filter((r) => !r.planned);
        if (waiting.length > 1) {
          // Not written on its own: the next record carries the merge, and a restart before it
          // merges the same rounds again.
          const rest = waiting.slice(1);
          this.groups.updateRound(g, round, {
            triggerIds: [...round.triggerIds, ...rest.flatMap((r) => r.triggerIds)],
            addressed: [...new Set([...round.addressed, ...rest.flatMap((r) => r.addressed)])],
            forced: round.forced || rest.some((r) => r.forced),
          });
          for (const r of rest) this.groups.finishRound(g, r);
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
          await this.queues.onIdle(id);
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
    return g ? viewOf(g) : undefined;
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
