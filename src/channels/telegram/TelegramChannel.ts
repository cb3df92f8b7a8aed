/**
 * The Telegram channel: every agent with a `telegram.token` is its own grammY bot.
 * Inbound: each bot polls (or, in webhook mode, Telegram POSTs its updates to the web channel's
 * server) and hands its copy of a human message to the router, which dedupes copies; an update is
 * confirmed (polling: the offset moves; webhook: answered 200) only after the router recorded it.
 * Outbound: each reply goes through the speaking agent's own bot, the system voice through the bot
 * a command was addressed to (or the first participant's bot). Reactions both ways: reactions.ts.
 * Rooms across chats: relayed people and carried edits out (rooms.ts), people's edits in (inboundEdits.ts).
 */
import type { Message, ChatMemberUpdated } from 'grammy/types';
import type { Bot } from 'grammy';
import type { Channel, ChannelCapabilities, ChannelHost, Logger, PostedMessage, PostOptions } from '../../core/ports.js';
import type { PostedBy, RelayedAuthor } from '../../core/roomTypes.js';
import type { ChannelStatus } from '../../core/readModels.js';
import type { AgentDef, ChatRef } from '../../core/types.js';
import { KeyedQueue } from '../../core/lib/KeyedQueue.js';
import { AdminCache } from './admins.js';
import { AgentBot, botWarnings, bringUpRetrying, channelStatus, reactionWarnings } from './bots.js';
import { Typers } from './typing.js';
import { describeError, apiErrorCode, refusedForGood } from './errors.js';
import { isBasicGroupId, membershipDirection, normalizeMessage, parseChatId, updateChatKey, type BotDirectory } from './normalize.js';
import { TELEGRAM_LIMIT, type SendHooks } from './sender.js';
import { createWebhookHandler, webhookEndpoint } from './webhook.js';
import { MalformedUpdateError, checkUpdateShape, deadLetterKeeper } from './deadLetters.js';
import { ApprovalButtons, approvalKeyboard, sendPostOrRequest } from './approvals.js';
import { BasicGroupIds } from './basicIds.js';
import { ChatAddresses } from './addresses.js';
import { TelegramReactions } from './reactions.js';
import type { TelegramChannelOptions } from './options.js';
import { TelegramFiles, attachFiles, hasFiles } from './files.js';
import { readKept } from '../../core/fileTypes.js';
import { RelayBot } from './relayBot.js';
import { botIdOf, RELAY_KEY, TelegramRooms } from './rooms.js';
import { InboundEdits } from './inboundEdits.js';
import { alsoInChat } from './newGroupMembers.js';

export type { TelegramChannelOptions } from './options.js';

/** How long start() waits for the bots before letting the rest of Chorus go on. */
const START_WAIT_MS = 5000;

export class TelegramChannel implements Channel {
  readonly kind = 'telegram' as const;
  readonly capabilities: ChannelCapabilities = { maxMessageLength: TELEGRAM_LIMIT };

  private readonly log: Logger;
  private readonly bots: AgentBot[] = [];
  /** Agents left out at construction (a token shared with another agent), with the reason. */
  private readonly skipped = new Map<string, string>();
  private readonly admins: AdminCache;
  /** Posts to one chat go out one at a time, whichever bot sends them (see sender.ts). */
  private readonly queues = new KeyedQueue();
  /** Membership changes of one chat run one at a time, so three bots added at once form one group. */
  private readonly memberQueues = new KeyedQueue();
  private host: ChannelHost | undefined;
  private running = false;
  private starting: Promise<void> | undefined;
  private lifecycle: AbortController | undefined;
  private readonly typers = new Typers();
  private readonly rekeys = new Map<string, Promise<void>>();
  /** Agents whose bots we saw in a chat (updates, joins): candidates for the system voice. */
  private readonly present = new Map<number, Set<string>>();
  /** Basic groups: each bot's own ids of recent messages (replies, reactions). */
  private readonly basic = new BasicGroupIds();
  /** Chat ids to call (following upgrades), topics, reply targets. */
  private readonly addresses = new ChatAddresses(this.basic);
  /**
   * Webhook mode: POSTed updates of one chat are handed over one at a time, in the order their
   * bodies arrived (Telegram may deliver on parallel connections; polling hands them over in
   * update order, a webhook only as ordered as Telegram sends them).
   */
  private readonly inboundQueues = new KeyedQueue();
  /** Webhook mode: true from start() until stop() begins; outside it, POSTs answer 503. */
  private accepting = false;
  private webhookTimer: NodeJS.Timeout | undefined;
  /** Approve / Deny buttons under requests for approval, and their presses. */
  private readonly approvals: ApprovalButtons;
  /** People's reactions in, agents' reactions out. */
  private readonly reactions: TelegramReactions;
  /** Photos and documents in (one fetch per message, whichever bot's copy comes first). */
  private readonly tgFiles: TelegramFiles;
  /** The relay bot, when `relay_token` is set: it only posts. */
  private readonly relayBot: RelayBot | undefined;
  private readonly rooms: TelegramRooms;
  private readonly inboundEdits: InboundEdits;
  private readonly hooks: SendHooks;

