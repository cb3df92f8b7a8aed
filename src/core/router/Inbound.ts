/**
 * Inbound messages: each is classified once into an intent (what kind of message it is and what
 * it asks for), then handled by the short function for that intent. Everything that reaches a
 * group's log goes through the Recorder, durable before the channel may acknowledge.
 */
import type { GroupDoc, RoundRecord } from '../records.js';
import type { AgentDef, InboundMessage, ReceiveResult, TranscriptEntry } from '../types.js';
import type { Metrics } from '../metrics.js';
import type { GroupMailbox, GroupTask } from '../groups/GroupMailbox.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { GroupAdmin } from '../groups/GroupAdmin.js';
import { askArgs, changesState, handleCommand, parseCommand, type CommandContext, type ParsedCommand } from '../commands/commands.js';
import { findMentions, type HandleIndex } from './mentions.js';
import type { Recorder, NewEntry } from './Recorder.js';
import { RateLimiter } from './RateLimiter.js';
import { Dedupe } from './Dedupe.js';
import { copiesFor, originOf, seenKeyOf } from '../rooms/chats.js';
import { withReplyResolved, type PostedIndex } from '../rooms/PostedIndex.js';
import { BotCommands, OncePerBot, botKey } from '../commands/botCommands.js';
import type { BotPairs } from '../rooms/BotPairs.js';
import { decision } from './decisions.js';

export interface InboundDeps {
  groups: GroupManager;
  agentMap: ReadonlyMap<string, AgentDef>;
  handles: HandleIndex;
  admin: GroupAdmin;
  recorder: Recorder;
  metrics: Metrics;
  commands: CommandContext;
  limits: { user_messages_per_minute: number; max_message_chars: number };
  /** Which entry each platform message is (replies across the chats of a room). */
  posted: PostedIndex;
  now(): number;
  shutdown: AbortSignal;
  /** A round for the entries about to be recorded. */
  newRound(g: GroupDoc, triggerIds: string[], addressed: string[], forced: boolean): RoundRecord;
  /** Make sure the group's recorded rounds run. */
  schedule(g: GroupDoc): void;
  /** Each group's one writer: a message is taken in as a task of its group. */
  mailbox: GroupMailbox;
  /** Record `/ask`'s question and force these agents to answer. */
  ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string): Promise<TranscriptEntry | undefined>;
  /** What bots that are not agents may still get (a person writing lets stopped ones go on). */
  botPairs: BotPairs;
}

/** Why a message is refused to its sender before anything is recorded. */
export type LimitCode = 'too_long' | 'empty' | 'rate_limited';
interface Refusal {
  code: LimitCode;
  text: string;
}

/** What an inbound message not taken before is, decided once (a duplicate is answered before). */
export type Intent =
  | { kind: 'refused'; result: ReceiveResult }
  /** A command in a chat that has no group (e.g. the `/group create` that makes one). */
  | { kind: 'chatless-command'; command: ParsedCommand }
  /** The first private message to an agent: its one-to-one group is made. */
  | { kind: 'open-dm'; agentId: string }
  /** A command whose answer goes to the asker alone (the web page). */
  | { kind: 'private-command'; g: GroupDoc; command: ParsedCommand }
  /** `/ask <agent> <question>`. */
  | { kind: 'ask'; g: GroupDoc; agentIds: string[]; text: string }
  | { kind: 'command'; g: GroupDoc; command: ParsedCommand }
  /** A command from a bot that is not an agent: recorded, never run (commands/botCommands.ts). */
  | { kind: 'bot-command'; g: GroupDoc | undefined }
  /** Too long, empty or rate limited. */
  | { kind: 'over-limit'; g: GroupDoc; refusal: Refusal }
  | { kind: 'message'; g: GroupDoc };

const SHUTTING_DOWN: ReceiveResult = { status: 'rejected', code: 'shutting_down', reason: 'shutting down' };

export const UNAVAILABLE: ReceiveResult = { status: 'rejected', code: 'unavailable', reason: 'storage is unavailable; nothing was recorded, try again shortly' };

