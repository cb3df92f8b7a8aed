/**
 * The ports through which the core talks to the world. Adapters (channels, LLM providers, the
 * store) implement these; the core never imports an adapter, SDK, HTTP or file-system module.
 * What the core offers user interfaces in turn, `GatewayApi`, is in gatewayApi.ts.
 */
import type { AgentDef, ChannelKind, ChatRef, ChatTurn, InboundMessage, PlatformReaction, ReceiveResult, ReplyCut, TranscriptEntry, Usage } from './types.js';
import type { ToolCall, ToolSpec, ToolStep } from './toolTypes.js';
import type { GroupCheckpoint, GroupRecord } from './records.js';
import type { ChannelStatus, ClusterStatus, GroupView, SearchCursor, UnreadableGroup } from './readModels.js';
import type { GatewayApi } from './gatewayApi.js';
import type { Attachment, Files, StoredFile } from './fileTypes.js';
import type { PlatformEdit, PostedBy, RelayedAuthor } from './roomTypes.js';
import type { ApprovalRequest } from './text/approvalText.js';

export type { GatewayApi, ReactionRequest } from './gatewayApi.js';

/** Structured logger; pino satisfies it. Never pass secrets in fields. */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** Time source, faked in tests so cooldowns and timeouts are deterministic. */
export interface Clock {
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Channels

/** What a channel can do; the router adapts to it. */
export interface ChannelCapabilities {
  /** Longest text one platform message may carry; longer replies are split by the channel. */
  maxMessageLength: number;
}

/** Options for one outgoing post. */
export interface PostOptions {
  /** Platform id of the message this post replies to (Telegram reply, Discord reference). */
  replyToMessageId?: string | undefined;
  /**
   * The post asks people to approve a tool call: the channel lays the request out so every
   * argument is shown before the decision (see text/approvalText.ts), and one that has buttons adds
   * Approve / Deny under its last message (Telegram's inline keyboard). `text` is the same request
   * as plain text, for a channel that lays nothing out.
   */
  approval?: ApprovalRequest | undefined;
  /**
   * Files to post with the text, under the same identity (Telegram `sendPhoto` / `sendDocument`,
   * a Discord webhook upload). The channel reads their bytes through `ChannelHost.files`.
   */
  attachments?: readonly Attachment[] | undefined;
  /**
   * This post may have been made already: it was owed when the process stopped (a restart resumes
   * it), and the platform may have taken it just before. A channel that can read its chat looks for
   * its own message with this text posted since this time (epoch ms) and returns that one instead
   * of posting it twice (Discord); one that cannot posts it (Telegram: a duplicate, never a loss).
   */
  resumedSince?: number | undefined;
}

/** What the platform assigned to a post: one id per chunk, in order. */
export interface PostedMessage {
  ids: string[];
  /**
   * Which of the channel's identities posted it, as the channel names it (Telegram: the id of the
   * bot that sent it — the relay bot, or an agent's bot standing in for it). Kept with the copy
   * and handed back to `editPosted` / `deletePosted`, so a change goes through the same bot even
   * after a fallback, a restart or a new relay token. Absent where any identity may change it.
   */
  via?: string | undefined;
}

/**
 * What a platform reports besides messages: agent bots joining or leaving a chat (Telegram
 * my_chat_member; creates the group when allowed and none exists, greeting through the system
 * voice), a person's reaction on a message (Telegram `message_reaction`, Discord reaction events;
 * one Chorus does not know, or an emoji it does not take, is ignored and logged), a person's edit
 * or deletion of their own message (Telegram `edited_message`, Discord update / delete; the entry
 * follows, the agents are told, the room's other chats get it), or a chat's new platform id
 * (Telegram group → supergroup). With several instances these go through the cluster's inbox to
 * the group's owner unchanged.
 */
export type PlatformChange =
  | { kind: 'membership'; chat: ChatRef; change: { joined?: string[]; left?: string[]; title?: string | undefined; autoCreate: boolean } }
  | { kind: 'reaction'; reaction: PlatformReaction }
  | { kind: 'edit'; edit: PlatformEdit }
  | { kind: 'rekey'; channel: ChannelKind; oldChatId: string; newChatId: string };

/** Everything a channel hands the core, through the one method `ChannelHost.handle`. */
export type PlatformEvent = { kind: 'message'; message: InboundMessage } | PlatformChange;

export interface ChannelHost {
  /**
   * Hand one event over. A message resolves once it is durably recorded (acknowledge then) with
   * what became of it; a change resolves once it is applied, and throws StoreUnavailableError when
   * it could not be recorded (a platform that redelivers, should).
   */
  handle(ev: { kind: 'message'; message: InboundMessage }): Promise<ReceiveResult>;
  handle(ev: PlatformChange): Promise<void>;
  /** All configured agents. */
  agents(): readonly AgentDef[];
  /** The live group bound to this chat, if any. */
  findGroup(channel: ChannelKind, chatId: string): GroupView | undefined;
  /** Make `handle` (e.g. a Telegram bot username) address `agentId` when typed as `@handle`. */
  registerHandle(handle: string, agentId: string): void;
  /** Which agent posted this platform message (reply-to addressing), if known. */
  agentForPostedMessage(channel: ChannelKind, chatId: string, platformMessageId: string): string | undefined;
  /** Keep the files of an inbound message before handing it over; read kept files to post them. */
  files: Files;
  /** Group management and live events, for channels that offer a UI/API (the web feed). */
  gateway: GatewayApi;
  logger: Logger;
}

/**
 * Connections only one instance may hold at a time (a Telegram bot's long poll: Telegram ends a
 * second `getUpdates` with 409). With several instances, `start` runs while this instance holds
 * the connection's lease and `stop` when it loses it; another instance takes over when it dies.
 */
export interface ConnectionGate {
  hold(key: string, handlers: { start(): void | Promise<void>; stop(): Promise<void> }): void;
}

/**
 * What the core asks of the other instances when several share one database. Each group has one
 * owner at a time; only the owner writes its log and runs its rounds. Which groups this process
 * runs is its own state (`RunningGroups`: the cluster hands groups to it and takes them back), and
 * what reaches this process for another instance's group is routed before the core sees it (the
 * cluster wraps the host the channels talk to). The core only takes a lease for a group it creates,
 * and names the owner when it refuses a write to a group it was not handed. A single instance runs
 * everything and has no peers (`noPeers`).
 */
export interface Peers {
  /** The instance that runs the group, when known (for error messages). */
  ownerOf(groupId: string): string | null;
  /**
   * A group was just created here: take its lease before its first record. False when another
   * instance created a group with this id first (the caller answers 409).
   */
  claimNew(groupId: string): Promise<boolean>;
  /** Give back a lease `claimNew` took for a group whose first record was then refused. */
  releaseNew?(groupId: string): Promise<void>;
  /** For `/readyz`; undefined for a single instance. */
  status(): ClusterStatus | undefined;
}

/** One platform integration. `start`/`stop` are idempotent. */
export interface Channel {
  readonly kind: ChannelKind;
  readonly capabilities: ChannelCapabilities;
  start(host: ChannelHost): Promise<void>;
  stop(): Promise<void>;
  /** Post `text` under the agent's own identity, split to the platform limit. */
  postAsAgent(chat: ChatRef, agent: AgentDef, text: string, opts?: PostOptions): Promise<PostedMessage>;
  /**
   * Show (`on`) or take back an agent's reaction on a posted message natively: Telegram through
   * the agent's own bot (`setMessageReaction`), Discord through the gateway bot when allowed.
   * Resolves false when this channel cannot show it (it stays recorded, and the web page shows
   * it). Never throws for a platform refusal; logs it.
   */
  react(chat: ChatRef, agent: AgentDef, platformMessageId: string, emoji: string, on: boolean): Promise<boolean>;
  /** Post as the gateway's system voice (command replies, notices, greetings). */
  postAsSystem(chat: ChatRef, text: string, opts?: PostOptions): Promise<PostedMessage>;
  /**
   * Post a message a person (or a foreign bot) wrote in another chat of the room, under their name:
   * Discord through the channel's webhook as "Maya · Telegram" with their avatar, Telegram through
   * the relay bot as "**Maya** (Discord): …". Throws `PostRefusedError` when the chat refuses it
   * for good; any other error is passing (the core tries again later, in order).
   */
  relay(chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage>;
  /**
   * Change the text of messages this channel posted (`ids`: the chunks of one post, in order) to
   * `text`, shown as the post was (`by`): a relayed or agent message whose original was edited.
   * Chunks the new text no longer needs are emptied or removed; a longer text is cut to the chunks
   * there are. `via`: the identity the post was made through (`PostedMessage.via`), when known.
   * Throws like `relay`.
   */
  editPosted(chat: ChatRef, ids: readonly string[], by: PostedBy, text: string, via?: string): Promise<void>;
  /** Remove messages this channel posted (a relayed message whose original was deleted). `via` and throws: as `editPosted`. */
  deletePosted(chat: ChatRef, ids: readonly string[], by: PostedBy, via?: string): Promise<void>;
  /** Show "agent is typing" until the returned function is called. Never throws. */
  startTyping(chat: ChatRef, agent: AgentDef): () => void;
  /** May this user run admin commands in this chat? */
  isAdmin(chat: ChatRef, userId: string): Promise<boolean>;
  /** Problems worth showing in `/group list` (e.g. a bot that cannot read the group). */
  warnings(chat: ChatRef, participants: readonly string[]): string[];
  /** Connected or not, with per-bot / per-channel detail. A channel without it counts as connected. */
  status?(): ChannelStatus;
}

// ---------------------------------------------------------------------------------------------
// LLM

/** One model call. `system` is the stable prefix; `summary` comes right after it. */
export interface LlmRequest {
  purpose: 'turn' | 'summary' | 'selector';
  model: string;
  system: string;
  /** Running summary of trimmed history; placed after the stable prefix, before the messages. */
  summary?: string | null | undefined;
  messages: ChatTurn[];
  maxTokens?: number | undefined;
  /**
   * Most bytes (UTF-8) of reply text wanted; set by the LlmGate. A streaming provider stops reading
   * and closes the stream there and returns what it has with `cut: 'bytes'`.
   */
  maxReplyBytes?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Streamed text as it is generated; providers that cannot stream simply never call it. */
  onDelta?: ((text: string) => void) | undefined;
  /**
   * Called for every chunk of model output, visible or not (thinking, reasoning): the LlmGate's
   * first-token and idle limits count it as the model working. Providers call it in addition to
   * `onDelta` for text.
   */
  onActivity?: (() => void) | undefined;
  /** Who is speaking; real providers ignore it, the scripted provider uses it. */
  agent?: AgentDef | undefined;
  groupId?: string | undefined;
  /** Whether this turn must be answered (addressed) or may pass (voluntary). */
  mustReply?: boolean | undefined;
  /** Whether the prompt offers reacting with `[REACT 👍]` this turn (voluntary, with a person's message). */
  mayReact?: boolean | undefined;
  /**
   * Tools the model may call, always in the same order so they stay in the cached prefix (providers
   * put them before the system prompt, as the APIs order the cache).
   */
  tools?: readonly ToolSpec[] | undefined;
  /** `none`: the tools are still sent (the cache holds) but the model must answer in text. */
  toolChoice?: 'auto' | 'none' | undefined;
  /** This turn's earlier model ↔ tool round trips, sent after `messages` in order. */
  toolSteps?: readonly ToolStep[] | undefined;
  /**
   * Reads the bytes of the files in `messages[].attachments`. A provider sends a file it cannot
   * read (null) as its line instead.
   */
  readFile?: ((id: string) => Promise<StoredFile | null>) | undefined;
}

/** What a model call gave back. */
export interface LlmResponse {
  text: string;
  model: string;
  usage: Usage;
  /** Estimated cost from the configured price table, if the provider knows prices. */
  costUsd?: number | null | undefined;
  /** Set when the reply was cut short: at the byte limit, or by the model reaching `max_tokens`. */
  cut?: ReplyCut | undefined;
  /**
   * The model stopped to call tools (Anthropic `tool_use`, OpenAI `tool_calls`), in the order it
   * made them; `text` is what it said before. Absent or empty: `text` is the answer.
   */
  toolCalls?: ToolCall[] | undefined;
}

/** A model backend. Throws `LlmError` on failure. */
export interface LlmProvider {
  readonly name: string;
  complete(req: LlmRequest): Promise<LlmResponse>;
}

/** A group found by `Store.open`: its newest checkpoint (if any) and the records after it. */
export interface StoredGroup {
  id: string;
  checkpoint: GroupCheckpoint | null;
  /** Records with n > checkpoint.n (all of them without a checkpoint), in order. */
  records(): AsyncIterable<GroupRecord>;
}

/**
 * An inbound item a channel can never hand over, such as a platform update of the wrong shape.
 * Refusing it would make the platform deliver it again forever, holding up everything behind it;
 * dropping it would lose it without a trace. It is kept for an operator to read instead.
 */
export interface DeadLetter {
  channel: ChannelKind;
  /** The part of the channel that received it: for Telegram, the agent whose bot it came to. */
  part: string;
  /** The platform's id for it (Telegram's update_id). */
  id: string;
  /** Why it can never be handed over. */
  reason: string;
  /** The item as it arrived. */
  raw: unknown;
}

/** Where dead letters are kept: one JSON-lines file per channel part under data_dir, or a table. */
export interface DeadLetters {
  /** Keep one durably; resolves with where it went (for the log line), throws when it was not kept. */
  keep(letter: DeadLetter): Promise<string>;
}

export interface SearchRequest {
  groupIds: readonly string[];
  /** Folded terms (`searchTerms`), each matched as the start of a word; all are required. */
  terms: readonly string[];
  /** Only results after this one in the order (older). */
  before?: SearchCursor | undefined;
  limit: number;
}

/** A message a search found, with its group. */
export interface SearchFound {
  groupId: string;
  entry: TranscriptEntry;
}

/** Durable storage: an append-only log per group plus checkpoints. */
export interface Store {
  /**
   * Open the data: check the format version (a newer one throws), migrate older layouts, cut torn
   * log tails. Groups that could not be read are listed in `unreadable` and are never written.
   */
  open(): Promise<{ groups: StoredGroup[]; unreadable: string[] }>;
  /**
   * Append one record to a group's log; resolves once it is durable. The record is serialised
   * before `append` returns, so the caller may change its objects afterwards. After a failure
   * every later append to that group fails too (the core reloads the group, then calls `reopen`).
   */
  append(groupId: string, record: GroupRecord): Promise<void>;
  /** Clear a group's failed state after the core reloaded it; resolves with its records again. */
  reopen(groupId: string): Promise<StoredGroup>;
  /**
   * Save a checkpoint; written only once every record up to `cp.n` is durable (never when one of
   * them failed). May be skipped. Like `append`, serialises `cp` before returning.
   */
  checkpoint(groupId: string, cp: GroupCheckpoint): Promise<void>;
  /**
   * Transcript entries, oldest first, with their latest known delivery state: the newest `limit`
   * with seq < `beforeSeq` (or the newest overall), or with `afterSeq` the oldest `limit` after it.
   */
  readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]>;
  /**
   * The durable messages of these groups that match every term (see core/text/search.ts), newest
   * first by (ts, group id, seq), at most `limit`, older than `before` when given. Only what
   * `searchable` accepts is ever found. The one read behind every search, so a later edit or
   * deletion of an entry has a single place to be honoured. Optional: a store without it cannot search.
   */
  searchEntries(req: SearchRequest): Promise<SearchFound[]>;
  /**
   * Keep a file's bytes under `meta.id` (their SHA-256); resolves once they are durable, before any
   * record names them. Keeping bytes already kept changes nothing (a name is each message's own,
   * in its entry). A file a message that is not deleted carries is never deleted; one nothing
   * carries any more may be. Throws StoreUnavailableError when it could not keep them (nothing
   * half-kept).
   */
  putFile(meta: Attachment, bytes: Uint8Array): Promise<void>;
  /**
   * Whether a message that is not deleted (or a keep on its way to one) carries the file: false
   * once only deleted messages did, undefined where the store cannot tell. Optional.
   */
  fileReferenced?(id: string): boolean | undefined;
  /** A kept file, or null when none has this id (a file whose write was cut short is none). */
  readFile(id: string): Promise<StoredFile | null>;
  /** Try a small durable write; throws StoreUnavailableError when the store cannot write. */
  checkWritable(): Promise<void>;
  /**
   * False after a write failed, until a write succeeds again. `unreadableGroups`: groups left
   * out at open because their data could not be read or contradicts itself (kept untouched).
   */
  health(): { writable: boolean; error: string | null; unreadableGroups?: UnreadableGroup[] | undefined };
  /** Wait for every pending append and checkpoint. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
