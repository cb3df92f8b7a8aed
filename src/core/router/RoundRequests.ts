/**
 * Rounds started or ended on request rather than by a message: `/ask` (and the web page's "ask
 * again" and Retry), `/stop`, and regenerating a reply. Each is one record: the round added, or
 * the rounds ended with a notice saying who stopped them.
 */
import { seenKeyOf } from '../rooms/chats.js';
import type { Clock, Logger, Peers } from '../ports.js';
import type { GroupDoc, RoundRecord } from '../records.js';
import type { RegenerateResult, StopResult, ToolDecision } from '../readModels.js';
import type { AgentDef, InboundMessage, TranscriptEntry } from '../types.js';
import { StoreUnavailableError } from '../errors.js';
import { cleanDisplayName } from '../text/displayName.js';
import { seqOfId } from '../groups/evolve.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { RunningGroups } from '../peers.js';
import type { NewEntry, Recorder } from './Recorder.js';
import { humanEntry } from './Inbound.js';
import type { Approvals } from './Approvals.js';
import type { GroupMailbox } from '../groups/GroupMailbox.js';

export interface RoundRequestDeps {
  groups: GroupManager;
  recorder: Recorder;
  running: RunningGroups;
  peers: Peers;
  clock: Clock;
  logger: Logger;
  agentMap: ReadonlyMap<string, AgentDef>;
  /** End the group's running round and cancel its model calls. */
  stopRuns: (groupId: string, why: string) => void;
  /** Make sure the group's queue will run its rounds. */
  schedule: (g: GroupDoc) => void;
  /** A history page (to tell an unknown entry from an old one). */
  messages: (groupId: string, opts: { before?: number; limit: number }) => Promise<TranscriptEntry[]>;
  approvals: Approvals;
  /** Each group's one writer: a request changes a group as a task of its mailbox. */
  mailbox: Pick<GroupMailbox, 'send'>;
}

export class RoundRequests {
  constructor(private readonly d: RoundRequestDeps) {}

