/**
 * The Discord channel: one gateway bot reads the channels; every agent posts through
 * the channel's webhook under its own name and avatar.
 *
 * System voice: command replies and notices also go through the channel webhook, under
 * `webhook_name` with the webhook's own avatar, so they look like the gateway and not like the
 * bot account; only when the webhook is unavailable (no Manage Webhooks) does the bot post
 * itself, so the notice explaining the problem still gets through.
 *
 * Replies: Discord webhooks cannot post message replies, so `replyToMessageId` is not used; the
 * router's addressing does not depend on it. The same holds for people relayed from other chats.
 *
 * Rooms across chats: people from the room's other chats are relayed through the same webhook as
 * "Maya · Telegram" (identity.ts), pinging nobody; edits and deletions carried to what Chorus
 * posted go through edits.ts; people's own edits and deletions come in through messageEdits.ts.
 *
 * Reactions: people's come in from the gateway's reaction events (reactionEvents.ts); agents' are
 * shown by the gateway bot with `agent_reactions: bot`, since webhooks cannot react (agentReactions.ts).
 */
import { Routes, type Client, type Message } from 'discord.js';
import type { Channel, ChannelCapabilities, ChannelHost, ConnectionGate, Logger, PostOptions, PostedMessage } from '../../core/ports.js';
import type { PlatformEdit, PostedBy, RelayedAuthor } from '../../core/roomTypes.js';
import type { ChannelStatus } from '../../core/readModels.js';
import type { AgentDef, ChatRef, PlatformReaction } from '../../core/types.js';
import { KeyedQueue } from '../../core/lib/KeyedQueue.js';
import { AgentReactions } from './agentReactions.js';
import { ChannelHealth } from './channelHealth.js';
import { newClient } from './client.js';
import { DISCORD_MAX_MESSAGE, READY_TIMEOUT_MS, type DiscordConfig } from './config.js';
import { sanitizeError } from './errors.js';
import { listenForEdits } from './messageEdits.js';
import { normalizeMessage, type NormalizeContext } from './normalize.js';
import { attachFiles } from './files.js';
import { Poster } from './posting.js';
import { fetchGuildOf, hasManageChannels } from './permissions.js';
import { Reactors, listenForReactions } from './reactionEvents.js';
import { DiscordStartupError, MISSING_TOKEN_MESSAGE, agentNameProblems, loginFailure } from './startupChecks.js';
import { TypingIndicators } from './typing.js';
import { WebhookCache } from './webhooks.js';

export interface DiscordChannelOptions {
  config: DiscordConfig;
  agents: AgentDef[];
  logger: Logger;
  /**
   * Several instances on one database: only the instance holding the `discord` lease logs in to
   * the gateway (Discord would deliver every message to each session); the others keep a client
   * without a gateway session that posts through the webhooks for the groups they run.
   */
  connections?: ConnectionGate | undefined;
}

/** The lease key of the gateway connection (one per cluster: one bot token). */
export const DISCORD_GATEWAY_KEY = 'discord:gateway';

/** What one running session holds; replaced wholesale on restart. */
interface Running {
  client: Client;
  host: ChannelHost;
  webhooks: WebhookCache;
  /** Logged in to the gateway (reads messages); false: REST only, for posting. */
  gateway: boolean;
}

export class DiscordChannel implements Channel {
  readonly kind = 'discord' as const;
  readonly capabilities: ChannelCapabilities = { maxMessageLength: DISCORD_MAX_MESSAGE };

  private readonly cfg: DiscordConfig;
  private readonly agents: AgentDef[];
  private readonly log: Logger;
  private readonly allowList: ReadonlySet<string>;
  private readonly admins: ReadonlySet<string>;
  /** Agents whose names Discord will not take as webhook usernames (agent id → message). */
  private readonly nameProblems: Map<string, string>;
  /** Per channel: its name, and why the bot cannot post there (for `/readyz` and `/group list`). */
  private readonly channels: ChannelHealth;
  /** Posts, edits and deletions, per chat in order (posting.ts). */
  private readonly poster: Poster;
  /** Messages per chat, handed to the router one at a time in the order Discord delivered them. */
  private readonly inbound = new KeyedQueue();
  private readonly typing: TypingIndicators;
  /** People seen reacting (for "remove all"), and the agents' reactions the bot shows. */
  private readonly reactors = new Reactors();
  private readonly agentReactions: AgentReactions;
  private running: Running | null = null;
  private starting: Promise<void> | null = null;
  /** Why the last start failed (bad token, disallowed intents, ...), for `/readyz`. */
  private failure: string | null = null;
  /** The gateway session is up (false while discord.js reconnects after a drop). */
  private gatewayUp = false;
  private readonly gate: ConnectionGate | undefined;
  /** Registered with the gate once; from then on the lease starts and stops the gateway. */
  private gated = false;
  private host: ChannelHost | null = null;
  private stopped = false;
  /** Learnt from the first gateway session or `GET /applications/@me` (which webhooks are ours). */
  private applicationId: string | undefined;