  constructor(private readonly opts: TelegramChannelOptions) {
    this.log = opts.logger.child({ channel: 'telegram' });
    this.hooks = { log: this.log, onMigrated: (o, n) => this.migrate(o, n) };
    this.approvals = new ApprovalButtons({ log: this.log, host: () => this.host, running: () => this.running, bot: (id) => this.readyBot(id), isAdmin: (c, u) => this.isAdmin(c, u) });
    this.admins = new AdminCache(opts.config.admins, this.log);
    this.reactions = new TelegramReactions({ log: this.log, host: () => this.host, basic: this.basic });
    const apiRoot = opts.config.api_root.replace(/\/+$/, '');
    this.tgFiles = new TelegramFiles(apiRoot, this.log);
    const relayToken = opts.config.relay_token?.trim();
    this.relayBot = relayToken ? new RelayBot(relayToken, apiRoot, this.log) : undefined;
    this.inboundEdits = new InboundEdits({ log: this.log, host: () => this.host, basic: this.basic, directory: this.directory });
    this.rooms = new TelegramRooms({
      log: this.log, host: () => this.host, target: (c) => this.addresses.target(c), queue: (id, fn) => this.queues.run(id, fn),
      relayBot: () => (!this.relayBot || this.relayBot.rejected ? 'never' : this.relayBot.ready ? this.relayBot.bot : undefined),
      agentBot: (id) => this.readyBot(id)?.bot ?? (this.bots.some((b) => b.agent.id === id) ? undefined : 'never'),
      botKeyOf: (id) => (this.relayBot && botIdOf(this.relayBot.token) === id ? RELAY_KEY : this.bots.find((b) => botIdOf(b.token) === id)?.agent.id),
      systemBots: (c) => this.botsOf(c, this.addresses.target(c).tgId, this.addresses.target(c).dmAgentId).map((b) => ({ key: b.agent.id, bot: b.bot })),
      replyId: (c, tgId, key, replyTo) => this.addresses.replyId(c, tgId, key, replyTo),
      hooks: this.hooks,
    });
    const wh = opts.config.mode === 'webhook' ? opts.config.webhook : undefined;
    if (wh && (!wh.url || !wh.secret_token || !opts.mounts)) {
      throw new Error('telegram: webhook mode needs channels.telegram.webhook.url and secret_token, and the web channel to serve the endpoints');
    }
    const settings = wh ? { url: wh.url!, path: wh.path, secretToken: wh.secret_token! } : undefined;
    const seen = new Map<string, string>();
    for (const agent of opts.agents) {
      const token = agent.telegram?.token.trim();
      if (!token) continue;
      const other = seen.get(token);
      if (other) {
        this.log.error({ agent: agent.id, sharesWith: other }, `telegram: agent "${agent.id}" uses the same bot token as "${other}"; every agent needs its own bot — "${agent.id}" is skipped`);
        this.skipped.set(agent.id, `uses the same bot token as "${other}"; give every agent its own bot from @BotFather`);
        continue;
      }
      seen.set(token, agent.id);
      const endpoint = settings ? webhookEndpoint(settings, agent.id, token) : undefined;
      const deadLetter = deadLetterKeeper({ agentId: agent.id, store: opts.deadLetters, log: this.log, secrets: [token] });
      const ab = new AgentBot(agent, token, apiRoot, this.log, opts.pollTimeoutSeconds ?? 25, endpoint && settings ? { url: endpoint.url, secretToken: settings.secretToken } : undefined, settings ? undefined : opts.connections, deadLetter);
      // Before any handler reads it: a malformed update fails here, as a MalformedUpdateError.
      ab.bot.use((ctx, next) => (checkUpdateShape(ctx.update), next()));
      ab.bot.on('message', (ctx) => this.onMessage(ab, ctx.message));
      ab.bot.on('edited_message', (ctx) => this.inboundEdits.received(ab.agent.id, ctx.editedMessage));
      ab.bot.on('my_chat_member', (ctx) => this.onMembership(ab, ctx.myChatMember));
      ab.bot.on('callback_query', (ctx) => this.approvals.press(ab, ctx.callbackQuery));
      ab.bot.on('message_reaction', (ctx) => this.reactions.received(ab, ctx.update.update_id, ctx.messageReaction));
      this.bots.push(ab);
      // Mounted for the channel's lifetime: before start and after stop it answers 503, so
      // Telegram keeps the update and delivers it again.
      if (endpoint && settings) {
        const handler = createWebhookHandler({
          secretToken: settings.secretToken, log: this.log, secrets: [token, settings.secretToken], deadLetter,
          bot: () => (this.accepting && ab.me !== undefined && ab.status !== 'unauthorized' ? ab.bot : undefined),
          run: (update, handle) => this.inboundQueues.run(updateChatKey(update), handle),
        });
        opts.mounts!.mount(endpoint.path, (req, res) => handler(req, res));
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Lifecycle

  async start(host: ChannelHost): Promise<void> {
    if (this.running) return;
    if (this.starting) return this.starting;
    this.starting = (async () => {
      this.host = host;
      this.accepting = true;
      const lifecycle = new AbortController();
      this.lifecycle = lifecycle;
      if (this.bots.length === 0) this.log.warn('telegram: enabled, but no agent has a telegram.token; nothing to poll');
      // Normally every bot is up in well under a second. When the Bot API is slow or failing, do not
      // hold the other channels (the web feed) hostage: the bots keep coming up in the background.
      const all = Promise.all([...this.bots, ...(this.relayBot ? [this.relayBot] : [])].map((b) => this.bringUp(b, lifecycle.signal)));
      let timer: NodeJS.Timeout | undefined;
      const waited = await Promise.race([all.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), START_WAIT_MS)))]);
      clearTimeout(timer);
      if (!waited) this.log.warn({ waitedMs: START_WAIT_MS }, 'telegram: the Bot API is slow to answer; bots keep starting in the background');
      if (this.opts.config.mode === 'webhook') {
        this.webhookTimer = setInterval(() => this.bots.forEach((b) => void b.checkWebhook()), this.opts.webhookCheckMs ?? 60_000);
        this.webhookTimer.unref();
      }
      this.running = true;
    })().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private bringUp(b: AgentBot | RelayBot, signal: AbortSignal): Promise<void> {
    // A typed @bot_username addresses its agent even when Telegram sends no mention entity.
    return bringUpRetrying(b, signal, () => b instanceof AgentBot && b.me?.username && this.host?.registerHandle(b.me.username, b.agent.id));
  }