  /** `/ask`: record the optional text and force these agents to answer. */
  async ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string | null): Promise<TranscriptEntry | undefined> {
    const entries: NewEntry[] = text ? [{ ...humanEntry(g, msg, false), text }] : [];
    const round = this.newRound(g, text ? [`${g.id}.${g.nextSeq}`] : [], agentIds, true);
    // Web "ask again" on a message: answer the question that message was about, not the latest one.
    if (!text && msg.replyToEntryId) round.about = this.questionFor(g, msg.replyToEntryId)?.id;
    // The command's id is remembered with it: on the web the `/ask` line itself is not stored, and a
    // retried or redelivered `/ask` must not make the agents answer twice.
    const [entry] = await this.d.recorder.record(g, { entries, round: { record: round, add: true }, seen: seenKeyOf(g, msg) });
    this.d.schedule(g);
    return entry;
  }

  /**
   * A decision on a waiting tool call from a user interface, whose users hold the web token and
   * count as admins.
   */
  async decideTool(groupId: string, id: string, approve: boolean, by: string, digest?: string): Promise<ToolDecision> {
    const g = this.d.groups.require(groupId);
    return this.d.mailbox.send(g.id, async () => {
      if (!this.d.groups.usable(g)) throw new StoreUnavailableError(`group ${g.id} is being reloaded after a failed write`);
      return { decided: true, line: await this.d.approvals.decide(g, id, approve, { name: by, admin: true }, digest) };
    });
  }

  /**
   * `/stop` (or the web API) for one group: the running round ends, its model calls in flight are
   * cancelled, and every waiting round is dropped — in one record with a notice saying who stopped
   * it, so a restart does not resume them. The human messages stay recorded (and in the agents'
   * mailboxes); the next message starts a fresh round.
   */
  async stopGroup(groupId: string, by: string): Promise<StopResult> {
    const g = this.d.groups.require(groupId);
    return this.d.mailbox.send(g.id, () => {
      if (!this.d.groups.usable(g)) throw new StoreUnavailableError(`group ${g.id} is being reloaded after a failed write`);
      return this.stopRounds(g, by);
    });
  }

  async stopRounds(g: GroupDoc, by: string, seen?: string): Promise<StopResult & { roundsDropped: number; turnsDropped: number }> {
    const name = by.trim() || 'someone';
    this.d.stopRuns(g.id, `stopped by ${name}`);
    const rounds = [...g.rounds];
    // A round not planned yet has no turns listed: count its addressed agents (or one open turn).
    const turnsDropped = rounds.reduce((n, r) => n + (r.planned ? r.queue.length : Math.max(1, r.addressed.length)), 0);
    for (const r of rounds) {
      // A turn still holding the round sees nothing left to do.
      this.d.groups.updateRound(g, r, { queue: [] });
      this.d.groups.finishRound(g, r);
    }
    const what =
      rounds.length === 0
        ? 'nothing was running'
        : `${rounds.length === 1 ? 'the round was ended' : `${rounds.length} rounds were ended`} and replies in progress cancelled`;
    await this.d.recorder.notice(g, `⏹ Stopped by ${cleanDisplayName(name) || 'someone'}: ${what}. Messages stay recorded; the next message starts afresh.`, { decision: 'stopped', seen });
    this.d.logger.info({ group: g.id, by: name, rounds: rounds.length, turns: turnsDropped }, 'stopped');
    return { stopped: true, roundsDropped: rounds.length, turnsDropped };
  }

  /** A round for the entries about to be recorded (ids known in advance: seqs are assigned in order). */
  newRound(g: GroupDoc, triggerIds: string[], addressed: string[], forced: boolean): RoundRecord {
    return { id: `r${g.nextSeq + triggerIds.length}`, createdAt: this.d.clock.now(), triggerIds, addressed, forced, planned: false, queue: [], asked: [], capped: 0, voluntary: 0 };
  }

  /** The human message an entry is about: itself, the message an agent reply answered, or the last one before it. */
  questionFor(g: GroupDoc, entryId: string): TranscriptEntry | undefined {
    const entry = this.d.groups.entryAt(g, seqOfId(entryId));
    if (!entry || entry.id !== entryId) return undefined;
    if (entry.kind === 'human' && !entry.hiddenFromAgents) return entry;
    const answered = entry.meta?.answers ? this.d.groups.entryAt(g, seqOfId(entry.meta.answers)) : undefined;
    if (answered) return answered;
    return g.transcript.filter((e) => e.seq < entry.seq && e.kind === 'human' && !e.hiddenFromAgents).at(-1);
  }

  /**
   * Another answer from the agent of reply `entryId` to the same message: a forced round for that
   * agent about the question the reply answered. Only the agent's latest reply can be regenerated
   * (an older one has been followed by others); the old reply is kept and the new one is marked.
   */
  regenerate(groupId: string, entryId: string): Promise<RegenerateResult> {
    return this.d.mailbox.send(groupId, () => this.regenerateNow(groupId, entryId));
  }

  private async regenerateNow(groupId: string, entryId: string): Promise<RegenerateResult> {
    const g = this.d.groups.get(groupId);
    if (!g) return { status: 'refused', code: 'unknown_entry', reason: `no group "${groupId}"` };
    if (g.state.archived) return { status: 'refused', code: 'archived', reason: `group "${groupId}" is dissolved` };
    // Several instances on one database: only the one running the group may start its rounds.
    if (!this.d.running.runs(g.id)) throw new StoreUnavailableError(`group ${g.id} is run by another instance (${this.d.peers.ownerOf(g.id) ?? 'unknown'}); try again`);
    if (!this.d.groups.usable(g)) throw new StoreUnavailableError('storage is unavailable');
    const entry = this.d.groups.entryAt(g, seqOfId(entryId));
    if (!entry || entry.id !== entryId) {
      const [stored] = Number.isSafeInteger(seqOfId(entryId)) && seqOfId(entryId) > 0 ? await this.d.messages(g.id, { before: seqOfId(entryId) + 1, limit: 1 }) : [];
      if (stored?.id !== entryId) return { status: 'refused', code: 'unknown_entry', reason: `no message "${entryId}" in this group` };
      if (stored.kind !== 'agent') return { status: 'refused', code: 'not_agent_reply', reason: `message "${entryId}" is not an agent's reply` };
      return { status: 'refused', code: 'not_latest', reason: `only ${stored.authorName}'s latest reply can be regenerated` };
    }
    if (entry.kind !== 'agent' || !entry.agentId) return { status: 'refused', code: 'not_agent_reply', reason: `message "${entryId}" is not an agent's reply` };
    const agentId = entry.agentId;
    const name = this.d.agentMap.get(agentId)?.name ?? entry.authorName;
    if (!g.participants.includes(agentId)) return { status: 'refused', code: 'not_member', reason: `${name} is no longer in this group` };
    const latest = g.transcript.filter((e) => e.kind === 'agent' && e.agentId === agentId).at(-1);
    if (latest?.id !== entryId) return { status: 'refused', code: 'not_latest', reason: `only ${name}'s latest reply can be regenerated` };
    if (g.rounds.some((r) => r.regenerates === entryId)) return { status: 'refused', code: 'not_latest', reason: `${name} is already writing another answer to this` };
    const round = this.newRound(g, [], [agentId], true);
    // Rounds without a new entry share the next seq; the reply's seq keeps this id unique.
    round.id = `${round.id}-re${entry.seq}`;
    round.about = this.questionFor(g, entryId)?.id;
    round.regenerates = entryId;
    await this.d.recorder.record(g, { round: { record: round, add: true } });
    this.d.schedule(g);
    return { status: 'queued', groupId: g.id, roundId: round.id, agentId };
  }
}
