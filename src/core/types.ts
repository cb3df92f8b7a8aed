/**
 * The channel-agnostic data shapes of Chorus. Everything here is plain JSON so it can be stored
 * by any Store and sent over any wire without conversion.
 */
import type { ToolStepView } from './toolTypes.js';
import type { Attachment, PromptAttachment } from './fileTypes.js';
import type { PromptRef } from './promptRefTypes.js';

export type { PromptAsk, PromptRef } from './promptRefTypes.js';

/** The platforms a group can live on. */
export type ChannelKind = 'telegram' | 'discord' | 'web';

/** How the router picks speakers when nobody is addressed. */
export type ReplyStrategy = 'hybrid' | 'mention_only' | 'round_robin' | 'selector';

/** A persona from the config. */
export interface AgentDef {
  id: string;
  name: string;
  persona: string;
  /** Model id; null falls back to `llm.model`. */
  model: string | null;
  /** Emoji or https URL. */
  avatar: string | null;
  color: string | null;
  aliases: string[];
  /** 0..1, how willing the agent is to take voluntary turns (scripted provider, selector hints). */
  talkativeness: number;
  telegram?: { token: string } | undefined;
  discord?: { avatar_url: string | null } | undefined;
  /** `agents[].context_tokens`: this agent's model's context window; unset: `llm.context_tokens` or the model's known one. */
  contextTokens?: number | null | undefined;
  /**
   * `agents[].tools`: the MCP servers (all their tools) or `server.tool` names this agent may call.
   * Empty or unset: the agent has no tools.
   */
  tools?: string[] | undefined;
  /**
   * `agents[].vision`: the model can see, so images (and PDFs, Anthropic) are sent to it in full;
   * otherwise each file reads as one line. Decided at config load (see src/config).
   */
  vision?: boolean | undefined;
}

/** A group's daily limits (UTC day); at 80% the chat is warned, at 100% model calls stop until midnight. */
export interface GroupBudget {
  daily_usd: number | null;
  daily_tokens: number | null;
}

/** Per-group tunables; every key can be changed with `/group config`. */
export interface GroupConfig {
  reply_strategy: ReplyStrategy;
  max_agent_turns_per_message: number;
  max_depth: number;
  cooldown_seconds: number;
  agent_reply_timeout_seconds: number;
  voluntary_timeout_seconds: number;
  max_voluntary_responders: number;
  sticky: boolean;
  last_speaker: string | null;
  execution: 'sequential' | 'parallel';
  /** Voluntary turns one after another (each sees the earlier replies) or all asked at once. */
  voluntary_execution: 'sequential' | 'parallel';
  history_turns: number;
  /** Daily (UTC) spending limits of the group's model calls; null = no limit. */
  budget: GroupBudget;
  /** Model ↔ tool round trips in one turn; at the limit the model is asked to answer without tools. */
  max_tool_steps: number;
  /** How long one tool call may run before the model is told it timed out. */
  tool_timeout_seconds: number;
  /** How long a call that needs a person's approval waits for one; then it is denied. */
  tool_approval_timeout_seconds: number;
  /** What Telegram and Discord show of tool steps: nothing, a line each, or with arguments and result. The web shows all. */
  show_tools: 'none' | 'compact' | 'full';
}

/** Validates a partial group config; returns readable problems (one per key) or the clean patch. */
export type ConfigValidator = (patch: Record<string, unknown>) => { ok: true; value: Partial<GroupConfig> } | { ok: false; problems: string[] };

/** Where a channel should post: one chat of one platform, optionally a forum topic. */
export interface ChatRef {
  channel: ChannelKind;
  chatId: string;
  /** Telegram forum topic / Discord thread, kept so replies land in the same place. */
  threadId?: string | undefined;
  /**
   * Telegram: the agent whose bot received the command, so the system voice answers through it.
   * Ignored by channels with a single identity.
   */
  viaAgentId?: string | undefined;
}

/** The author of an inbound message as the platform describes them. */
export interface InboundAuthor {
  id: string;
  name: string;
}