  constructor(opts: DiscordChannelOptions) {
    this.cfg = opts.config;
    this.gate = opts.connections;
    this.agents = opts.agents;
    this.log = opts.logger.child({ channel: 'discord' });
    this.allowList = new Set(opts.config.channels.map(String));
    this.admins = new Set(opts.config.admins.map(String));
    this.nameProblems = agentNameProblems(opts.agents, opts.config.webhook_name);
    this.channels = new ChannelHealth(this.log);
    this.typing = new TypingIndicators(this.log);
    this.agentReactions = new AgentReactions(opts.config.agent_reactions, this.log);
    this.poster = new Poster(this.cfg, this.agents, this.log, () => this.running && { client: this.running.client, webhooks: this.running.webhooks, files: this.running.host.files, log: this.log, channelProblem: (id, msg) => this.channels.setProblem(id, msg) });
  }

  async start(host: ChannelHost): Promise<void> {
    this.stopped = false;
    this.host = host;
    if (this.starting) return this.starting;
    if (this.running) return;
    this.starting = (this.gate ? this.connectRest(host) : this.connect(host)).finally(() => {
      this.starting = null;
    });
    await this.starting;
    if (this.gate && !this.gated) {
      this.gated = true;
      this.gate.hold(DISCORD_GATEWAY_KEY, { start: () => this.takeGateway(), stop: () => this.dropGateway() });
    }
  }

  /** This instance now holds the gateway lease: log in (posting goes on meanwhile). */
  private async takeGateway(): Promise<void> {
    const host = this.host;
    if (!host || this.stopped) throw new Error('the Discord channel is stopped');
    await this.starting?.catch(() => {});
    if (this.running?.gateway) return;
    const before = this.running;
    this.starting = this.connect(host).finally(() => {
      this.starting = null;
    });
    try {
      await this.starting;
    } catch (err) {
      // Posting goes on with the REST client; the lease is given back (another instance tries).
      if (!this.running && before && !this.stopped) this.running = before;
      throw err;
    }
    if (before && before !== this.running) await this.close(before);
  }

  /** The gateway lease is gone (taken over, or not renewable): log out, keep posting. */
  private async dropGateway(): Promise<void> {
    await this.starting?.catch(() => {});
    const run = this.running;
    if (!run?.gateway || !this.host || this.stopped) return;
    this.running = null;
    await this.close(run);
    this.log.info('discord: gateway handed over to another instance; this one only posts');
    if (!this.stopped) await this.connectRest(this.host).catch((err: unknown) => this.log.error({ reason: sanitizeError(err, 'discord').message }, 'discord: could not set up posting'));
  }

  /**
   * A client without a gateway session: REST with the bot token, for webhooks, typing and
   * permission checks. The instance holding the gateway lease replaces it with a logged-in one.
   */
  private async connectRest(host: ChannelHost): Promise<void> {
    const token = this.cfg.token?.trim();
    if (!token) {
      this.log.error(MISSING_TOKEN_MESSAGE);
      throw new DiscordStartupError(MISSING_TOKEN_MESSAGE, 'missing_token');
    }
    const api = this.cfg.api_base?.replace(/\/+$/, '') || undefined;
    const client = newClient(api, false);
    client.rest.setToken(token);
    if (!this.applicationId) {
      try {
        const app = (await client.rest.get(Routes.currentApplication())) as { id?: string };
        this.applicationId = app.id;
      } catch (err) {
        await client.destroy().catch(() => {});
        const failure = loginFailure(err, undefined);
        this.failure = failure.message;
        this.log.error(failure.message);
        throw failure;
      }
    }
    this.failure = null;
    const webhooks = new WebhookCache({ rest: client.rest, name: this.cfg.webhook_name, api, applicationId: this.applicationId, logger: this.log });
    this.running = { client, host, webhooks, gateway: false };
    this.log.info('discord: ready to post; the gateway is held by one instance of the cluster');
  }

  private async close(run: Running): Promise<void> {
    await run.webhooks.destroy();
    await run.client.destroy();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.starting?.catch(() => {});
    const run = this.running;
    this.running = null;
    this.typing.stopAll();
    if (!run) return;
    await run.webhooks.destroy();
    await run.client.destroy();
    this.log.info('discord: disconnected');
  }