  /**
   * Connected when every agent's bot works: a rejected token, a Bot API that cannot be reached or
   * polling that keeps failing (another instance polling the same token: 409) makes it not ready.
   */
  status(): ChannelStatus {
    const s = channelStatus(this.bots, this.skipped, this.running || this.starting !== undefined);
    // The relay bot is shown, but relayed messages go through an agent's bot while it is down.
    return this.relayBot ? { ...s, bots: { ...s.bots, [RELAY_KEY]: this.relayBot.health() } } : s;
  }

  async stop(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    if (!this.running) return;
    this.running = false;
    this.accepting = false;
    clearInterval(this.webhookTimer);
    this.lifecycle?.abort();
    this.typers.stopAll();
    await Promise.all(this.bots.map((b) => b.stop()));
  }

  // ----------------------------------------------------------------------------------- Inbound
  private readonly directory: BotDirectory = {
    agentByBotId: (id) => this.bots.find((b) => b.me?.id === id)?.agent.id,
    agentByUsername: (name) => this.bots.find((b) => b.me?.username.toLowerCase() === name.toLowerCase())?.agent.id,
    // getMe's id, or before it answered the id a token starts with.
    isOwnBot: (id) => [...this.bots, this.relayBot].some((b) => b !== undefined && (b.me ? b.me.id === id : b.token.split(':')[0] === String(id))),
  };