export class Inbound {
  private readonly dedupe: Dedupe;
  private readonly rate: RateLimiter;
  private readonly botCommands: BotCommands;
  /** Bots told they are over the rate limit: told once, or a bot answering each notice would loop with it. */
  private readonly botsOverLimit = new OncePerBot();

  constructor(private readonly d: InboundDeps) {
    this.dedupe = new Dedupe(d.groups);
    this.botCommands = new BotCommands(d.commands);
    this.rate = new RateLimiter(d.limits.user_messages_per_minute, 60_000);
  }

  /**
   * Take one message. `forwarded`: another instance took it and acknowledged it (its limits were
   * checked there).
   */
  async take(msg: InboundMessage, forwarded: boolean): Promise<ReceiveResult> {
    if (this.d.shutdown.aborted) return SHUTTING_DOWN;
    const dm = this.dmAgent(msg);
    const g = this.d.groups.find(msg.channel, msg.chatId, dm);
    if (!g) return this.decide(msg, g, dm, forwarded);
    // Taken in as a task of the group's mailbox: the group is read as it is when its turn comes.
    const taken = await this.d.mailbox.send(g.id, (t) => {
      const now = this.d.groups.find(msg.channel, msg.chatId, dm);
      return now && now !== g ? null : this.decide(msg, now, dm, forwarded, now ? t : undefined);
    });
    // The chat's group changed while the message waited (it joined a room, it was re-keyed): the
    // message queues again, once that task has ended, in the line of the group the chat has now.
    return taken ?? this.take(msg, forwarded);
  }

  /** The group a message is for, if its chat has one (a private chat with an agent: that agent's). */
  groupOf(msg: InboundMessage): GroupDoc | undefined {
    return this.d.groups.find(msg.channel, msg.chatId, this.dmAgent(msg));
  }

  private dmAgent(msg: InboundMessage): string | undefined {
    return msg.isPrivate && msg.viaAgentId && this.d.agentMap.has(msg.viaAgentId) ? msg.viaAgentId : undefined;
  }

  /**
   * A message for a group another instance runs, of which this process keeps a read-only copy:
   * what the copy answers itself — a duplicate of an entry it holds, a query whose answer goes to
   * the asker alone (nothing is recorded), a refusal by the limits (checked where the message is
   * acknowledged: once handed over, it is recorded) — or the message to hand over, its reply resolved.
   */
  async fromCopy(msg: InboundMessage): Promise<{ answer: ReceiveResult } | { handOver: InboundMessage; command: ParsedCommand | null }> {
    if (this.d.shutdown.aborted) return { answer: SHUTTING_DOWN };
    const g = this.groupOf(msg);
    if (!g) return { answer: { status: 'no_group', reason: 'this chat has no group; use /group create' } };
    msg = withReplyResolved(g, msg, this.d.posted);
    if (this.dedupe.remembers(g, msg) && (await this.dedupe.confirmed(g, msg))) return { answer: { status: 'duplicate', groupId: g.id } };
    const command = parseCommand(msg.text);
    if (command && msg.ephemeral && !changesState(command)) return { answer: await this.privateCommand(g, msg, command) };
    const refusal = !command && msg.ephemeral ? this.checkLimits(g, msg) : null;
    if (refusal) return { answer: this.ephemeralRefusal(g, msg, refusal) };
    return { handOver: msg, command };
  }

  /** Duplicate, or what the message is, and its handling. */
  private async decide(msg: InboundMessage, g: GroupDoc | undefined, dm: string | undefined, forwarded: boolean, task?: GroupTask): Promise<ReceiveResult> {
    if (g) msg = withReplyResolved(g, msg, this.d.posted);
    if (this.dedupe.remembers(g, msg) && (await this.dedupe.confirmed(g, msg))) return { status: 'duplicate', groupId: g?.id };
    // Nothing awaits from the check above until the handler records the message (or remembers a
    // chatless command): a copy arriving meanwhile without a group to queue in finds it remembered.
    return this.handle(this.classify(msg, g, dm, forwarded), msg, forwarded, task);
  }