  private async connect(host: ChannelHost): Promise<void> {
    const token = this.cfg.token?.trim();
    if (!token) {
      this.log.error(MISSING_TOKEN_MESSAGE);
      throw new DiscordStartupError(MISSING_TOKEN_MESSAGE, 'missing_token');
    }
    for (const problem of this.nameProblems.values()) this.log.error(problem);

    const api = this.cfg.api_base?.replace(/\/+$/, '') || undefined;
    const client = newClient(api, true);
    let lastCloseCode: number | undefined;
    client.on('shardDisconnect', (ev) => {
      lastCloseCode = ev.code;
      this.gatewayUp = false;
    });
    client.on('shardReconnecting', () => (this.gatewayUp = false));
    client.on('shardReady', () => (this.gatewayUp = true));
    client.on('shardResume', () => (this.gatewayUp = true));
    client.on('error', (err) => this.log.error({ err: sanitizeError(err, 'discord client') }, 'discord: client error'));
    client.on('shardError', (err) => this.log.warn({ reason: sanitizeError(err, 'gateway').message }, 'discord: gateway error'));
    client.on('warn', (text) => this.log.warn({ detail: text }, 'discord: client warning'));
    client.on('messageCreate', (m) => this.onMessage(m));
    listenForReactions(client, { log: this.log, allowBots: this.cfg.allow_bots, allowList: this.allowList, reactors: this.reactors }, {
      live: () => Boolean(this.running?.gateway && this.running.client === client),
      deliver: (r) => this.onReaction(r),
      cleared: (messageId, emoji) => this.agentReactions.cleared(messageId, emoji),
    });
    const live = (c: Client) => Boolean(this.running?.gateway && this.running.client === c);
    listenForEdits(client, { log: this.log, live, allowBots: this.cfg.allow_bots, allowList: this.allowList, deliver: (e) => this.onEdit(e), normalize: (m) => normalizeMessage(m, this.normalizing(this.running!)), ownership: () => this.normalizing(this.running!) });

    // Go live in the ready handler itself: discord.js replays messages queued during the
    // handshake right after it, and they must find the adapter running.
    const ready = new Promise<void>((resolve) =>
      client.once('clientReady', () => {
        this.applicationId ??= client.application?.id;
        const webhooks = new WebhookCache({ rest: client.rest, name: this.cfg.webhook_name, api, applicationId: client.application?.id, logger: this.log });
        this.running = { client, host, webhooks, gateway: true };
        resolve();
      }),
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new DiscordStartupError(`Discord: the gateway was not ready after ${READY_TIMEOUT_MS / 1000} s`, 'timeout')),
        READY_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([client.login(token).then(() => ready), timeout]);
    } catch (err) {
      this.running = null;
      await client.destroy().catch(() => {});
      const failure = err instanceof DiscordStartupError ? err : loginFailure(err, lastCloseCode);
      this.failure = failure.message;
      this.log.error(failure.message);
      throw failure;
    } finally {
      clearTimeout(timer);
    }