  /** Resolves once the router recorded the message: only then may the update be confirmed. */
  private async onMessage(b: AgentBot, msg: Message): Promise<void> {
    const host = this.host;
    if (!host) return;
    if (msg.migrate_to_chat_id !== undefined) return this.migrate(msg.chat.id, msg.migrate_to_chat_id);
    if (msg.migrate_from_chat_id !== undefined) return this.migrate(msg.migrate_from_chat_id, msg.chat.id);
    if (msg.chat.type !== 'private') this.notePresent(msg.chat.id, b.agent.id, true);
    let result;
    try {
      if (msg.chat.type === 'group') this.basic.noteSeen(msg, b.agent.id);
      result = normalizeMessage(msg, b.agent.id, this.directory, (chatId, id) => host.agentForPostedMessage('telegram', chatId, id), (own) => this.basic.nameOf(msg.chat.id, b.agent.id, own));
    } catch (err) {
      // A message we cannot read must not block the bot's queue: kept as a dead letter, confirmed.
      throw new MalformedUpdateError(`could not read the message: ${describeError(err, [b.token])}`, { cause: err });
    }
    if ('skip' in result) {
      this.log.debug({ agent: b.agent.id, messageId: msg.message_id, reason: result.skip }, 'telegram: message skipped');
      return;
    }
    const inbound = result.message;
    // Which bots are admins (warnings: reactions reach only those): read once per chat, then kept by my_chat_member.
    if (!inbound.isPrivate) this.refreshAdmins({ channel: 'telegram', chatId: inbound.chatId, viaAgentId: b.agent.id }, Infinity);
    if (hasFiles(msg) && !(await attachFiles(() => this.tgFiles.take(b.bot, b.token, msg, `${inbound.chatId}:${inbound.messageId}`, host.files), inbound, (t) => this.postAsSystem({ channel: 'telegram', chatId: inbound.chatId, threadId: inbound.threadId, viaAgentId: b.agent.id }, t), this.log))) return;
    const res = await host.handle({ kind: 'message', message: inbound });
    // A host that refuses while we are shutting down, or whose store cannot write, has not recorded
    // it: leave it unconfirmed so Telegram hands it over again.
    if (res.status === 'rejected' && (!this.running || res.code === 'unavailable' || res.code === 'shutting_down')) throw new Error('not recorded; will be fetched again');
    this.log.debug({ agent: b.agent.id, chatId: inbound.chatId, messageId: inbound.messageId, status: res.status }, 'telegram: message handed over');
  }

  private async onMembership(b: AgentBot, u: ChatMemberUpdated): Promise<void> {
    const host = this.host;
    // Promoted or demoted: Telegram sends reactions only to admin bots (warnings).
    if (u.chat.type !== 'private') this.admins.noteBot(u.chat.id, u.new_chat_member);
    const dir = membershipDirection(u);
    if (!host || !dir || u.chat.type === 'private' || u.chat.type === 'channel') return;
    this.notePresent(u.chat.id, b.agent.id, dir === 'joined');
    this.admins.invalidate(u.chat.id);
    const chat: ChatRef = { channel: 'telegram', chatId: String(u.chat.id), viaAgentId: b.agent.id };
    const title = 'title' in u.chat ? u.chat.title : undefined;
    this.log.info({ agent: b.agent.id, chatId: chat.chatId, change: dir }, `telegram: bot of "${b.agent.id}" ${dir} a chat`);
    // In turn per chat: a chat about to form its group takes in the other agents' bots already there.
    const forming = () => dir === 'joined' && this.opts.config.auto_create_groups && !host.findGroup('telegram', chat.chatId);
    await this.memberQueues.run(chat.chatId, async () => {
      const who = dir === 'joined' ? { joined: [b.agent.id, ...(forming() ? await alsoInChat(b, this.bots, u.chat.id, this.log) : [])] } : { left: [b.agent.id] };
      return host.handle({ kind: 'membership', chat, change: { ...who, title, autoCreate: this.opts.config.auto_create_groups } });
    });
  }