  /** `task`: the task of the message's group this runs in (none when the chat has no group). */
  private handle(intent: Intent, msg: InboundMessage, forwarded: boolean, task: GroupTask | undefined): Promise<ReceiveResult> {
    switch (intent.kind) {
      case 'refused':
        return Promise.resolve(intent.result);
      case 'chatless-command':
        return this.chatlessCommand(msg, intent.command);
      case 'open-dm':
        return this.openDm(msg, intent.agentId).then(() => this.take(msg, forwarded));
      case 'private-command':
        return this.privateCommand(intent.g, msg, intent.command, task);
      case 'ask':
        return this.ask(intent.g, msg, intent.agentIds, intent.text);
      case 'command':
        return this.command(intent.g, msg, intent.command, task);
      case 'bot-command':
        return this.botCommand(intent.g, msg);
      case 'over-limit':
        return this.overLimit(intent.g, msg, intent.refusal);
      case 'message':
        return this.message(intent.g, msg);
    }
  }

  /** What a message not taken before is (synchronous: see `take`). */
  private classify(msg: InboundMessage, g: GroupDoc | undefined, dm: string | undefined, forwarded: boolean): Intent {
    const command = parseCommand(msg.text);
    const byBot = command !== null && msg.authorKind === 'bot';
    if (!g) {
      if (byBot) return { kind: 'bot-command', g };
      if (command) return { kind: 'chatless-command', command };
      if (dm) return { kind: 'open-dm', agentId: dm };
      return { kind: 'refused', result: { status: 'no_group', reason: 'this chat has no group; use /group create' } };
    }
    if (!this.d.groups.usable(g)) return { kind: 'refused', result: UNAVAILABLE };
    if (byBot) return { kind: 'bot-command', g };
    if (command && msg.ephemeral) return { kind: 'private-command', g, command };
    const asked = command?.name === 'ask' ? askArgs(this.d.handles, g.participants, command) : null;
    if (asked && asked.ids.length > 0 && asked.text) return { kind: 'ask', g, agentIds: asked.ids, text: asked.text };
    if (command) return { kind: 'command', g, command };
    // A message handed over by another instance was acknowledged there (202) after that instance
    // checked the limits: refusing it now would drop it silently (its inbox row is then deleted).
    const refusal = forwarded && msg.ephemeral ? null : this.checkLimits(g, msg);
    if (refusal) return { kind: 'over-limit', g, refusal };
    return { kind: 'message', g };
  }

  private async chatlessCommand(msg: InboundMessage, command: ParsedCommand): Promise<ReceiveResult> {
    this.dedupe.rememberChatless(msg);
    await handleCommand(this.d.commands, msg, command, undefined);
    return { status: 'command' };
  }

  private async openDm(msg: InboundMessage, agentId: string): Promise<void> {
    const agent = this.d.agentMap.get(agentId)!;
    const g = this.d.groups.create({ channel: msg.channel, chatId: msg.chatId, dmAgentId: agentId, title: `${agent.name} · ${msg.author.name}`, participants: [agentId] });
    // Its "created" event comes from its first record (groups/projection.ts).
    await this.d.admin.persistNew(g);
  }