/** One inbound human message, already normalised by its channel adapter. */
export interface InboundMessage {
  channel: ChannelKind;
  chatId: string;
  /** Platform message id; (channel, chatId, messageId) is the dedupe key. */
  messageId: string;
  author: InboundAuthor;
  text: string;
  /** Epoch ms as reported by the platform (or receipt time). */
  ts: number;
  threadId?: string | undefined;
  /** The agent whose bot received this copy (Telegram); used for the system voice and DMs. */
  viaAgentId?: string | undefined;
  /** A private chat with one agent's bot: 1:1 with that agent. */
  isPrivate?: boolean | undefined;
  /** The message replies to a message that agent posted: that agent is addressed. */
  replyToAgentId?: string | undefined;
  /** Agents the platform itself marked as mentioned (Telegram entities), in order of appearance. */
  mentionedAgentIds?: string[] | undefined;
  /** Display name of the chat, used as the title of groups created from it. */
  chatTitle?: string | undefined;
  /**
   * Who the per-person rate limit counts this against, when the author id is self-declared
   * (web: the client's address, never the typed name). Defaults to the author id.
   */
  rateKey?: string | undefined;
  /**
   * The channel can show an answer to the asker alone (the web page): command answers and
   * refusals come back in the ReceiveResult instead of being recorded in the shared transcript.
   */
  ephemeral?: boolean | undefined;
  /** The transcript entry this message replies to (web `reply_to`); `/ask <agent>` answers about it. */
  replyToEntryId?: string | undefined;
  /**
   * Web: a tag for the browser that sent the message, derived from a key only that browser holds
   * (channels/web/client.ts). Recorded on the entry so a page can tell its own messages from
   * other people's under any name, and so only that browser may edit or delete it. Never a basis
   * for limits.
   */
  clientTag?: string | undefined;
  /**
   * Files sent with the message, already kept durably (`Files.keep`) before the message is handed
   * over. With files, `text` may be empty.
   */
  attachments?: Attachment[] | undefined;
  /**
   * The platform id of the message this one replies to, in this chat (any message: a person's, an
   * agent's, a relayed copy). The core finds the entry it is in every chat of a room, so the reply
   * threads to it everywhere and addresses its agent.
   */
  replyToPlatformId?: string | undefined;
  /**
   * A bot that is not a Chorus agent wrote it (Telegram's bot-to-bot mode, a bot or another
   * integration's webhook on Discord with `allow_bots`); absent: a person.
   */
  authorKind?: 'bot' | undefined;
  /** An https URL of the author's picture where the platform gives one (Discord), for relayed copies. */
  authorAvatarUrl?: string | undefined;
}

/**
 * What a channel adapter makes of one platform message: the message for the router, or why it is
 * not one (the adapter's own posts, bots, service messages, no text, ...), for its debug log.
 */
export type NormalizedMessage = { message: InboundMessage } | { skip: string };

/** An answer shown only to the person who asked (web), never stored or shown to agents. */
export interface EphemeralAnswer {
  text: string;
  kind: 'command' | 'refusal';
  /** Refusals that pass with time (the rate limit): when the same message would be taken. */
  retryAfterSeconds?: number | undefined;
}

/** Why the router refused a message, for APIs that map it to a status. */
export type RejectCode = 'rate_limited' | 'too_long' | 'empty' | 'shutting_down' | 'unavailable';

/**
 * What the router answers when a channel hands it a message, by `status`:
 * - 'recorded': durable in transcript and mailboxes; the channel may now acknowledge.
 * - 'forwarded': another instance runs the group; the message is durable in the shared inbox
 *   (`inboxId`) and that instance records it in the log (no entry id yet) — acknowledge too. A
 *   web command handed over carries the owner's answer when it came in time, or a note.
 * - 'duplicate': seen before (a redelivery, another bot's copy); nothing new was recorded. No
 *   group when the chat has none (a command sent to several bots).
 * - 'command': a command ran; its line is `entryId`, or for an ephemeral message (`msg.ephemeral`)
 *   the answer is for the asker alone and nothing was recorded. No group in a chat without one;
 *   `inboxId` when it was handed over to the instance that runs the group and answered there.
 * - 'no_group': the chat has no group.
 * - 'rejected': refused, nothing recorded; an ephemeral message gets the refusal for the asker.
 */
export type ReceiveResult =
  | ReceiveShape<'recorded', 'groupId' | 'entryId'>
  | ReceiveShape<'forwarded', 'groupId' | 'inboxId', 'entryId' | 'ephemeral'>
  | ReceiveShape<'duplicate', never, 'groupId'>
  | ReceiveShape<'command', never, 'groupId' | 'entryId' | 'inboxId' | 'ephemeral'>
  | ReceiveShape<'no_group', 'reason'>
  | ReceiveShape<'rejected', 'code' | 'reason', 'groupId' | 'ephemeral'>;

