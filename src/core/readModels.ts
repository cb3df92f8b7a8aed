/**
 * Read models: what the core answers to user interfaces, APIs and operators — views of groups and
 * their history, search results, live events, readiness and status. Shapes only; nothing here is
 * persisted (see records.ts) or implemented by an adapter (see ports.ts).
 */
import type { ChannelKind, GroupConfig, Reaction, TranscriptEntry } from './types.js';
import type { UsageTotals } from './records.js';
import type { LinkedChat } from './roomTypes.js';

/** A group as adapters may see it (read-only snapshot). */
export interface GroupView {
  id: string;
  title: string;
  channel: ChannelKind;
  chatId: string;
  /** The room's other chats, when the group lives in several (see roomTypes.ts). */
  links?: LinkedChat[] | undefined;
  participants: string[];
  config: GroupConfig;
  archived: boolean;
  createdAt: number;
}

/** What the router offers a channel adapter while it runs. */
/** What `/stop` did; the counts are null when another instance runs the group (it was handed over). */
export interface StopResult {
  stopped: true;
  roundsDropped: number | null;
  turnsDropped: number | null;
}

/** What `ChannelHost.regenerate` answers; the web API maps the refusals to 404 / 409. */
export type RegenerateResult =
  | { status: 'queued'; groupId: string; roundId: string; agentId: string }
  | { status: 'refused'; code: 'unknown_entry' | 'not_agent_reply' | 'not_latest' | 'not_member' | 'archived'; reason: string };

/** A group as listed in the sidebar / `GET /api/groups`. */
export interface GroupSummary extends GroupView {
  messageCount: number;
  lastMessage: { authorName: string; text: string; ts: number } | null;
  sticky: string | null;
  /** Agents muted in this group. */
  muted: string[];
}

/** A group with everything `/group list` shows. */
export interface GroupDetail extends GroupSummary {
  /** Per participant: status for the members panel. */
  members: Array<{ agentId: string; muted: boolean; cooldownLeftMs: number; lastSpokeAt: number | null }>;
  warnings: string[];
  usage: Record<string, UsageTotals>;
}

/** Live events (SSE on the web feed). `seq` orders message-like events within a group. */
export type GatewayEvent =
  | { type: 'message'; groupId: string; entry: TranscriptEntry }
  | { type: 'decision'; groupId: string; entry: TranscriptEntry }
  | { type: 'typing'; groupId: string; agentId: string; active: boolean }
  /** An agent thinking over a turn nobody asked it for: it may still pass, so it is not typing. */
  | { type: 'considering'; groupId: string; agentId: string; active: boolean }
  | { type: 'delta'; groupId: string; agentId: string; turnId: string; text: string }
  | { type: 'member'; groupId: string; participants: string[]; added?: string | undefined; removed?: string | undefined }
  | { type: 'config'; groupId: string; config: GroupConfig }
  | { type: 'group'; groupId: string; action: 'created' | 'updated' | 'dissolved' }
  /**
   * An entry recorded earlier changed: its author edited it (`text`, `editedAt`) or deleted it
   * (`deleted`, `text` ''), or its reactions changed. `reactions` is always its whole list after
   * the change ([] for none); `text` is absent when it is the text as first written (a reaction
   * to a message never edited).
   */
  | { type: 'edited'; groupId: string; id: string; seq: number; text?: string | undefined; editedAt?: number | undefined; deleted?: true | undefined; deletedAt?: number | undefined; reactions: Reaction[] };

/** A page of history: its entries, oldest first, and whether older ones exist. */
export interface TranscriptPage {
  entries: TranscriptEntry[];
  hasMore: boolean;
}

/** A page of history around one entry: oldest first, and whether older and newer entries exist. */
export interface AroundPage {
  entries: TranscriptEntry[];
  hasMore: boolean;
  hasNewer: boolean;
}