  /**
   * A command from a channel that can answer the asker alone (the web page). A query (`/help`,
   * `/group list|usage|config`) and any command that fails leave no trace: the answer comes back
   * in the result only. A command that changes the group is recorded as on every channel — its
   * line (hidden from agents) and the system line everyone sees — once it has succeeded, so a
   * refused one leaves nothing. `/ask` records only its question (if any) and starts the round;
   * `/stop` records only its notice.
   */
  private async privateCommand(g: GroupDoc, msg: InboundMessage, command: ParsedCommand, task?: GroupTask): Promise<ReceiveResult> {
    const ctx: CommandContext = { ...this.d.commands, reply: async () => {}, task };
    const outcome = await handleCommand(ctx, msg, command, g);
    const answer = outcome.reply ? { text: outcome.reply, kind: 'command' as const } : undefined;
    // `/ask` and `/stop` leave their own shared record (the question and answers, the stop notice).
    if (outcome.failed || !changesState(command) || ['ask', 'stop', 'approve', 'deny'].includes(command.name) || g.state.archived) {
      return { status: 'command', groupId: g.id, ephemeral: answer };
    }
    const [entry] = await this.d.recorder.record(g, { entries: [humanEntry(g, msg, true)] });
    if (outcome.reply) await this.d.commands.reply(msg, g, outcome.reply);
    return { status: 'command', groupId: g.id, entryId: entry!.id };
  }