/** Every field a ReceiveResult can have. */
interface ReceiveFields {
  groupId: string;
  entryId: string;
  /** The id of the message's row in the cluster inbox. */
  inboxId: string;
  /** Human-readable reason. */
  reason: string;
  code: RejectCode;
  /** The command's answer or the refusal, for the asker only (nothing recorded). */
  ephemeral: EphemeralAnswer;
}

/**
 * One status's result: the fields it always has (`Has`), the ones it may have (`May`); the rest
 * it never has — they read as undefined, so a field can be read before the status is checked.
 */
type ReceiveShape<S extends string, Has extends keyof ReceiveFields, May extends keyof ReceiveFields = never> = { status: S } & Pick<ReceiveFields, Has> & {
  [K in May]?: ReceiveFields[K] | undefined;
} & { [K in Exclude<keyof ReceiveFields, Has | May>]?: undefined };

/** Token and cost figures of one LLM call. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** Per-message metadata of an agent reply, shown on demand in the page. */
export interface ReplyMeta {
  model: string;
  usage: Usage;
  latencyMs: number;
  costUsd: number | null;
  depth: number;
  /** Why the agent spoke: addressed by a human, voluntary, reaction to another agent, sticky, ... */
  reason: TurnReason;
  /** The reply was cut short (its text ends with a marker saying so). */
  cut?: ReplyCut | undefined;
  /** The human message the round answered (its newest trigger), when there was one. */
  answers?: string | undefined;
  /** A regeneration: the id of the earlier reply this one is another answer to (that one is kept). */
  regenerates?: string | undefined;
  /** What the model was shown for this reply, by reference (see session/promptRef.ts). */
  prompt?: PromptRef | undefined;
}

/**
 * Why a reply was cut: over `llm.max_reply_bytes` (or its share of `max_tokens`), the model hit
 * `max_tokens`, it was still streaming at `llm.reply_timeout_seconds`, or `/stop` came while it
 * streamed (in the last two the text so far is kept).
 */
export type ReplyCut = 'bytes' | 'max_tokens' | 'timeout' | 'stopped';

export type TurnReason = 'addressed' | 'voluntary' | 'reaction' | 'sticky' | 'rotation' | 'selected' | 'direct';

/** Quiet decision lines: why an agent did or did not speak. */
export type DecisionType = 'pass' | 'react' | 'cooldown' | 'cap' | 'error' | 'muted' | 'depth' | 'batch' | 'selector' | 'discarded' | 'stopped' | 'budget' | 'cut';

/** A chat of a room (roomTypes.ts), as records and maps name it. */
export interface ChatAddress {
  channel: ChannelKind;
  chatId: string;
}

/**
 * Where one entry's copy in one chat of the room stands. `pending` until the chat's channel posted
 * it (`posted`, with the platform ids of its chunks) or refused it for good (`failed`: the chat is
 * gone, the bot was removed). `synced`: the time of the entry's last edit or deletion this copy
 * shows; an entry edited after it still has that edit to carry to this chat.
 */
export interface ChatCopy {
  delivery: 'pending' | 'posted' | 'failed';
  ids?: string[] | undefined;
  synced?: number | undefined;
  /**
   * Which of the channel's identities posted the copy (`PostedMessage.via`: on Telegram the bot's
   * id), handed back when it is edited or removed: only the bot that sent a message may edit it.
   */
  via?: string | undefined;
}

