/**
 * The in-memory set of groups and sessions, and the only place that changes them. Every
 * mutation goes through here so persistence, transcript trimming and views stay consistent.
 */
import type { GroupDoc, GroupSummary, GroupView, Logger, SessionDoc, Store, UsageTotals } from '../ports.js';
import type { AgentDef, ChannelKind, GroupConfig, TranscriptEntry, Usage } from '../types.js';
import { UserError } from '../errors.js';

/**
 * Entries kept in a group file. Every save rewrites the file, so this bounds the bytes written
 * per message; entries a silent agent has not been shown yet move to its session's backlog.
 */
export const TRANSCRIPT_TAIL = 150;
/** Trim in batches, so a lagging session's file is rewritten once per batch, not per message. */
const TRIM_BATCH = 50;
/** Unseen observations kept for one silent agent; older ones are dropped (and logged). */
export const BACKLOG_MAX = 300;
/** Platform message ids remembered per group for dedupe. */
export const SEEN_MAX = 500;
/** Transcript messages a newcomer is shown on `/group add` (SPEC §3). */
export const JOIN_CONTEXT = 20;

export function emptyUsage(): UsageTotals {
  return { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
}

/** Add one call's figures to running totals. */
export function addUsage(totals: UsageTotals, res: { usage: Usage; costUsd?: number | null | undefined }): void {
  totals.calls++;
  totals.inputTokens += res.usage.inputTokens;
  totals.outputTokens += res.usage.outputTokens;
  totals.cacheReadTokens += res.usage.cacheReadTokens;
  totals.cacheWriteTokens += res.usage.cacheWriteTokens;
  totals.costUsd += res.costUsd ?? 0;
}

/** Entries an agent is shown: humans, agents, and system notices meant for agents. */
export function isObservable(e: TranscriptEntry): boolean {
  return !e.hiddenFromAgents && (e.kind === 'human' || e.kind === 'agent' || e.kind === 'system');
}

export class GroupManager {
  private readonly groups = new Map<string, GroupDoc>();
  private readonly byChat = new Map<string, string>();
  private readonly sessions = new Map<string, SessionDoc>();
  /** Sessions whose backlog changed; saved (before their group) by the next `save`. */
  private readonly dirty = new Map<string, Set<SessionDoc>>();

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

  /** Observations not yet shown to this agent, oldest first (backlog, then the group's tail). */
  mailbox(g: GroupDoc, s: SessionDoc): TranscriptEntry[] {
    const fresh = g.transcript.filter((e) => e.seq > s.cursor && e.agentId !== s.agentId && isObservable(e));
    if (!s.backlog?.length) return fresh;
    // After a crash between the two writes an entry can be in both places: keep it once.
    const first = fresh[0]?.seq ?? Infinity;
    return [...s.backlog.filter((e) => e.seq > s.cursor && e.seq < first), ...fresh];
  }

  /** The agent has been shown everything up to `seq`. */
  advance(s: SessionDoc, seq: number): void {
    s.cursor = Math.max(s.cursor, seq);
    if (s.backlog) {
      s.backlog = s.backlog.filter((e) => e.seq > s.cursor);
      if (s.backlog.length === 0) delete s.backlog;
    }
  }

  /** Append a transcript entry (id and seq assigned) and trim the tail. */
  append(g: GroupDoc, entry: Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> & { ts?: number }): TranscriptEntry {
    const seq = g.nextSeq++;
    const full: TranscriptEntry = { ...entry, id: `${g.id}.${seq}`, seq, ts: entry.ts ?? this.now() };
    g.transcript.push(full);
    this.trim(g);
    return full;
  }

  /** Keep the tail short; what a participant has not been shown yet moves to its backlog. */
  private trim(g: GroupDoc): void {
    if (g.transcript.length <= TRANSCRIPT_TAIL + TRIM_BATCH) return;
    // Rounds still waiting refer to their human messages: never cut past the first of them.
    const pending = new Set(g.rounds.flatMap((r) => r.triggerIds));
    let cut = g.transcript.length - TRANSCRIPT_TAIL;
    const stop = g.transcript.findIndex((e) => pending.has(e.id));
    if (stop >= 0) cut = Math.min(cut, stop);
    if (cut <= 0) return;
    const removed = g.transcript.splice(0, cut);
    for (const p of g.participants) {
      const s = this.sessions.get(sessionKey(g.id, p));
      if (!s) continue;
      const unseen = removed.filter((e) => e.seq > s.cursor && e.agentId !== p && isObservable(e)).map(({ meta: _meta, postedIds: _ids, ...e }) => e);
      if (unseen.length === 0) continue;
      const backlog = [...(s.backlog ?? []), ...unseen];
      if (backlog.length > BACKLOG_MAX) {
        this.logger.warn({ group: g.id, agent: p, dropped: backlog.length - BACKLOG_MAX }, 'agent silent for long: its oldest unseen observations are dropped');
        backlog.splice(0, backlog.length - BACKLOG_MAX);
      }
      s.backlog = backlog;
      let set = this.dirty.get(g.id);
      if (!set) this.dirty.set(g.id, (set = new Set()));
      set.add(s);
    }
  }

  /** Remember a platform message id; false if it was seen before. */
  markSeen(g: GroupDoc, key: string): boolean {
    if (g.seen.includes(key)) return false;
    g.seen.push(key);
    if (g.seen.length > SEEN_MAX) g.seen.splice(0, g.seen.length - SEEN_MAX);
    return true;
  }

  /** Persist a group; sessions that received trimmed observations are written first. */
  async save(g: GroupDoc): Promise<void> {
    const dirty = this.dirty.get(g.id);
    if (dirty) {
      this.dirty.delete(g.id);
      await Promise.all([...dirty].map((s) => this.store.saveSession(s)));
    }
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
