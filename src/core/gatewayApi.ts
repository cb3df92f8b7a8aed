/**
 * The port through which user interfaces and APIs (the web channel, the tests) use the core: its
 * own file beside ports.ts, which holds the channel, store and model ports and names this one.
 */
import type { ChatAddress } from './roomTypes.js';
import type { AgentDef, GroupConfig, TranscriptEntry } from './types.js';
import type { PromptContext } from './groups/promptContextView.js';
import type { AroundPage, GatewayEvent, GroupDetail, GroupSummary, GroupView, Readiness, RegenerateResult, SearchCursor, SearchPage, StopResult, ToolDecision, TranscriptPage } from './readModels.js';

/**
 * What the router offers user interfaces and APIs. Methods throw `UserError` (with an HTTP
 * status and a code) for bad input: unknown group, unknown agent, invalid config value, ...
 */
export interface GatewayApi {
  /**
   * Ask the agent of reply `entryId` for another answer to the same message. Only its latest
   * reply can be regenerated; the old one is kept and the new one says which it regenerates.
   * Resolves once the round is durably recorded.
   */
  regenerate(groupId: string, entryId: string): Promise<RegenerateResult>;
  /**
   * `/stop` from a user interface: end the group's running and waiting rounds and cancel its
   * model calls; records a notice naming `by`. Throws a 404 UserError for an unknown group.
   */
  stopGroup(groupId: string, by: string): Promise<StopResult>;
  /**
   * A person holding the web token approves or denies tool call `id` that waits in the group;
   * `digest` (the request's) binds the decision to the call that was shown.
   * UserError: 404 unknown call, 409 already decided, expired, or another call than the digest's.
   */
  decideTool(groupId: string, id: string, approve: boolean, by: string, digest?: string): Promise<ToolDecision>;
  listAgents(): readonly AgentDef[];
  listGroups(): GroupSummary[];
  getGroup(id: string): GroupDetail | undefined;
  createGroup(input: { title: string; participants: string[]; id?: string | undefined }): Promise<GroupView>;
  dissolveGroup(id: string): Promise<void>;
  /** Validate and apply a partial config; the error names the bad key and the allowed values. */
  updateConfig(id: string, patch: Record<string, unknown>): Promise<GroupConfig>;
  addMember(id: string, agentId: string): Promise<GroupView>;
  removeMember(id: string, agentId: string): Promise<GroupView>;
  /** Transcript page, oldest first: entries with seq < before (or the newest), at most `limit` (≤ 500). */
  messages(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptEntry[]>;
  /** The same page, and whether entries older than it exist (exact for every `limit` up to 500). */
  messagePage(id: string, opts: { before?: number | undefined; limit: number }): Promise<TranscriptPage>;
  /**
   * Messages matching `q` in one group (archived ones too) or in every live group, newest first,
   * with a snippet each, and where the next page starts (null after the last). Throws a 404
   * UserError for an unknown group. Optional: a gateway without it cannot search.
   */
  search(opts: { groupId?: string | undefined; q: string; limit: number; before?: SearchCursor | undefined }): Promise<SearchPage>;
  /** The page around entry `around` (about half older, half newer), to jump to any message. */
  messagesAround(id: string, opts: { around: number; limit: number }): Promise<AroundPage>;
  /** Listen to every group's events; returns the unsubscribe function. */
  subscribe(listener: (ev: GatewayEvent) => void): () => void;
  /** Readiness for `/readyz`: the store takes writes and every channel is connected. */
  readiness(): Readiness;
  /** True when the LLM provider is the offline scripted one (the page shows a loud note). */
  readonly scriptedProvider: boolean;
  /**
   * What the model was shown for one agent reply, rebuilt from the log. Throws a UserError: 404
   * unknown entry, 400 not an agent reply, 410 a reply recorded before prompts were referenced.
   */
  promptContext(groupId: string, entryId: string): Promise<PromptContext>;
  /**
   * The author's browser (`clientTag`) changes the text of its own message; the agents are told
   * in their next prompt. Returns the entry as it now is. Throws a UserError: 404 unknown entry,
   * 403 not that browser's message, 409 not a person's message or already deleted, 400 empty or
   * longer than `maxChars`; StoreUnavailableError when it could not be recorded (nothing is kept).
   */
  editMessage(groupId: string, entryId: string, edit: { clientTag: string | undefined; text: string; maxChars: number }): Promise<TranscriptEntry>;
  /** The author's browser deletes its own message: its text is gone from the page and from every later prompt. Errors as `editMessage`. */
  deleteMessage(groupId: string, entryId: string, by: { clientTag: string | undefined }): Promise<TranscriptEntry>;
  /**
   * A person adds (`on`) or removes a reaction to an entry; the agents see an added one in their
   * next prompt, and no round starts. Returns the entry as it now is; adding a reaction that is
   * there or removing one that is not changes nothing. Throws a UserError: 400 `invalid_emoji`
   * (not one emoji), 429 `rate_limited` (`retryAfterSeconds`), 404 unknown entry, 409
   * `not_reactable` (deleted, a note, a decision line, a command) or `too_many_reactions`;
   * StoreUnavailableError when it could not be recorded (nothing is kept) or another instance
   * runs the group.
   */
  react(groupId: string, entryId: string, reaction: ReactionRequest): Promise<TranscriptEntry>;
  /**
   * A one-time code (valid 10 minutes) that links another chat to this group's room: typed as
   * `/group link <code>` there by an admin of that chat. `by`: who asked (the web token's holder).
   * Throws a UserError: 404 `not_found` unknown or archived group, 409 `private_chat` a private
   * chat's group, 409 `not_owner` another instance runs the group.
   */
  linkCode(groupId: string, by: string): Promise<{ code: string; until: number }>;
  /**
   * The web joins the room a code was made for (the web panel's "Link a chat"): its group can then
   * be written to from the page. Returns the room's group. Throws a UserError: 404 `unknown_code`
   * (never made, used, or expired), 409 `already_linked` (a web room's code, or the web is in that
   * room already), 409 `not_owner` (another instance runs the room's group).
   */
  linkWeb(code: string, by: string): Promise<GroupView>;
  /**
   * A linked chat leaves the room (`/group unlink` there, or the web panel); a notice tells the
   * room's other chats. Throws a UserError: 404 `not_found` unknown group, 404 `not_linked` the
   * chat is not linked to it, 409 `home_chat` the group's own chat (dissolve the group instead),
   * 409 `not_owner` another instance runs the group.
   */
  unlinkChat(groupId: string, chat: ChatAddress, by: string): Promise<GroupView>;
}

/** One person adds (`on`) or removes a reaction (`GatewayApi.react`). */
export interface ReactionRequest {
  emoji: string;
  /** Who: `key` tells people apart whatever names they type (`Reaction.byKey`), `name` is shown. */
  by: { key: string; name: string };
  on: boolean;
  /** Whom the rate limit counts it against (web: the client's address, never a key it sends); default `by.key`. */
  rateKey?: string | undefined;
}
