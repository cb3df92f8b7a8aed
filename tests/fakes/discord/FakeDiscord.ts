/**
 * A local Discord that the real discord.js talks to: REST under `<apiBase>/v10/...` and a gateway
 * websocket whose URL `GET /gateway/bot` hands out. Everything binds to 127.0.0.1 on a free port.
 *
 * Tests drive it from the platform side (`humanSays`, `humanEdits`, `humanDeletes`, `humanReacts`,
 * `denyBot`, `rateLimitNext`, `outage`, `latency`, `stall`, ...) and assert on what it recorded (`posts`, `reactionsOn`,
 * `requests`, `typing`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeGateway } from './gateway.js';
import { handleRest } from './rest.js';
import {
  Perm,
  emojiKey,
  snowflake,
  type FakeChannel,
  type FakeEmoji,
  type FakeReaction,
  type FakeRole,
  type FakeUser,
  type FakeWebhook,
  type StoredMessage,
} from './model.js';

export interface FakeDiscordOptions {
  /** The bot token the fake accepts (REST `Authorization: Bot <token>` and IDENTIFY). */
  token?: string;
  /** false: the bot may not use the Message Content intent; IDENTIFY with it closes 4014. */
  messageContentAllowed?: boolean;
  heartbeatIntervalMs?: number;
}

export interface RecordedRequest {
  method: string;
  /** Path without the `/api/v10` prefix, query string kept. */
  path: string;
  body: unknown;
  status: number;
}

interface RateLimitRule {
  match: (method: string, path: string) => boolean;
  remaining: number;
  retryAfterSeconds: number;
}

/**
 * A transport-level fault: an HTTP status with a non-JSON body (as a proxy in front of Discord
 * answers), or the connection destroyed without an answer — `'drop'` before the request was
 * acted on, `'drop-after'` after it was (the message exists, the client never hears so).
 */
export type TransportFault = { status: number } | 'drop' | 'drop-after';

interface FaultRule {
  match: (method: string, path: string, body: unknown) => boolean;
  remaining: number;
  fault: TransportFault;
}

interface FailureRule {
  match: (method: string, path: string) => boolean;
  remaining: number;
  status: number;
  code: number;
  message: string;
}

export class FakeDiscord {
  readonly token: string;
  messageContentAllowed: boolean;
  readonly heartbeatIntervalMs: number;

  readonly guildId = snowflake();
  readonly guildName = 'Chorus Test Server';
  readonly applicationId = snowflake();
  readonly bot: FakeUser;
  readonly owner: FakeUser;
  readonly users = new Map<string, FakeUser>();
  readonly roles: FakeRole[] = [];
  /** user id → role ids */
  readonly members = new Map<string, string[]>();
  readonly channels: FakeChannel[] = [];
  readonly webhooks: FakeWebhook[] = [];
  readonly messages: StoredMessage[] = [];
  /** Reactions on messages now (people's and the bot's), oldest first. */
  readonly reactions: FakeReaction[] = [];
  readonly requests: RecordedRequest[] = [];
  readonly typing: Array<{ channelId: string; userId: string }> = [];
  /** Role ids of the roles every test server has. */
  readonly everyoneRoleId: string;
  readonly modRoleId: string;
  readonly botRoleId: string;

  private readonly rateLimits: RateLimitRule[] = [];
  private readonly failures: FailureRule[] = [];
  private readonly faults: FaultRule[] = [];
  /** Every transport fault produced, in order. */
  readonly faultLog: Array<{ method: string; path: string; fault: TransportFault }> = [];
  private server: Server | undefined;
  private gateway: FakeGateway | undefined;
  private port = 0;