  /** Re-key once per migration, however many bots (and which of the two service messages) report it. */
  private migrate(oldId: number, newId: number): Promise<void> {
    const key = `${oldId}>${newId}`;
    let p = this.rekeys.get(key);
    if (!p) {
      this.addresses.migrations.set(oldId, newId);
      this.admins.invalidate(oldId);
      const was = this.present.get(oldId);
      if (was) this.present.set(newId, new Set(was));
      this.log.info({ from: oldId, to: newId }, 'telegram: group was upgraded to a supergroup; re-keying');
      p = this.host!.handle({ kind: 'rekey', channel: 'telegram', oldChatId: String(oldId), newChatId: String(newId) }).catch((err: unknown) => {
        this.rekeys.delete(key); // let the redelivered update try again
        throw err;
      });
      this.rekeys.set(key, p);
    }
    return p;
  }

  private notePresent(chatId: number, agentId: string, present: boolean): void {
    let set = this.present.get(chatId);
    if (!set) this.present.set(chatId, (set = new Set()));
    if (present) set.add(agentId);
    else set.delete(agentId);
  }

  // ------------------------------------------------------------------------------------------
  // Outbound

  /**
   * A bot that can send: its token was accepted once. Polling is not needed to post, so replies
   * finishing while the channel stops still go out.
   */
  private readyBot(agentId: string | undefined): AgentBot | undefined {
    return this.bots.find((b) => b.agent.id === agentId && b.me !== undefined && b.status !== 'unauthorized');
  }

  /** `approval`: the agent's request for approval, laid out whole with its buttons last (approvalPosts.ts). */
  private async send(b: AgentBot, chat: ChatRef, text: string, opts: PostOptions | undefined, approval?: PostOptions['approval']): Promise<PostedMessage> {
    const t = this.addresses.target(chat);
    const hooks = this.hooks;
    const keyboard = approval ? approvalKeyboard(approval.id, approval.digest) : undefined;
    const files = opts?.attachments?.length && this.host ? await readKept(this.host.files, opts.attachments, (a) => this.log.error({ file: a.id }, 'telegram: a file to post is not kept; posting without it')) : [];
    const target = { chatId: t.tgId, threadId: t.threadId, replyTo: this.addresses.replyId(chat, t.tgId, b.agent.id, opts?.replyToMessageId), keyboard };
    const post = () => sendPostOrRequest(b.bot, target, { text, files, approval }, hooks);
    const ids = await this.queues.run(chat.chatId, post).catch((err: unknown) => Promise.reject(refusedForGood(err, `a post in chat ${chat.chatId}`)));
    if (isBasicGroupId(t.tgId)) this.basic.notePosted(t.tgId, b.agent.id, ids);
    // Its buttons go away once the call is decided (see approvals.ts).
    if (approval && keyboard && ids.length) this.approvals.posted(chat.chatId, approval.id, { agentId: b.agent.id, tgChatId: this.addresses.target(chat).tgId, messageId: ids.at(-1)!, digest: approval.digest });
    return { ids: ids.map(String), via: botIdOf(b.token) };
  }

  async postAsAgent(chat: ChatRef, agent: AgentDef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    const b = this.readyBot(agent.id);
    if (!b) throw new Error(`agent "${agent.id}" has no working Telegram bot`);
    return this.send(b, chat, text, opts, opts?.approval);
  }

  async postAsSystem(chat: ChatRef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    this.approvals.systemLine(chat, text);
    const { tgId, dmAgentId } = this.addresses.target(chat);
    const candidates = this.botsOf(chat, tgId, dmAgentId);
    if (candidates.length === 0) throw new Error(`no Telegram bot can post in chat ${chat.chatId}`);
    let lastErr: unknown;
    for (const b of candidates) {
      try {
        const posted = await this.send(b, chat, text, opts);
        this.rooms.notePoster(chat.chatId, posted.ids, b.agent.id);
        return posted;
      } catch (err) {
        lastErr = err;
        this.log.warn({ agent: b.agent.id, chatId: chat.chatId, err: describeError(err, [b.token]) }, 'telegram: system notice failed through this bot; trying the next');
      }
    }
    throw lastErr;
  }

