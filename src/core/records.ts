/**
 * The persisted model: what a group is made of (head, state, rounds, sessions) and the records and
 * checkpoints its log holds. Shared by the core, which keeps groups in memory, and the stores,
 * which write and read them.
 */
import type { Attachment } from './fileTypes.js';
import type { ChannelKind, ChatTurn, GroupConfig, Reaction, TranscriptEntry, Usage } from './types.js';
import type { ToolOutcome } from './toolTypes.js';
import type { CarryItem, ChatAddress, LinkCode, LinkedChat } from './roomTypes.js';

/** Accumulated token figures. */
export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  /** Calls whose model had no known price: their cost is not in `costUsd` ("price unknown"). */
  unpricedCalls?: number | undefined;
}

/** A turn the router still owes within a recorded round. */
export interface PlannedTurn {
  agentId: string;
  reason: 'addressed' | 'voluntary' | 'reaction' | 'sticky' | 'rotation' | 'selected' | 'direct';
  depth: number;
  /** For reactions: the agent whose reply mentioned this one. */
  by?: string | undefined;
}

/** A round recorded before it ran, so a restart can finish it. */
export interface RoundRecord {
  id: string;
  createdAt: number;
  /** Transcript ids of the human message(s) this round answers (several when batched). */
  triggerIds: string[];
  /** Agents named by the human(s), in order; they are always answered. */
  addressed: string[];
  /** Set when the round was forced by /ask. */
  forced: boolean;
  /** Set once the router has planned the turns (addressed / strategy / voluntary). */
  planned: boolean;
  /** Turns still to run, in order. */
  queue: PlannedTurn[];
  /** Agents already asked voluntarily (never asked twice). */
  asked: string[];
  /** Delivered voluntary + reaction replies (the turn cap counts these). */
  capped: number;
  /** Delivered voluntary replies. */
  voluntary: number;
  /** A forced round about one message (web "ask again" / regenerate): its entry id, quoted in the prompt. */
  about?: string | undefined;
  /** Regenerate: the id of the reply this round answers again (kept; the new reply points to it). */
  regenerates?: string | undefined;
}

/** Mutable state of a group that must survive restarts. */
export interface GroupState {
  muted: string[];
  /** agentId → epoch ms of its last delivered reply (cooldowns, "last spoke"). */
  lastSpoke: Record<string, number>;
  sticky: string | null;
  rrIndex: number;
  archived: boolean;
  usage: Record<string, UsageTotals>;
  /**
   * agentId → the last transcript seq its last *delivered reply* had seen. A human message at or
   * below it was answered by that reply; a pass or a failure never moves it (so a mention
   * seen in a voluntary turn that passed still gets its addressed turn). Absent in older data.
   */
  repliedUpTo?: Record<string, number> | undefined;
  /** Today's (UTC) model usage of the group, for `budget`; absent until the first call. */
  today?: DayUsage | undefined;
  /** Tool calls of turns still running, oldest first; a turn's calls go when the turn ends. */
  tools?: ToolCallRecord[] | undefined;
  /** Edits and deletions still to carry to copies in the room's other chats, oldest first. */
  carry?: CarryItem[] | undefined;
  /** Codes made by `/group link` not used yet (expired ones go when the next is made). */
  linkCodes?: LinkCode[] | undefined;
}

/**
 * One tool call of a running turn, recorded before it runs and again when it ends, so a restart
 * knows what was asked, approved, begun and answered, and never runs a call with side effects twice.
 */
export interface ToolCallRecord {
  /** Chorus's id of the call, unique in the group: what `/approve <id>` names. */
  id: string;
  /** The turn it belongs to: `round:agent:depth`. */
  turn: string;
  roundId: string;
  agentId: string;
  /** The model ↔ tools round trip of the turn it was made in (0, 1, …). */
  step: number;
  /** What the model said before its calls in this step (on each call of the step). */
  stepText: string;
  /** The provider's id of the call and the tool's name as the model knows it. */
  callId: string;
  name: string;
  server: string;
  tool: string;
  input: Record<string, unknown>;
  readOnly: boolean;
  idempotent: boolean;
  /** `none`: no person needed. `waiting` until `deadline`; then `approved`, `denied` or `expired`. */
  approval: 'none' | 'waiting' | 'approved' | 'denied' | 'expired';
  approvers?: 'admins' | 'anyone' | undefined;
  deadline?: number | undefined;
  /** The request for approval is in the transcript (written in the same record as this flag). */
  asked?: true | undefined;
  decidedBy?: string | undefined;
  /** Runs begun: 1 once it was recorded as starting, 2 after the one retry a read-only or idempotent call gets. */
  started: number;
  /** How it ended, and what the model was given. */
  /** `attachments`: images the tool returned, kept; the agent's reply posts them. */
  result?: { outcome: ToolOutcome; content: string; bytes: number; attachments?: Attachment[] | undefined } | undefined;
  at: number;
}