  constructor(opts: FakeDiscordOptions = {}) {
    this.token = opts.token ?? 'fake';
    this.messageContentAllowed = opts.messageContentAllowed ?? true;
    this.heartbeatIntervalMs = opts.heartbeatIntervalMs ?? 5000;
    this.everyoneRoleId = this.guildId;
    // Like Discord's default @everyone: read, write, read history and react.
    this.roles.push({ id: this.everyoneRoleId, name: '@everyone', position: 0, permissions: Perm.ViewChannel | Perm.SendMessages | Perm.ReadMessageHistory | Perm.AddReactions });
    this.modRoleId = snowflake();
    this.roles.push({ id: this.modRoleId, name: 'Mods', position: 2, permissions: Perm.ManageChannels });
    this.botRoleId = snowflake();
    this.roles.push({ id: this.botRoleId, name: 'Chorus', position: 1, permissions: Perm.ManageWebhooks | Perm.SendMessages | Perm.ViewChannel });
    this.bot = this.addUser('ChorusBot', { bot: true, roles: [this.botRoleId] });
    this.owner = this.addUser('Owner');
  }

  /** REST base as `channels.discord.api_base` expects it (discord.js appends `/v10`). */
  get apiBase(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}/gateway`;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => void handleRest(this, req, res));
    this.gateway = new FakeGateway(this);
    server.on('upgrade', (req, socket, head) => this.gateway!.handleUpgrade(req, socket, head));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  async close(): Promise<void> {
    this.gateway?.close();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  // ---- world building -----------------------------------------------------------------------

  addUser(username: string, opts: { bot?: boolean; roles?: string[] } = {}): FakeUser {
    const user: FakeUser = { id: snowflake(), username, global_name: opts.bot ? null : username, bot: opts.bot ?? false };
    this.users.set(user.id, user);
    this.members.set(user.id, opts.roles ?? []);
    return user;
  }

  addChannel(name: string): string {
    const channel: FakeChannel = { id: snowflake(), name, overwrites: [] };
    this.channels.push(channel);
    return channel.id;
  }

  channel(id: string): FakeChannel | undefined {
    return this.channels.find((c) => c.id === id);
  }

  /** Take `perm` away from the bot in one channel (a member overwrite, as a server admin would). */
  denyBot(channelId: string, perm: bigint): void {
    this.channel(channelId)!.overwrites.push({ id: this.bot.id, type: 1, allow: 0n, deny: perm });
  }

  /** The next `count` requests matching `match` get a 429 with `retry_after`. */
  rateLimitNext(count: number, match: (method: string, path: string) => boolean, retryAfterSeconds = 0.25): void {
    this.rateLimits.push({ match, remaining: count, retryAfterSeconds });
  }

  /** Consumed by the REST handler: should this request be rate limited? */
  takeRateLimit(method: string, path: string): number | null {
    const rule = this.rateLimits.find((r) => r.remaining > 0 && r.match(method, path));
    if (!rule) return null;
    rule.remaining--;
    return rule.retryAfterSeconds;
  }

  /** The next `count` requests matching `match` fail with this Discord error. */
  failNext(count: number, match: (method: string, path: string) => boolean, error: { status: number; code: number; message: string }): void {
    this.failures.push({ match, remaining: count, ...error });
  }

  /** Consumed by the REST handler: should this request fail? */
  takeFailure(method: string, path: string): { status: number; code: number; message: string } | null {
    const rule = this.failures.find((r) => r.remaining > 0 && r.match(method, path));
    if (!rule) return null;
    rule.remaining--;
    return { status: rule.status, code: rule.code, message: rule.message };
  }

  /** The next `count` requests matching `match` meet a transport fault (rules used in the order added). */
  faultNext(count: number, match: (method: string, path: string, body: unknown) => boolean, fault: TransportFault): void {
    this.faults.push({ match, remaining: count, fault });
  }

  /** Consumed by the REST handler: should this request meet a transport fault? */
  takeFault(method: string, path: string, body: unknown): TransportFault | null {
    const rule = this.faults.find((r) => r.remaining > 0 && r.match(method, path, body));
    if (!rule) return null;
    rule.remaining--;
    this.faultLog.push({ method, path, fault: rule.fault });
    return rule.fault;
  }

  /** Faults added with `faultNext` that have not happened yet. */
  pendingFaults(): number {
    return this.faults.reduce((n, r) => n + r.remaining, 0);
  }

  /** Effective permissions of a member in a channel, computed the way Discord does. */
  permissionsOf(userId: string, channelId: string): bigint {
    if (userId === this.owner.id) return ~0n;
    const roleIds = [this.everyoneRoleId, ...(this.members.get(userId) ?? [])];
    let perms = 0n;
    for (const r of this.roles) if (roleIds.includes(r.id)) perms |= r.permissions;
    if (perms & Perm.Administrator) return ~0n;
    const ch = this.channel(channelId);
    if (!ch) return perms;
    const apply = (o: { allow: bigint; deny: bigint }) => {
      perms = (perms & ~o.deny) | o.allow;
    };
    const everyone = ch.overwrites.find((o) => o.id === this.everyoneRoleId);
    if (everyone) apply(everyone);
    let allow = 0n;
    let deny = 0n;
    for (const o of ch.overwrites) {
      if (o.type === 0 && o.id !== this.everyoneRoleId && roleIds.includes(o.id)) {
        allow |= o.allow;
        deny |= o.deny;
      }
    }
    apply({ allow, deny });
    const own = ch.overwrites.find((o) => o.type === 1 && o.id === userId);
    if (own) apply(own);
    return perms;
  }

  // ---- traffic ------------------------------------------------------------------------------

  /** A person (or another bot) writes in a channel; dispatched to every connected bot. */
  humanSays(channelId: string, user: FakeUser, content: string, opts: { replyTo?: string } = {}): string {
    const msg: StoredMessage = {
      id: snowflake(),
      channel_id: channelId,
      author: user,
      content,
      webhook_id: null,
      application_id: null,
      avatar_url: null,
      reply_to: opts.replyTo ?? null,
      ts: Date.now(),
    };
    this.messages.push(msg);
    this.gateway?.dispatchMessage(msg);
    return msg.id;
  }

  /**
   * Another integration (not Chorus's application) posts through a webhook of its own in a
   * channel: as Discord shows it, a message whose author is the webhook, marked as a bot.
   */
  foreignWebhookSays(channelId: string, username: string, content: string): string {
    const id = snowflake();
    const hook: FakeWebhook = {
      id,
      token: `hook-${id}`,
      channel_id: channelId,
      name: username,
      // Another application's: not one Chorus made.
      application_id: snowflake(),
    };
    this.webhooks.push(hook);
    const msg: StoredMessage = {
      id: snowflake(),
      channel_id: channelId,
      author: { id: hook.id, username, global_name: null, bot: true },
      content,
      webhook_id: hook.id,
      application_id: hook.application_id,
      avatar_url: null,
      reply_to: null,
      ts: Date.now(),
    };
    this.recordPost(msg);
    return msg.id;
  }

  /**
   * A person (or another bot) adds (`on`) or takes back a reaction: a unicode emoji as a string, a
   * custom one as `{ name, id }`. Like Discord, adding one that is there or removing one that is
   * not changes nothing and sends no event; otherwise MESSAGE_REACTION_ADD / _REMOVE goes to every
   * session that asked for the GuildMessageReactions intent (the message need not exist).
   */
  humanReacts(channelId: string, user: FakeUser, messageId: string, emoji: string | FakeEmoji, on = true): void {
    this.setReaction(channelId, messageId, user, typeof emoji === 'string' ? { name: emoji, id: null } : emoji, on);
  }

  /** Add or remove one user's reaction (people through `humanReacts`, the bot through REST); false when nothing changed. */
  setReaction(channelId: string, messageId: string, user: FakeUser, emoji: FakeEmoji, on: boolean): boolean {
    const key = emojiKey(emoji);
    const at = this.reactions.findIndex((r) => r.messageId === messageId && r.userId === user.id && emojiKey(r.emoji) === key);
    if ((at >= 0) === on) return false;
    if (on) this.reactions.push({ channelId, messageId, userId: user.id, emoji });
    else this.reactions.splice(at, 1);
    this.gateway?.dispatchReaction(on ? 'MESSAGE_REACTION_ADD' : 'MESSAGE_REACTION_REMOVE', { channelId, messageId, user, emoji });
    return true;
  }

  /** A moderator clears every reaction of a message (MESSAGE_REACTION_REMOVE_ALL: no list of who). */
  removeAllReactions(channelId: string, messageId: string): void {
    for (let i = this.reactions.length - 1; i >= 0; i--) if (this.reactions[i]!.messageId === messageId) this.reactions.splice(i, 1);
    this.gateway?.dispatchReaction('MESSAGE_REACTION_REMOVE_ALL', { channelId, messageId });
  }

  /** A moderator clears one emoji from a message (MESSAGE_REACTION_REMOVE_EMOJI: no list of who). */
  removeReactionEmoji(channelId: string, messageId: string, emoji: string | FakeEmoji): void {
    const e = typeof emoji === 'string' ? { name: emoji, id: null } : emoji;
    for (let i = this.reactions.length - 1; i >= 0; i--) {
      const r = this.reactions[i]!;
      if (r.messageId === messageId && emojiKey(r.emoji) === emojiKey(e)) this.reactions.splice(i, 1);
    }
    this.gateway?.dispatchReaction('MESSAGE_REACTION_REMOVE_EMOJI', { channelId, messageId, emoji: e });
  }

  /** The reactions a message carries now, oldest first: [emoji key, user id]. */
  reactionsOn(messageId: string): Array<[string, string]> {
    return this.reactions.filter((r) => r.messageId === messageId).map((r) => [emojiKey(r.emoji), r.userId]);
  }

  /** Bytes of people's attachments by path (`/attachments/<channel>/<id>/<name>`), served by the REST server. */
  readonly cdn = new Map<string, Buffer>();
  /** Attachment paths fetched, in order (failed fetches included). */
  readonly cdnFetches: string[] = [];
  /** The next attachment fetches fail, one per entry: answered with that status, or 'drop' (the connection is cut). */
  readonly cdnFaults: Array<number | 'drop'> = [];
  /** Statuses of the attachment fetches, in order (0: dropped). */
  readonly cdnAnswers: number[] = [];
  /** The server's upload limit (a multipart request larger is answered 413, code 40005); 10 MiB without boosts. */
  uploadLimitBytes = 10 * 1024 * 1024;

  /** A person posts files (with text or none); `claimedSize` is what Discord reports, if not the real size. */
  humanSendsFiles(channelId: string, user: FakeUser, content: string, files: Array<{ name: string; bytes: Buffer; claimedSize?: number; contentType?: string }>): string {
    const id = snowflake();
    const attachments = files.map((f) => {
      const aid = snowflake();
      const path = `/attachments/${channelId}/${aid}/${encodeURIComponent(f.name)}`;
      this.cdn.set(path, f.bytes);
      return { id: aid, filename: f.name, size: f.claimedSize ?? f.bytes.length, url: `http://127.0.0.1:${this.port}${path}`, content_type: f.contentType };
    });
    const msg: StoredMessage = { id, channel_id: channelId, author: user, content, webhook_id: null, application_id: null, avatar_url: null, reply_to: null, ts: Date.now(), attachments };
    this.messages.push(msg);
    this.gateway?.dispatchMessage(msg);
    return id;
  }

  /**
   * A message from before the bot connected: stored (the REST history has it) but never sent to a
   * session, so discord.js does not hold it and its edits and deletions arrive as partials.
   */
  pastMessage(channelId: string, user: FakeUser, content: string): string {
    const msg: StoredMessage = { id: snowflake(), channel_id: channelId, author: user, content, webhook_id: null, application_id: null, avatar_url: null, reply_to: null, ts: Date.now() };
    this.messages.push(msg);
    return msg.id;
  }

  /** A person edits their message: the text changes and MESSAGE_UPDATE goes out with the whole message. */
  humanEdits(messageId: string, content: string): void {
    const msg = this.messages.find((m) => m.id === messageId);
    if (!msg) throw new Error(`FakeDiscord: no message ${messageId}`);
    this.editStored(msg, content);
  }

  /** Change a stored message's text (a person, the bot or a webhook) and tell the sessions. */
  editStored(msg: StoredMessage, content: string): void {
    msg.content = content;
    msg.edited_ts = Date.now();
    this.gateway?.dispatchMessage(msg, 'MESSAGE_UPDATE');
  }

  /**
   * Discord updating a message without an edit (a link preview arriving, a pin): MESSAGE_UPDATE with
   * the same text and no new edit time.
   */
  embedUpdate(messageId: string): void {
    const msg = this.messages.find((m) => m.id === messageId);
    if (msg) this.gateway?.dispatchMessage(msg, 'MESSAGE_UPDATE');
  }

  /** A person (or a moderator) deletes messages: one → MESSAGE_DELETE, several → MESSAGE_DELETE_BULK. */
  humanDeletes(channelId: string, ...ids: string[]): void {
    for (const id of ids) {
      const at = this.messages.findIndex((m) => m.id === id);
      if (at >= 0) this.messages.splice(at, 1);
    }
    this.gateway?.dispatchDelete(channelId, ids);
  }

  /**
   * While on, every REST call (not the attachment downloads) answers 500 with Discord's JSON body,
   * as during a Discord outage; nothing is acted on.
   */
  outage = false;

  /**
   * A slow Discord: for each REST call, how long to wait before acting on it and, once acted on,
   * before answering (the message exists; the client has not heard so yet). Undefined: no wait.
   */
  latency: ((method: string, path: string) => { beforeMs?: number; afterMs?: number } | undefined) | undefined;
  /** Calls waiting in `latency` or `stall` now: not acted on yet (`before`), acted on but unanswered (`after`). */
  readonly slow = { before: 0, after: 0 };
  private stalled: { match: (method: string, path: string) => boolean; waiting: Array<() => void> } | undefined;

  /** Hold every call matching `match` before it is acted on, until `release()`. */
  stall(match: (method: string, path: string) => boolean): void {
    this.release();
    this.stalled = { match, waiting: [] };
  }

  /** Let the held calls go on (in the order they came). */
  release(): void {
    const s = this.stalled;
    this.stalled = undefined;
    for (const go of s?.waiting ?? []) go();
  }

  /** Consumed by the REST handler: wait out a stall, then the latency before acting; the wait after acting, if any. */
  async slowDown(method: string, path: string): Promise<number> {
    const lat = this.latency?.(method, path);
    if (!this.stalled?.match(method, path) && !lat?.beforeMs) return lat?.afterMs ?? 0;
    this.slow.before++;
    try {
      if (this.stalled?.match(method, path)) await new Promise<void>((go) => this.stalled!.waiting.push(go));
      if (lat?.beforeMs) await new Promise((r) => setTimeout(r, lat.beforeMs));
    } finally {
      this.slow.before--;
    }
    return lat?.afterMs ?? 0;
  }

  /** Store and broadcast a message created through REST (bot post or webhook execute). */
  recordPost(msg: StoredMessage): void {
    this.messages.push(msg);
    this.gateway?.dispatchMessage(msg);
  }

  /** Messages shown in a channel, oldest first. */
  posts(channelId: string): StoredMessage[] {
    return this.messages.filter((m) => m.channel_id === channelId);
  }

  /** Requests whose method and path match, e.g. `requestsTo('POST', /\/channels\/\d+\/webhooks$/)`. */
  requestsTo(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  /** Gateway sessions that completed IDENTIFY, with the intents they asked for. */
  get identifies(): Array<{ intents: number }> {
    return this.gateway?.identifies ?? [];
  }

  /** Every MESSAGE_CREATE the gateway sent (to any session). */
  get dispatched(): Array<{ session: string; messageId: string; webhookId: string | null; content: string }> {
    return this.gateway?.dispatched ?? [];
  }

  get connectedSessions(): number {
    return this.gateway?.openSessions ?? 0;
  }
}