/** One line of a group's transcript. */
export interface TranscriptEntry {
  /** Unique within the group; also the observation id in mailboxes. */
  id: string;
  /** Monotonic position in the group, for paging and SSE resume. */
  seq: number;
  kind: 'human' | 'agent' | 'system' | 'decision' | 'tool';
  ts: number;
  authorId: string;
  authorName: string;
  text: string;
  /** For agent replies. */
  agentId?: string | undefined;
  meta?: ReplyMeta | undefined;
  /** For human messages: the platform id, so replies can thread to it. */
  platformMessageId?: string | undefined;
  threadId?: string | undefined;
  /** For decision lines; `emoji`: an agent's reaction (`react`), remembered in its history as `[REACT <emoji>]`. */
  decision?: { type: DecisionType; agentId?: string | undefined; detail?: string | undefined; prompt?: PromptRef | undefined; emoji?: string | undefined } | undefined;
  /** Agent replies and system notices: has the channel posted it yet? Re-posted after a crash. */
  delivery?: 'pending' | 'posted' | 'failed' | undefined;
  /** Platform message ids of the posted chunks (for reply-to-agent addressing). */
  postedIds?: string[] | undefined;
  roundId?: string | undefined;
  /** Telegram: the bot that speaks for the system voice here (the one that got the command). */
  viaAgentId?: string | undefined;
  /** Commands, command replies and decisions are never shown to agents. */
  hiddenFromAgents?: boolean | undefined;
  /** Human messages sent as a reply (web `reply_to`): the entry replied to, shown above the text. */
  replyTo?: string | undefined;
  /** Human messages from the web page: which browser sent it (see InboundMessage.clientTag). */
  clientTag?: string | undefined;
  /** The author changed the text at this time (the log keeps what it said before). */
  editedAt?: number | undefined;
  /** The author deleted the message: its text is '' and it is shown to nobody. */
  deleted?: true | undefined;
  /** When it was deleted. */
  deletedAt?: number | undefined;
  /** An edited message: seqs of the notes that told the agents about its edits. */
  editNotes?: number[] | undefined;
  /** A note telling the agents that a message was edited: the id of that message (never shown as a line). */
  editOf?: string | undefined;
  /** People's reactions to it, oldest first: one per emoji per person (`byKey`). Absent: none. */
  reactions?: Reaction[] | undefined;
  /** A note telling the agents of a reaction: to which message, which emoji, by whom (never shown as a line). */
  reactionOf?: { id: string; emoji: string; by: string } | undefined;
  /** Tool steps (`kind: 'tool'`): the call an agent made and how it ended; `text` is the one-line summary. */
  tool?: ToolStepView | undefined;
  /** The system line saying a person decided on a tool call that waited for approval. */
  toolDecision?: { id: string; approved: boolean; by: string } | undefined;
  /** Files the message carries (a person's upload, an image an agent's tool made), in order. */
  attachments?: Attachment[] | undefined;
  /**
   * A room's entry that came from (a person's message, a command) or answers in (a command's reply)
   * one of its linked chats rather than its home chat. Absent: the home chat.
   */
  origin?: ChatAddress | undefined;
  /**
   * Its copies in the room's other chats, by chat key (`chatKeyOf`): a person's message relayed
   * under their name, an agent's reply or a notice posted there too. The home chat's post is
   * `delivery` / `postedIds`; the web has no copies (the page shows the transcript itself).
   */
  copies?: Record<string, ChatCopy> | undefined;
  /** A bot that is not an agent wrote it (see InboundMessage.authorKind). */
  authorKind?: 'bot' | undefined;
  /** The author's picture, where the platform gave one (relayed copies on Discord show it). */
  authorAvatarUrl?: string | undefined;
}

/** An entry before the store gives it an id, a seq and a time. */
export type NewEntry = Omit<TranscriptEntry, 'id' | 'seq' | 'ts'> & { ts?: number };

/**
 * One person's reaction to an entry. `byKey` tells people apart whatever names they type: a web
 * browser's client tag (`addr:<digest>` for a client without one), `<channel>:<author id>` for
 * Telegram and Discord, `agent:<id>` for an agent.
 */
/** A person's reaction on a platform message, as a channel reports it (`ChannelHost.reacted`). */
export interface PlatformReaction {
  channel: ChannelKind;
  chatId: string;
  /** The platform's id of the message reacted to (a person's message, or one an agent posted). */
  platformMessageId: string;
  by: InboundAuthor;
  emoji: string;
  /** Added (true) or taken back. */
  on: boolean;
  /** A private chat with one agent's bot (its group is that agent's): the agent. */
  dmAgentId?: string | undefined;
}

export interface Reaction {
  emoji: string;
  /** The display name, as it was when they reacted. */
  by: string;
  byKey: string;
  at: number;
}


/** A message exactly as sent to the model (a turn's tool steps travel beside them, see LlmRequest.toolSteps). */
export interface ChatTurn {
  role: 'user' | 'assistant';
  content: string;
  /**
   * User turns of an agent that can see: files sent in full with the turn, in order (providers put
   * each, labelled, before the text). The text always carries each file's line (`attachmentLine`)
   * too, so leaving one out keeps the words the same.
   */
  attachments?: PromptAttachment[] | undefined;
}