/** One UTC day's model usage of a group and which budget notices it has posted. */
export interface DayUsage {
  /** YYYY-MM-DD (UTC). */
  day: string;
  tokens: number;
  costUsd: number;
  /** Some call's cost was unknown (no price): `costUsd` is a lower bound. */
  costUnknown: boolean;
  /** The 80% warning was posted today. */
  warned: boolean;
  /** The "budget used up" notice was posted today. */
  refused: boolean;
}

/** What describes a group apart from its transcript, rounds and sessions: small, rewritten whole. */
export interface GroupHead {
  id: string;
  title: string;
  channel: ChannelKind;
  chatId: string;
  /** Set for a private chat with one agent's bot: the chat id alone is shared by every bot. */
  dmAgentId?: string | undefined;
  /** The room's other chats (a group in one chat has none). */
  links?: LinkedChat[] | undefined;
  participants: string[];
  config: GroupConfig;
  createdAt: number;
  state: GroupState;
}

/**
 * A group as the core holds it in memory. Only a bounded tail of the transcript lives here; the
 * whole transcript is in the store's log and is read back page by page (`Store.readEntries`).
 */
export interface GroupDoc extends GroupHead {
  /** The newest entries (bounded), oldest first. */
  transcript: TranscriptEntry[];
  /** Seq the next entry gets. */
  nextSeq: number;
  rounds: RoundRecord[];
  /** Dedupe memory: platform message key → epoch ms first seen (kept at least 24 hours). */
  seen: Map<string, number>;
  /** Replies and notices not yet posted by their channel (resumed after a restart). */
  undelivered: TranscriptEntry[];
  /** Each member's (and former member's) session in this group, by agent id. */
  sessions: Map<string, SessionDoc>;
}

/**
 * One agent's private conversation in one group. The mailbox is not copied here: it is every
 * observable transcript entry after `cursor` that the agent did not write. Draining it advances
 * `cursor` in the same log record that appends the turn to `history`, so each observation
 * reaches the agent exactly once, across passes, batches and restarts.
 */
export interface SessionDoc {
  groupId: string;
  agentId: string;
  history: ChatTurn[];
  /** Seq of the last transcript entry this agent has been shown. */
  cursor: number;
  summary: string | null;
  usage: UsageTotals;
}

/** How one record changes one session; replaying it gives the same session again. */
export interface SessionDelta {
  agentId: string;
  /** Start from an empty session first (`/group reset`, a new member, a migrated session). */
  reset?: true | undefined;
  /** Drop this many turns from the start of the history (folded into the summary). */
  drop?: number | undefined;
  /** Turns appended to the history. */
  append?: ChatTurn[] | undefined;
  cursor: number;
  summary: string | null;
  usage: UsageTotals;
}

/**
 * One change to a group, as its log records it. `evolve` (groups/evolve.ts) is the one function
 * that applies a change: to the group held in memory the moment the change is made, and to the
 * group rebuilt from the log at start. Whatever a change needs that could differ between the two
 * (a time, a new value computed from the old) travels in it, so both give the same state.
 */
