/**
 * The in-memory set of groups and sessions, and the only place that changes them. Every
 * mutation goes through here so persistence, transcript trimming and views stay consistent.
 */
import type { GroupDoc, GroupSummary, GroupView, Logger, SessionDoc, Store, UsageTotals } from '../ports.js';
import type { AgentDef, ChannelKind, GroupConfig, TranscriptEntry } from '../types.js';
import { UserError } from '../errors.js';

/** Entries kept in a group file when every session has seen them. */
export const TRANSCRIPT_TAIL = 300;
/** Hard bound even when a session lags far behind (its oldest unseen entries are then lost). */
export const TRANSCRIPT_MAX = 2000;
/** Platform message ids remembered per group for dedupe. */
export const SEEN_MAX = 500;
/** Transcript messages a newcomer is shown on `/group add` (SPEC §3). */
export const JOIN_CONTEXT = 20;

export function emptyUsage(): UsageTotals {
  return { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
}

/** Entries an agent is shown: humans, agents, and system notices meant for agents. */
export function isObservable(e: TranscriptEntry): boolean {
  return !e.hiddenFromAgents && (e.kind === 'human' || e.kind === 'agent' || e.kind === 'system');
}

export class GroupManager {
  private readonly groups = new Map<string, GroupDoc>();
  private readonly byChat = new Map<string, string>();
  private readonly sessions = new Map<string, SessionDoc>();

  constructor(
    private readonly store: Store,
    private readonly agents: ReadonlyMap<string, AgentDef>,
    private readonly defaults: GroupConfig,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {}

  load(groups: GroupDoc[], sessions: SessionDoc[]): void {
    for (const g of groups) {
      // Config keys added in newer versions get their defaults.
      g.config = { ...this.defaults, ...g.config };
      g.participants = g.participants.filter((p) => this.agents.has(p));
      this.groups.set(g.id, g);
      if (!g.state.archived) this.byChat.set(chatKey(g.channel, g.chatId, g.dmAgentId), g.id);
    }
    for (const s of sessions) if (this.groups.has(s.groupId)) this.sessions.set(sessionKey(s.groupId, s.agentId), s);
  }

  all(): GroupDoc[] {
    return [...this.groups.values()];
  }

  get(id: string): GroupDoc | undefined {
    return this.groups.get(id);
  }

  /** A live group or a 404 UserError. */
  require(id: string): GroupDoc {
    const g = this.groups.get(id);
    if (!g || g.state.archived) throw new UserError(`unknown group "${id}"`, 'not_found', 404);
    return g;
  }

  /** The live (not archived) group bound to a chat. */
  find(channel: ChannelKind, chatId: string, dmAgentId?: string): GroupDoc | undefined {
    const id = this.byChat.get(chatKey(channel, chatId, dmAgentId));
    return id ? this.groups.get(id) : undefined;
  }

  create(input: {
    channel: ChannelKind;
    chatId: string;
    title: string;
    participants: string[];
    id?: string | undefined;
    config?: Partial<GroupConfig> | undefined;
    dmAgentId?: string | undefined;
  }): GroupDoc {
    if (input.chatId && this.find(input.channel, input.chatId, input.dmAgentId)) throw new UserError('this chat already has a group; use /group add or /group dissolve', 'conflict', 409);
    const participants = [...new Set(input.participants)];
    const unknown = participants.filter((p) => !this.agents.has(p));
    if (unknown.length) throw new UserError(`unknown agent(s): ${unknown.join(', ')}; known: ${[...this.agents.keys()].join(', ')}`, 'unknown_agent', 400);
    if (participants.length === 0) throw new UserError('a group needs at least one agent', 'bad_request', 400);
    const id = input.id ?? this.freshId(input.channel, input.dmAgentId ? `${input.chatId}-${input.dmAgentId}` : input.chatId, input.title);
    if (this.groups.has(id)) {
      const archived = this.groups.get(id)!.state.archived;
      throw new UserError(`a group with id "${id}" already exists${archived ? ' (archived; its history is kept)' : ''}`, 'conflict', 409);
    }
    const doc: GroupDoc = {
      version: 1,
      id,
      title: input.title.trim() || id,
      channel: input.channel,
      chatId: input.chatId || id,
      ...(input.dmAgentId ? { dmAgentId: input.dmAgentId } : {}),
      participants,
      config: { ...this.defaults, ...input.config },
      createdAt: this.now(),
      state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} },
      transcript: [],
      nextSeq: 1,
      rounds: [],
      seen: [],
    };
    this.groups.set(id, doc);
    this.byChat.set(chatKey(doc.channel, doc.chatId, doc.dmAgentId), id);
    return doc;
  }

  archive(g: GroupDoc): void {
    g.state.archived = true;
    g.rounds = [];
    this.byChat.delete(chatKey(g.channel, g.chatId, g.dmAgentId));
  }

  rekey(g: GroupDoc, newChatId: string): void {
    this.byChat.delete(chatKey(g.channel, g.chatId, g.dmAgentId));
    g.chatId = newChatId;
    this.byChat.set(chatKey(g.channel, g.chatId, g.dmAgentId), g.id);
  }

  session(g: GroupDoc, agentId: string): SessionDoc {
    const key = sessionKey(g.id, agentId);
    let s = this.sessions.get(key);
    if (!s) {
      // Normally made (and saved) when the agent joins; this fallback shows it the recent context.
      s = { version: 1, groupId: g.id, agentId, history: [], cursor: this.contextStart(g), summary: null, usage: emptyUsage() };
      this.sessions.set(key, s);
    }
    return s;
  }

  /** Create and persist a fresh session for an agent joining now; it is shown the recent context. */
  async join(g: GroupDoc, agentId: string, withContext: boolean): Promise<SessionDoc> {
    const s: SessionDoc = { version: 1, groupId: g.id, agentId, history: [], cursor: withContext ? this.contextStart(g) : g.nextSeq - 1, summary: null, usage: emptyUsage() };
    const old = this.sessions.get(sessionKey(g.id, agentId));
    // A returning member keeps its memory but is brought up to date through its mailbox.
    const doc = old ? { ...old, cursor: Math.min(old.cursor, s.cursor) } : s;
    this.sessions.set(sessionKey(g.id, agentId), doc);
    await this.store.saveSession(doc);
    return doc;
  }

  /** Cursor that shows the last JOIN_CONTEXT human/agent messages. */
  private contextStart(g: GroupDoc): number {
    const ctx = g.transcript.filter((e) => !e.hiddenFromAgents && (e.kind === 'human' || e.kind === 'agent')).slice(-JOIN_CONTEXT);
    return ctx.length > 0 ? ctx[0]!.seq - 1 : g.nextSeq - 1;
  }

  /** Observations not yet shown to this agent, oldest first. */
  mailbox(g: GroupDoc, s: SessionDoc): TranscriptEntry[] {
    return g.transcript.filter((e) => e.seq > s.cursor && e.agentId !== s.agentId && isObservable(e));
  }

  /** Append a transcript entry (id and seq assigned) and trim the tail. */
  append(g: GroupDoc, entry: Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> & { ts?: number }): TranscriptEntry {
    const seq = g.nextSeq++;
    const full: TranscriptEntry = { ...entry, id: `${g.id}.${seq}`, seq, ts: entry.ts ?? this.now() };
    g.transcript.push(full);
    this.trim(g);
    return full;
  }

  /** Keep the tail short, but never drop what a participant has not been shown yet. */
  private trim(g: GroupDoc): void {
    if (g.transcript.length <= TRANSCRIPT_TAIL) return;
    let minCursor = Infinity;
    for (const p of g.participants) minCursor = Math.min(minCursor, this.sessions.get(sessionKey(g.id, p))?.cursor ?? Infinity);
    const pendingRefs = new Set(g.rounds.flatMap((r) => r.triggerIds));
    let drop = g.transcript.length - TRANSCRIPT_TAIL;
    let i = 0;
    while (i < drop && (g.transcript[i]!.seq <= minCursor || g.transcript.length - i > TRANSCRIPT_MAX) && !pendingRefs.has(g.transcript[i]!.id)) i++;
    drop = i;
    if (drop > 0) {
      if (g.transcript.length - drop > TRANSCRIPT_MAX - 1) this.logger.warn({ group: g.id }, 'transcript bound reached; a lagging session loses its oldest observations');
      g.transcript.splice(0, drop);
    }
  }

  /** Remember a platform message id; false if it was seen before. */
  markSeen(g: GroupDoc, key: string): boolean {
    if (g.seen.includes(key)) return false;
    g.seen.push(key);
    if (g.seen.length > SEEN_MAX) g.seen.splice(0, g.seen.length - SEEN_MAX);
    return true;
  }

  save(g: GroupDoc): Promise<void> {
    return this.store.saveGroup(g);
  }

  saveSession(s: SessionDoc): Promise<void> {
    return this.store.saveSession(s);
  }

  sessionsOf(g: GroupDoc): SessionDoc[] {
    return g.participants.map((p) => this.session(g, p));
  }

  view(g: GroupDoc): GroupView {
    return {
      id: g.id,
      title: g.title,
      channel: g.channel,
      chatId: g.chatId,
      participants: [...g.participants],
      config: { ...g.config },
      archived: g.state.archived,
      createdAt: g.createdAt,
    };
  }

  summary(g: GroupDoc): GroupSummary {
    const last = [...g.transcript].reverse().find((e) => e.kind === 'human' || e.kind === 'agent');
    return {
      ...this.view(g),
      messageCount: g.nextSeq - 1,
      lastMessage: last ? { authorName: last.authorName, text: last.text.slice(0, 140), ts: last.ts } : null,
      sticky: g.state.sticky,
      muted: [...g.state.muted],
    };
  }

  private freshId(channel: ChannelKind, chatId: string, title: string): string {
    const base = channel === 'web' ? slugify(title) || 'room' : `${channel === 'telegram' ? 'tg' : 'dc'}-${slugify(chatId) || 'chat'}`;
    let id = base.slice(0, 60);
    // Archived ids stay taken: their files keep the old history.
    for (let n = 2; this.groups.has(id); n++) id = `${base.slice(0, 56)}-${n}`;
    return id;
  }
}

/** Private chats share one chat id across bots, so the agent is part of their key. */
export function chatKey(channel: ChannelKind, chatId: string, dmAgentId?: string): string {
  return dmAgentId ? `${channel}:${chatId}#${dmAgentId}` : `${channel}:${chatId}`;
}

function sessionKey(groupId: string, agentId: string): string {
  return `${groupId}/${agentId}`;
}

/** Lower-case slug usable as a file name. */
export function slugify(s: string): string {
  return s
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
}