  /** `/ask <agent> <question>`: one entry, the question agents are shown (not the command line too). */
  private async ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string): Promise<ReceiveResult> {
    this.d.botPairs.personWrote(g.id, this.d.now());
    const entry = await this.d.ask(g, msg, agentIds, text);
    return { status: 'command', groupId: g.id, entryId: entry?.id };
  }

  private async command(g: GroupDoc, msg: InboundMessage, command: ParsedCommand, task: GroupTask | undefined): Promise<ReceiveResult> {
    this.d.botPairs.personWrote(g.id, this.d.now());
    const [entry] = await this.d.recorder.record(g, { entries: [humanEntry(g, msg, true)] });
    await handleCommand({ ...this.d.commands, task }, msg, command, g);
    return { status: 'command', groupId: g.id, entryId: entry!.id };
  }

  /** A bot's command (`g` undefined: in a chat without a group): its line is kept, it is not run. */
  private async botCommand(g: GroupDoc | undefined, msg: InboundMessage): Promise<ReceiveResult> {
    if (!g) {
      this.dedupe.rememberChatless(msg);
      await this.botCommands.refuse(msg, undefined);
      return { status: 'command' };
    }
    const [entry] = await this.d.recorder.record(g, { entries: [humanEntry(g, msg, true)] });
    await this.botCommands.refuse(msg, g);
    return { status: 'command', groupId: g.id, entryId: entry!.id };
  }

  /** Refused to the sender alone where it can be (the web page), else with a notice in the chat (a bot: once). */
  private async overLimit(g: GroupDoc, msg: InboundMessage, refusal: Refusal): Promise<ReceiveResult> {
    if (msg.ephemeral) return this.ephemeralRefusal(g, msg, refusal);
    const rejected = { status: 'rejected' as const, groupId: g.id, code: refusal.code, reason: refusal.text };
    if (msg.authorKind === 'bot' && !this.botsOverLimit.first(botKey(msg, g))) return rejected;
    await this.d.recorder.notice(g, refusal.text, { decision: 'cap', seen: seenKeyOf(g, msg) });
    return rejected;
  }

  /** A message for the agents: it and its round are one record, durable before the channel acknowledges. */
  private async message(g: GroupDoc, msg: InboundMessage): Promise<ReceiveResult> {
    const addressed = this.addressedBy(g, msg);
    if (addressed.length > 0) this.d.groups.setSticky(g, addressed.at(-1)!);
    const round = this.d.newRound(g, [`${g.id}.${g.nextSeq}`], addressed, false);
    const human = humanEntry(g, msg, false);
    if (msg.authorKind !== 'bot') this.d.botPairs.personWrote(g.id, this.d.now());
    const refused = msg.authorKind === 'bot' ? this.copiesRefused(g, human, round) : undefined;
    const entries = refused ? [human, refused] : [human];
    const uncopied = refused ? [human] : undefined;
    const recorded = this.d.recorder.record(g, { entries, round: { record: round, add: true }, uncopied });
    // The round queues up now and starts while the message is being written: whatever it records
    // lands after the message, so no reply is posted before the message is durable. (If the write
    // fails, the group is refused until reloaded and the round records nothing.)
    this.d.schedule(g);
    const [entry] = await recorded;
    this.d.metrics.messageRecorded(msg.channel);
    return { status: 'recorded', groupId: g.id, entryId: entry!.id };
  }

  /**
   * A bot's message in a room of several chats is copied into the others only within its budget
   * (rooms/BotPairs): there another bot may answer the copy, and that answer's copy here, and so
   * on. Beyond it the message is kept (here and on the page) and a quiet line says why.
   */
  private copiesRefused(g: GroupDoc, human: NewEntry, round: RoundRecord): NewEntry | undefined {
    const refused = copiesFor(g, human) && this.d.botPairs.copyRefused(g.id, human, this.d.now());
    if (!refused) return undefined;
    return decision({ agents: this.d.agentMap, logger: this.d.commands.logger }, 'cap', undefined, refused, round.id);
  }

  /** Whom a message addresses: text handles, platform mentions, reply-to, in order of appearance. */
  private addressedBy(g: GroupDoc, msg: InboundMessage): string[] {
    const out = findMentions(msg.text, this.d.handles, g.participants);
    for (const id of msg.mentionedAgentIds ?? []) if (g.participants.includes(id) && !out.includes(id)) out.push(id);
    if (msg.replyToAgentId && g.participants.includes(msg.replyToAgentId) && !out.includes(msg.replyToAgentId)) out.push(msg.replyToAgentId);
    return out;
  }

  private checkLimits(g: GroupDoc, msg: InboundMessage): Refusal | null {
    const max = this.d.limits.max_message_chars;
    if (msg.text.length > max) {
      return { code: 'too_long', text: `⚠ ${msg.author.name}, that message is too long (${msg.text.length} characters; the limit is ${max}). Nothing was sent to the agents.` };
    }
    // A photo without a caption is a message: files stand in for the text.
    if (!msg.text.trim() && !msg.attachments?.length) return { code: 'empty', text: '⚠ Empty messages are ignored.' };
    if (!this.rate.allow(this.rateKey(g, msg), this.d.now())) {
      return { code: 'rate_limited', text: `⚠ ${msg.author.name}, you are sending messages faster than ${this.d.limits.user_messages_per_minute} a minute; please wait a moment.` };
    }
    return null;
  }

  /** A refusal shown to the sender alone, once, with when to try again; the shared chat stays clean. */
  private ephemeralRefusal(g: GroupDoc, msg: InboundMessage, refusal: Refusal): ReceiveResult {
    const waitMs = refusal.code === 'rate_limited' ? this.rate.retryAfterMs(this.rateKey(g, msg), this.d.now()) : 0;
    const retryAfterSeconds = refusal.code === 'rate_limited' ? Math.max(1, Math.ceil(waitMs / 1000)) : undefined;
    const text = retryAfterSeconds === undefined ? refusal.text : `${refusal.text.replace(/;? please wait a moment\.$/, '')}; try again in ${retryAfterSeconds} s.`;
    return { status: 'rejected', groupId: g.id, code: refusal.code, reason: text, ephemeral: { text, kind: 'refusal', retryAfterSeconds } };
  }

  /** Whom the per-person rate limit counts a message against (web: the client's address). */
  private rateKey(g: GroupDoc, msg: InboundMessage): string {
    return `${g.id}:${msg.channel}:${msg.rateKey ?? msg.author.id}`;
  }
}

/** The entry a human message becomes (a command's line is hidden from the agents). */
export function humanEntry(g: GroupDoc, msg: InboundMessage, command: boolean): NewEntry {
  const origin = originOf(g, msg);
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
    // Only when there are files: every human entry in memory keeps the same shape otherwise.
    ...(msg.attachments?.length ? { attachments: msg.attachments } : {}),
    // Rooms across chats: where it was written (when not the home chat), who wrote it.
    ...(origin ? { origin } : {}),
    ...(msg.authorKind ? { authorKind: msg.authorKind } : {}),
    ...(msg.authorAvatarUrl && g.links?.length ? { authorAvatarUrl: msg.authorAvatarUrl } : {}),
  };
}