export type GroupChange =
  /** The group's whole description: written when the group is made (and read from older logs). */
  | { t: 'head'; head: GroupHead }
  | { t: 'join'; agentId: string }
  /** The agent leaves; it stops being sticky or the configured last speaker. */
  | { t: 'leave'; agentId: string }
  | { t: 'config'; config: GroupConfig }
  | { t: 'mute'; agentId: string; muted: boolean }
  | { t: 'sticky'; agentId: string | null }
  /** Round-robin moved on: the next turn goes to eligible[next % eligible.length]. */
  | { t: 'rotation'; next: number }
  /** A reply of the agent was delivered at `at`; it had seen the transcript up to `seenUpTo`. */
  | { t: 'spoke'; agentId: string; at: number; seenUpTo?: number | undefined }
  /** A model call's cost, counted for the group under `key` (an agent, or "(selector)") and for the UTC day of `at`. */
  | { t: 'usage'; key: string; at: number; usage: Usage; costUsd?: number | null | undefined }
  /** A budget notice was posted on the UTC day of `at`. */
  | { t: 'budget-notice'; which: 'warned' | 'refused'; at: number }
  | { t: 'archive' }
  /** The home chat (`from` absent) or the linked chat `from` changed its platform id (Telegram group → supergroup). */
  | { t: 'rekey'; chatId: string; from?: ChatAddress | undefined }
  /** Another chat joins the room (`/group link`, `groups[].chats`); `code`: the link code it used, gone now. */
  | { t: 'link'; chat: LinkedChat; code?: string | undefined }
  /** A linked chat leaves the room; entries not yet posted there are not posted. */
  | { t: 'unlink'; channel: ChannelKind; chatId: string }
  /** A link code was made (valid until `code.until`); expired ones are forgotten. */
  | { t: 'link-code'; code: LinkCode; at: number }
  /** An edit or deletion to carry to copies in other chats. */
  | { t: 'carry'; items: CarryItem[] }
  /** A carried edit reached one chat (or could not: that copy is left as it was). */
  | { t: 'carried'; seq: number; chat: string; at: number }
  /** A round is added (`set` is the whole round) or changes (`set` holds what changed). */
  | { t: 'round'; id: string; set: Partial<RoundRecord> }
  /** A round finished or was abandoned. */
  | { t: 'round-done'; id: string }
  /** An agent's session changes (see SessionDelta). */
  | ({ t: 'session' } & SessionDelta)
  /** A platform message id to remember for dedupe (besides those of human entries). */
  | { t: 'seen'; key: string; at: number }
  /** A tool call is recorded (before it runs, or before a person is asked to approve it). */
  | { t: 'tool-call'; call: ToolCallRecord }
  /** A recorded tool call changes: decided, begun, or answered. */
  | { t: 'tool'; id: string; set: Partial<Omit<ToolCallRecord, 'id'>> }
  /** The turn ended: its tool calls are forgotten (their steps are in the transcript). */
  | { t: 'tools-done'; turn: string };

/** What a record says about the delivery of an entry recorded earlier. */
export interface DeliveryOutcome {
  seq: number;
  delivery: 'posted' | 'failed';
  postedIds?: string[] | undefined;
  /** The copy in this chat of the room (a `chatKeyOf` key); absent: the home chat's post. */
  chat?: string | undefined;
  /** Who posted the copy (`PostedMessage.via`); kept on the copy only (a home post is changed as its author). */
  via?: string | undefined;
}

/**
 * A message recorded earlier changed at `at`: its author changed (`text`) or deleted (`deleted`)
 * it, or people's reactions to it changed. Each edit describes the message's whole edit state,
 * and the latest one wins (PostgreSQL keeps only that one; the file store and `evolve` apply
 * them all in order, which gives the same): a reaction carries the text and `editedAt` of an
 * edited message, an edit of the text carries the reactions; absent fields are "never changed"
 * (no reactions, the text as written). `notes` lists every note entry that told the agents
 * about the message (its edits, its reactions), so that a deletion hides them too.
 */
export interface EntryEdit {
  seq: number;
  /** The text as its author last changed it. */
  text?: string | undefined;
  /** When the text was last changed; absent with `text`: at `at` (an edit of the text itself). */
  editedAt?: number | undefined;
  deleted?: true | undefined;
  at: number;
  notes?: number[] | undefined;
  /** The message's whole list of reactions after this change; absent: none. */
  reactions?: Reaction[] | undefined;
}

/**
 * One durable step of one group: a single line of its log, written atomically. Everything that
 * must change together (a reply, the agent's cursor and history, the round's progress) travels in
 * one record, so a crash either keeps all of it or none of it. New entries and delivery outcomes
 * are fields of their own because the stores index them (history pages, search); so are edits
 * (reactions among them), which the stores apply to the entries they read back. The rest is an
 * ordered list of changes. A record applies as: its entries, its delivery outcomes, its edits,
 * its changes.
 */
export interface GroupRecord {
  /** Record format version (records of version 1 are upgraded when read). */
  v: 2;
  /** Position in the group's log: 1, 2, 3, … */
  n: number;
  ts: number;
  /** New transcript entries, seq assigned, in seq order. */
  entries?: TranscriptEntry[] | undefined;
  /** Delivery outcome of entries recorded earlier. */
  delivery?: DeliveryOutcome[] | undefined;
  /** Edits and deletions of entries recorded earlier (applied after the delivery outcomes). */
  edits?: EntryEdit[] | undefined;
  changes?: GroupChange[] | undefined;
}

/** The group's state after record `n`: a shortcut for replay at start, never the only copy. */
export interface GroupCheckpoint {
  version: 2;
  n: number;
  head: GroupHead;
  nextSeq: number;
  rounds: RoundRecord[];
  sessions: SessionDoc[];
  seen: Array<[string, number]>;
  undelivered: TranscriptEntry[];
}