  // Rooms across chats: see rooms.ts.
  relay = (chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage> => this.rooms.relay(chat, from, text, opts);
  editPosted = (chat: ChatRef, ids: readonly string[], by: PostedBy, text: string, via?: string): Promise<void> => this.rooms.editPosted(chat, ids, by, text, via);
  deletePosted = (chat: ChatRef, ids: readonly string[], by: PostedBy, via?: string): Promise<void> => this.rooms.deletePosted(chat, ids, by, via);

  startTyping(chat: ChatRef, agent: AgentDef): () => void {
    const b = this.readyBot(agent.id);
    if (!b) return () => undefined;
    const onError = (err: unknown) => this.log.debug({ agent: agent.id, err: describeError(err, [b.token]) }, 'telegram: typing failed');
    return this.typers.start(() => {
      const t = this.addresses.target(chat);
      return b.bot.api.sendChatAction(t.tgId, 'typing', t.threadId !== undefined ? { message_thread_id: t.threadId } : {});
    }, onError);
  }

  /** Through the agent's own bot; false when Telegram cannot show it (see reactions.ts). */
  async react(chat: ChatRef, agent: AgentDef, platformMessageId: string, emoji: string, on: boolean): Promise<boolean> {
    const { tgId } = this.addresses.target(chat);
    const own = isBasicGroupId(tgId) ? this.basic.ownId(tgId, agent.id, platformMessageId) : /^\d+$/.test(platformMessageId) ? Number(platformMessageId) : undefined;
    return this.reactions.show(this.readyBot(agent.id), agent.id, tgId, own, emoji, on);
  }

  async isAdmin(chat: ChatRef, userId: string): Promise<boolean> {
    if (this.opts.config.admins.includes(userId)) return true;
    const { tgId, dmAgentId } = this.addresses.target(chat);
    // In a private chat the user is the only human: they manage their own DM.
    if (dmAgentId !== undefined) return String(tgId) === userId;
    try {
      return await this.admins.isAdmin(tgId, userId, this.chatBots(chat, tgId));
    } catch (err) {
      this.log.warn({ chatId: chat.chatId, err: describeError(err), code: apiErrorCode(err) }, 'telegram: admin check failed');
      return false;
    }
  }

  /** The working bots of a chat's agents: `first`, the one it came through, participants, bots seen there. */
  private botsOf(chat: ChatRef, tgId: number, first?: string): AgentBot[] {
    const ids = [first, chat.viaAgentId, ...(this.host?.findGroup('telegram', chat.chatId)?.participants ?? []), ...(this.present.get(tgId) ?? [])];
    return [...new Set(ids)].map((id) => this.readyBot(id)).filter((b): b is AgentBot => b !== undefined);
  }

  /** Bots that can ask about a chat: those in it first, any working one otherwise. */
  private chatBots(chat: ChatRef, tgId: number): Bot[] {
    const bots = this.botsOf(chat, tgId);
    return (bots.length ? bots : this.bots.filter((b) => b.me !== undefined && b.status !== 'unauthorized')).map((b) => b.bot);
  }

  /** Read the chat's admin list in the background when it is older than `maxAgeMs` (default a minute). */
  private refreshAdmins(chat: ChatRef, maxAgeMs?: number): void {
    const { tgId } = this.addresses.target(chat);
    this.admins.refresh(tgId, this.chatBots(chat, tgId), maxAgeMs);
  }

  warnings(chat: ChatRef, participants: readonly string[]): string[] {
    // A private chat has one bot in it, which answered to be there.
    if (parseChatId(chat.chatId).dmAgentId !== undefined) return [];
    const { tgId } = this.addresses.target(chat);
    // What is known now; a list over a minute old is read again for the next time.
    this.refreshAdmins(chat);
    return [...botWarnings(this.opts.agents, this.bots, participants), ...reactionWarnings(this.opts.agents, this.bots, participants, (b) => this.admins.botIsAdmin(tgId, b.me!.id))];
  }
}