    const run = this.running as Running | null;
    if (!run) throw new DiscordStartupError('Discord: the gateway became ready but the adapter did not start', 'connect_failed');
    this.failure = null;
    this.gatewayUp = true;
    this.log.info({ bot: client.user?.tag, guilds: client.guilds.cache.size }, 'discord: connected');
    // Permission problems show up now, naming the channel, rather than at the first agent reply.
    await this.channels.check(run, this.allowList, this.cfg.agent_reactions === 'bot');
  }

  /**
   * Connected when the gateway session is up and every channel Chorus serves can take posts; a
   * channel where the webhook cannot be made (no Manage Webhooks) makes it not ready, naming it.
   */
  status(): ChannelStatus {
    if (this.starting) return { ok: false, state: 'connecting' };
    const run = this.running;
    if (!run) return this.failure ? { ok: false, state: 'failed', error: this.failure } : { ok: false, state: 'stopped' };
    // Another instance of the cluster reads the gateway; this one posts for the groups it runs.
    if (!run.gateway) return { ok: true, state: 'posting' };
    const channels = this.channels.parts(this.allowList);
    if (!this.gatewayUp) return { ok: false, state: 'reconnecting', error: 'the gateway connection dropped; reconnecting', channels };
    const failing = Object.values(channels).filter((c) => !c.ok).length;
    return failing === 0 ? { ok: true, state: 'ready', channels } : { ok: false, state: 'degraded', error: `${failing} channel(s) cannot take posts`, channels };
  }

  private onMessage(m: Message): void {
    const run = this.running;
    if (!run?.gateway || run.client !== m.client) return;
    const result = normalizeMessage(m, this.normalizing(run));
    if ('skip' in result) {
      this.log.debug({ messageId: m.id, reason: result.skip }, 'discord: message skipped');
      return;
    }
    const msg = result.message;
    // One chat's messages reach the router in the order Discord delivered them.
    const notify = (t: string) => this.postAsSystem({ channel: 'discord', chatId: msg.chatId, threadId: msg.threadId }, t);
    void this.inbound
      .run(msg.chatId, async () => (m.attachments.size === 0 || (await attachFiles(m, msg, run.host.files, notify, this.log)) ? run.host.handle({ kind: 'message', message: msg }) : null))
      .then((res) => {
        // The gateway does not deliver a message twice: say plainly that this one was not kept.
        if (res?.status === 'rejected' && res.code === 'unavailable') this.log.error({ messageId: msg.messageId, chatId: msg.chatId }, 'discord: storage unavailable; this message was not recorded');
      })
      .catch((err) => this.log.error({ err, messageId: msg.messageId, chatId: msg.chatId }, 'discord: router did not take the message'));
  }

  private normalizing(run: Running): NormalizeContext {
    return {
      botUserId: run.client.user?.id,
      applicationId: run.client.application?.id ?? this.applicationId,
      isOwnWebhook: (id) => run.webhooks.isOwn(id),
      webhookName: this.cfg.webhook_name,
      allowBots: this.cfg.allow_bots,
      allowList: this.allowList,
      agents: this.agents,
      agentForMessage: (chatId, id) => this.poster.agentOf(id) ?? run.host.agentForPostedMessage('discord', chatId, id),
    };
  }

  /** A person's edit or deletion, in order with the chat's messages (the message came in first). */
  private onEdit(e: PlatformEdit): void {
    const run = this.running;
    if (!run) return;
    void this.inbound.run(e.chatId, () => run.host.handle({ kind: 'edit', edit: e })).catch((err) => this.log.error({ err, messageId: e.platformMessageId, chatId: e.chatId }, 'discord: an edit or deletion was not recorded'));
  }

  /** A person's reaction, in order with the chat's messages (one reacted to has been handed on first). */
  private onReaction(r: PlatformReaction): void {
    const run = this.running;
    if (!run) return;
    void this.inbound.run(r.chatId, () => run.host.handle({ kind: 'reaction', reaction: r })).catch((err) => this.log.error({ err, messageId: r.platformMessageId, chatId: r.chatId }, 'discord: a reaction was not recorded'));
  }

  /** `opts.approval`: every argument shown; no buttons (webhooks cannot carry them), the text names the commands. */
  postAsAgent(chat: ChatRef, agent: AgentDef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    return this.poster.asAgent(chat, agent, text, opts);
  }

  postAsSystem(chat: ChatRef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    return this.poster.asSystem(chat, text, opts);
  }

  relay(chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage> {
    return this.poster.relay(chat, from, text, opts);
  }

  // No `via` (PostedMessage.via): the channel's webhook may edit and delete any message it posted, whoever it showed.
  editPosted(chat: ChatRef, ids: readonly string[], by: PostedBy, text: string): Promise<void> {
    return this.poster.edit(chat, ids, by, text);
  }

  deletePosted(chat: ChatRef, ids: readonly string[], _by: PostedBy): Promise<void> {
    return this.poster.delete(chat, ids);
  }

  startTyping(chat: ChatRef, _agent: AgentDef): () => void {
    const run = this.running;
    if (!run) return () => {};
    return this.typing.start(run.client, chat);
  }

  /** With `agent_reactions: bot` the gateway bot shows it (agentReactions.ts); with `off`, false. */
  react(chat: ChatRef, agent: AgentDef, platformMessageId: string, emoji: string, on: boolean): Promise<boolean> {
    return this.agentReactions.react(this.running?.client.rest, chat, agent, platformMessageId, emoji, on);
  }

  async isAdmin(chat: ChatRef, userId: string): Promise<boolean> {
    if (this.admins.has(userId)) return true;
    const run = this.running;
    if (!run) return false;
    try {
      // Without a gateway session the guild is not cached: read it first (the channel needs it).
      if (!run.gateway) await fetchGuildOf(run.client, chat.chatId);
      return await hasManageChannels(run.client, chat.chatId, userId);
    } catch (err) {
      this.log.warn({ chatId: chat.chatId, userId, reason: sanitizeError(err, 'permission check').message }, 'discord: admin check failed');
      return false;
    }
  }

  warnings(chat: ChatRef, participants: readonly string[]): string[] {
    const out: string[] = [];
    const channelProblem = this.channels.problem(chat.chatId);
    if (channelProblem) out.push(channelProblem);
    const reactionProblem = this.channels.reactionProblem(chat.chatId);
    if (reactionProblem) out.push(reactionProblem);
    for (const id of participants) {
      const p = this.nameProblems.get(id);
      if (p) out.push(p);
    }
    return out;
  }
}