/** One search result as the web API answers it. */
export interface SearchResult {
  groupId: string;
  groupTitle: string;
  id: string;
  seq: number;
  ts: number;
  kind: TranscriptEntry['kind'];
  authorId: string;
  authorName: string;
  agentId?: string | undefined;
  /** Plain text around the match; never markup. */
  snippet: string;
  /** The matched words in `snippet`, as [start, end) UTF-16 offsets. */
  highlights: Array<[number, number]>;
}

export interface SearchPage {
  results: SearchResult[];
  next: SearchCursor | null;
}

/** One part of a channel: a Telegram agent's bot, a Discord channel's webhook. */
export interface ChannelPartStatus {
  ok: boolean;
  /** What it is doing: 'ready', 'starting', 'unauthorized', 'unreachable', ... */
  state?: string | undefined;
  /** Why it is not ok, in one line that names no secret. */
  error?: string | undefined;
  /** Platform name (a Telegram bot's @username, a Discord channel's #name). */
  name?: string | undefined;
  /** Something worth knowing that does not stop it working (e.g. privacy mode). */
  note?: string | undefined;
}

/** Whether a channel is connected, and its parts (for `/readyz` and `chorus status`). */
export interface ChannelStatus {
  ok: boolean;
  state?: string | undefined;
  error?: string | undefined;
  /** Telegram: per agent id. */
  bots?: Record<string, ChannelPartStatus> | undefined;
  /** Discord: per channel id. */
  channels?: Record<string, ChannelPartStatus> | undefined;
}

/** A group the store did not load because its data could not be read, and what is wrong with it. */
export interface UnreadableGroup {
  group: string;
  problem: string;
}

/** What `/readyz` answers: ready when the store takes writes and every channel is connected. */
export interface Readiness {
  ready: boolean;
  store: { ok: boolean; writable: boolean; error: string | null; unreadableGroups?: UnreadableGroup[] | undefined };
  channels: Partial<Record<ChannelKind, ChannelStatus>>;
  /** Several instances on one database: this instance's leases (absent for a single instance). */
  cluster?: ClusterStatus | undefined;
  /** MCP tool servers, when any is configured. Not part of `ready`: a down one only degrades. */
  tools?: ToolServersStatus | undefined;
}

/** One MCP tool server (`tools:` in the config) as `/readyz` shows it. */
export interface ToolServerPartStatus {
  ok: boolean;
  /** 'connecting', 'up' or 'down'. */
  state: string;
  transport: 'stdio' | 'http';
  /** Why it is not up, in one line that names no secret. */
  error?: string | undefined;
  /** How many tools it offers now. */
  tools: number;
  /** Process restarts (stdio) or reconnections (HTTP) so far. */
  restarts: number;
}

/**
 * The MCP tool servers. One that is down leaves Chorus ready — agents answer without its tools —
 * but `degraded`, so an operator sees it without a probe restarting a working daemon.
 */
export interface ToolServersStatus {
  ok: boolean;
  state: 'ready' | 'degraded';
  servers: Record<string, ToolServerPartStatus>;
}

/** What an instance of a cluster reports about itself (`/readyz`, `chorus status`). */
export interface ClusterStatus {
  /** False when its leases cannot be renewed: it runs no group then. */
  ok: boolean;
  instanceId: string;
  /** Groups this instance runs now. */
  ownedGroups: number;
  /** Instances whose heartbeat is fresh, this one included. */
  liveInstances: number;
  /** Connections (Telegram long polls, the Discord gateway) this instance holds. */
  connections?: string[] | undefined;
  error?: string | undefined;
}

/** Where a page of search results ended: results are ordered newest first by (ts, groupId, seq). */
export interface SearchCursor {
  ts: number;
  groupId: string;
  seq: number;
}

/** A decision on a waiting tool call was made (`line`: what the chat was told; null when another instance took it). */
export interface ToolDecision {
  decided: true;
  line: string | null;
}
