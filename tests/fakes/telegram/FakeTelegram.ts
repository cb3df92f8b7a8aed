/**
 * A fake Telegram Bot API server on 127.0.0.1 that the real grammY client talks to through
 * `api_root` (`/bot<token>/<method>`). It keeps the platform rules Chorus depends on: per-token
 * identities, real long polling with offsets, bots never seeing other bots, privacy mode, per-bot
 * message ids in basic groups, forum topics, 429s, entity parse errors, the 4096 limit and
 * group → supergroup migration. Tests drive it through the methods below and assert on `posted`.
 *
 * Webhooks as on Telegram: after setWebhook the fake POSTs each bot's updates to its URL with the
 * `X-Telegram-Bot-Api-Secret-Token` header, one at a time per bot and in order, drops an update
 * only on a 2xx answer and otherwise tries it again (getWebhookInfo shows the last error), and
 * answers getUpdates with 409 while a webhook is set.
 *
 * Inline keyboards (buttons.ts): `press` queues a `callback_query` to the bot that sent the
 * message, `answers` and `edits` record answerCallbackQuery and editMessageReplyMarkup.
 *
 * Reactions (reactions.ts): `humanReacts` queues a `message_reaction` update to the chat's admin
 * bots only (`setAdmins`, `promoteBot`); `setMessageReaction` checks Telegram's emoji set and the
 * chat's own (`setAvailableReactions`) and records what each bot set (`reactions.set`,
 * `reactions.shownBy`).
 *
 * Edits and deletions (edits.ts): `editMessageText` / `editMessageCaption` / `deleteMessage` with
 * Telegram's refusals, recorded in `changes`; `humanEdits` sends `edited_message`. Bot-to-bot
 * mode (`addBot({ botToBot: true })`): such a bot also receives other bots' group messages, the
 * fake's own bots' and a foreign bot's (`foreignBotSays`). `setOutage` makes every call a 5xx.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { detectEntities, EntityParseError, parseHtml, parseMarkdownV2, type FakeEntity } from './entities.js';
import { FakeState, type BotRec, type ChatRec, type MsgRec } from './state.js';
import { FakeButtons, readKeyboard, type InlineKeyboard } from './buttons.js';
import { FakeReactions, type FakeReaction } from './reactions.js';
import { FakeFiles, readMultipart, sha256 } from './files.js';
import { FakeEdits } from './edits.js';

export type { BotRec, ChatRec, MsgRec } from './state.js';
export type { CallbackAnswer, InlineKeyboard, MarkupEdit } from './buttons.js';
export type { BotReactionSet, FakeReaction } from './reactions.js';
export type { BotDeletion, BotEdit } from './edits.js';

export type FakeUser = {
  id: number;
  first_name: string;
  last_name?: string;
  username?: string;
};

/** One message a bot sent, as the chat shows it. */
export interface Posted {
  key: number;
  chatId: number;
  messageId: number;
  /** Username of the sending bot. */
  bot: string;
  /** Display name of the sender (the bot's first_name). */
  author: string;
  /** Visible text (after parse mode). */
  text: string;
  parseMode?: string | undefined;
  threadId?: number | undefined;
  replyToMessageId?: number | undefined;
  /** The inline keyboard it was sent with (see `keyboardOf` for the one it has now). */
  keyboard?: InlineKeyboard | undefined;
}

interface Injected {
  method: string;
  remaining: number;
  token?: string | undefined;
  when?: ((payload: Record<string, unknown>) => boolean) | undefined;
  error: { error_code: number; description: string; parameters?: Record<string, unknown> };
}

/**
 * A transport-level fault: an HTTP error status (JSON in the Bot API's shape, or an HTML page as a
 * front proxy sends it), or the connection destroyed without an answer — `'drop'` before the
 * method ran, `'drop-after'` after it ran (the message was posted, the bot never hears so).
 */
export type TransportFault = { status: number; html?: boolean } | 'drop' | 'drop-after';

interface InjectedFault {
  method: string;
  remaining: number;
  token?: string | undefined;
  when?: ((payload: Record<string, unknown>) => boolean) | undefined;
  fault: TransportFault;
}

/** One webhook POST the fake made, and how it ended. */
export interface WebhookDelivery {
  bot: string;
  updateId: number;
  url: string;
  /** HTTP status, or 0 when the connection failed or the answer was lost. */
  status: number;
}

type ApiResult = { ok: true; result: unknown } | { ok: false; error_code: number; description: string; parameters?: Record<string, unknown> };

const fail = (error_code: number, description: string, parameters?: Record<string, unknown>): ApiResult =>
  parameters ? { ok: false, error_code, description, parameters } : { ok: false, error_code, description };

export class FakeTelegram {
  readonly state = new FakeState();
  /** Every API call, in arrival order (bot = username, or null for unknown tokens). */
  readonly calls: Array<{ bot: string | null; method: string; payload: Record<string, unknown> }> = [];
  readonly posted: Posted[] = [];
  /** Files people sent and bots uploaded. */
  readonly files = new FakeFiles();
  /** Inline keyboards: presses, answered callback queries (`answers`), markup edits (`edits`), the answer window's clock (`now`). */
  readonly buttons = new FakeButtons(this.state);
  /** Reactions: bots' setMessageReaction calls (`reactions.set`) and what they show (`reactions.shownBy`). */
  readonly reactions = new FakeReactions(this.state);
  /** Bots' edits and deletions (`changes.edits`, `changes.deletions`). */
  readonly changes = new FakeEdits(this.state, (m, text) => {
    for (const p of this.posted) if (p.key === m.key) p.text = text;
  });
  /** While set, every call (getUpdates too, unless listed in `spare`) answers this 5xx, as in a Bot API outage. */
  private outage: { status: number; spare: string[] } | undefined;
  private readonly injected: Injected[] = [];
  private readonly faults: InjectedFault[] = [];
  /** Every transport fault the fake produced, in order (what the client had to cope with). */
  readonly faultLog: Array<{ method: string; fault: TransportFault; payload: Record<string, unknown> }> = [];
  private server: http.Server | undefined;
  apiRoot = '';
  /**
   * Called when a bot confirms updates (a getUpdates with a higher offset), before Telegram forgets
   * them: the moment a test can check that what was confirmed is already recorded.
   */
  onConfirm: ((bot: string, updates: Array<Record<string, unknown>>) => void) | undefined;
  /** Every webhook POST, in order. */
  readonly deliveries: WebhookDelivery[] = [];
  /**
   * Where a webhook POST really goes: a load balancer in front of several instances. Gets the
   * URL set with setWebhook and how many POSTs were started before; returns the URL to POST to.
   */
  webhookRoute: ((url: string, n: number) => string) | undefined;
  /** Pause before retrying a failed webhook delivery (Telegram backs off for seconds; tests need less). */
  webhookRetryMs = 50;
  /** The answers of the next N webhook deliveries are "lost" (as on a timeout): Telegram sends them again. */
  loseWebhookAnswers = 0;
  private readonly delivering = new Set<string>();
  /** POSTs started so far (bots deliver in parallel), for `webhookRoute`. */
  private routed = 0;
  private closed = false;
  /** Updates not yet confirmed, per bot username. */
  unconfirmed(): Map<string, number> {
    return new Map([...this.state.bots.values()].map((b) => [b.username, b.queue.length]));
  }

  static async start(): Promise<FakeTelegram> {
    const f = new FakeTelegram();
    await f.listen();
    return f;
  }

  private async listen(): Promise<void> {
    this.state.onQueued = (bot) => this.deliver(bot);
    this.server = http.createServer((req, res) => void this.onRequest(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.apiRoot = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const bot of this.state.bots.values()) this.state.answerPoll(bot, []);
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  // ------------------------------------------------------------------------------------------
  // Test-side API

  addBot(opts: { token: string; username: string; firstName: string; canReadAll?: boolean; botToBot?: boolean }): BotRec {
    return this.state.addBot(opts.token, opts.username, opts.firstName, opts.canReadAll ?? true, opts.botToBot ?? false);
  }
  /** Bot-to-Bot Communication Mode on or off for a bot (BotFather's switch). */
  setBotToBot(token: string, on: boolean): void {
    this.state.bots.get(token)!.botToBot = on;
  }
  /**
   * A bot that is not one of the fake's writes in a group (it must have bot-to-bot mode itself):
   * bots in bot-to-bot mode receive it when addressed, or always as admins with privacy mode off.
   */
  foreignBotSays(chatId: number, bot: FakeUser, text: string, opts: { replyTo?: { key: number } | undefined; threadId?: number | undefined } = {}): { key: number; messageId: number } {
    const rec = this.state.foreignBotMessage(chatId, { ...bot, is_bot: true }, text, detectEntities(text), opts.replyTo?.key, opts.threadId);
    return { key: rec.key, messageId: this.state.idFor(rec, 'human') };
  }
  /** A person edits their message (by its key): `edited_message` to every bot that saw it; returns their usernames. */
  humanEdits(message: { key: number }, text: string, editDate?: number): string[] {
    return this.changes.humanEdits(this.findMessage(message.key), text, editDate);
  }
  /** A Bot API outage: every call answers `status` (JSON, as Telegram's front does) until `setOutage(null)`. */
  setOutage(status: number | null, spare: string[] = ['getUpdates']): void {
    this.outage = status === null ? undefined : { status, spare };
  }
  /** The token stops working: every call answers 401, as after /revoke in @BotFather. */
  revoke(token: string): void {
    const b = this.state.bots.get(token);
    if (b) b.revoked = true;
  }
  createGroup(title: string, opts: { type?: 'group' | 'supergroup'; forum?: boolean } = {}): ChatRec {
    return this.state.createChat(opts.type ?? 'supergroup', title, opts.forum ?? false);
  }
  createTopic(chatId: number, name: string): number {
    return this.state.createTopic(chatId, name);
  }
  /** The chat's admins allow only these reactions (its `available_reactions`); null: all again. */
  setAvailableReactions(chatId: number, emoji: readonly string[] | null): void {
    this.reactions.allow(chatId, emoji);
  }
  /** The chat's administrators (people's and bots' user ids), as they are; no update is sent. */
  setAdmins(chatId: number, userIds: number[]): void {
    this.state.chat(chatId).admins = new Set(userIds);
  }
  /**
   * `by` makes a bot of the chat an administrator (or, `admin: false`, takes it back): as on
   * Telegram, the bot gets a `my_chat_member` update (member → administrator).
   */
  promoteBot(chatId: number, token: string, by: FakeUser, admin = true): void {
    const chat = this.state.chat(chatId);
    const bot = this.state.bots.get(token)!;
    if (!chat.bots.has(token) || chat.admins.has(bot.id) === admin) return;
    if (admin) chat.admins.add(bot.id);
    else chat.admins.delete(bot.id);
    const member = (status: string) => ({ status, user: this.state.botUser(bot), ...(status === 'administrator' ? { can_be_edited: false, can_manage_chat: true } : {}) });
    this.state.push(bot, {
      my_chat_member: {
        chat: this.state.apiChat(chat), from: { is_bot: false, ...by }, date: Math.floor(Date.now() / 1000),
        old_chat_member: member(admin ? 'member' : 'administrator'), new_chat_member: member(admin ? 'administrator' : 'member'),
      },
    });
  }
  /**
   * `user` (or an anonymous admin) changes their reactions on a message — by its id as people see
   * it, or by its key — from `before` to `after`. A `message_reaction` update goes to each bot
   * that is an admin of the chat (in a private chat, to its bot); returns those bots' usernames.
   */
  humanReacts(chatId: number, user: FakeUser | 'anonymous', message: number | { key: number }, before: FakeReaction[], after: FakeReaction[]): string[] {
    const chat = this.state.chat(chatId);
    const msg = typeof message === 'number' ? chat.messages.find((m) => this.state.idFor(m, 'human') === message) : chat.messages.find((m) => m.key === message.key);
    if (!msg) throw new Error(`fake telegram: no message ${JSON.stringify(message)} in chat ${chatId}`);
    return this.reactions.react(msg, user, before, after);
  }
  addBotToChat(chatId: number, token: string, by: FakeUser): void {
    this.state.setMembership(chatId, token, true, by);
  }
  removeBotFromChat(chatId: number, token: string, by: FakeUser): void {
    this.state.setMembership(chatId, token, false, by);
  }
  /** A human writes in a group (or, with `privateWith`, in their private chat with that bot). */
  humanSays(
    chatId: number,
    user: FakeUser,
    text: string,
    opts: { replyTo?: { key: number } | undefined; threadId?: number | undefined; entities?: FakeEntity[] } = {},
  ): { key: number; messageId: number; rec: MsgRec } {
    const rec = this.state.humanMessage(chatId, user, text, opts.entities ?? detectEntities(text), opts.replyTo?.key, opts.threadId);
    return { key: rec.key, messageId: this.state.idFor(rec, 'human'), rec };
  }
  /**
   * A human sends a photo (`sizes`: the bytes of each size Telegram made, smallest first; a size's
   * `claimed` file_size may be larger than its bytes, as for a photo over the limit) or a document,
   * with an optional caption.
   */
  humanSendsFile(
    chatId: number,
    user: FakeUser,
    file: { photo: Array<{ bytes: Buffer; claimed?: number }> } | { document: Buffer; name: string; mime: string; claimed?: number },
    caption = '',
  ): { key: number; messageId: number; fileIds: string[] } {
    let media: Record<string, unknown>;
    const ids: string[] = [];
    if ('photo' in file) {
      media = {
        photo: file.photo.map((s, i) => {
          const f = this.files.add(s.bytes, 'photos', 'jpg', s.claimed);
          ids.push(f.fileId);
          return { file_id: f.fileId, file_unique_id: f.uniqueId, width: 90 * (i + 1), height: 60 * (i + 1), file_size: s.claimed ?? s.bytes.length };
        }),
      };
    } else {
      const f = this.files.add(file.document, 'documents', file.name.split('.').pop() ?? 'bin', file.claimed);
      ids.push(f.fileId);
      media = { document: { file_id: f.fileId, file_unique_id: f.uniqueId, file_name: file.name, mime_type: file.mime, file_size: file.claimed ?? file.document.length } };
    }
    const rec = this.state.humanMessage(chatId, user, caption, caption ? detectEntities(caption) : [], undefined, undefined, media);
    return { key: rec.key, messageId: this.state.idFor(rec, 'human'), fileIds: ids };
  }

  /** The human's private chat with one bot (chat id = user id, as on Telegram). */
  humanDms(token: string, user: FakeUser, text: string): { key: number; messageId: number } {
    const chat = this.state.privateChat(user, token);
    return this.humanSays(chat.id, user, text);
  }
  /**
   * Upgrade a basic group; returns the new supergroup id. `notify: false` drops the service
   * messages, so a bot only learns of it from the 400 on its next send.
   */
  migrate(chatId: number, opts: { notify?: boolean } = {}): number {
    return this.state.migrate(chatId, opts.notify ?? true);
  }
  /**
   * Deliver every message update this bot ever got once more (new update ids), as Telegram does
   * when a process died before confirming them.
   */
  replayMessages(token: string): number {
    const bot = this.state.bots.get(token)!;
    const old = bot.history.filter((u) => 'message' in u);
    for (const u of old) this.state.push(bot, { message: u.message });
    return old.length;
  }
  /** The next `count` calls of `method` fail with this error (optionally only for one token / payload). */
  failNext(
    method: string,
    count: number,
    error: Injected['error'],
    filter: { token?: string; when?: (payload: Record<string, unknown>) => boolean } = {},
  ): void {
    this.injected.push({ method, remaining: count, token: filter.token, when: filter.when, error });
  }
  /**
   * The next `count` calls of `method` meet a transport fault (optionally only for one token /
   * payload). Rules are consumed in the order they were added.
   */
  faultNext(
    method: string,
    fault: TransportFault,
    count = 1,
    filter: { token?: string; when?: (payload: Record<string, unknown>) => boolean } = {},
  ): void {
    this.faults.push({ method, remaining: count, token: filter.token, when: filter.when, fault });
  }
  /** Faults added with `faultNext` that have not happened yet. */
  pendingFaults(): number {
    return this.faults.reduce((n, f) => n + f.remaining, 0);
  }
  /** The next `count` calls of `method` answer 429 with `retry_after`. */
  rateLimit(method: string, count: number, retryAfter: number, token?: string): void {
    this.failNext(method, count, { error_code: 429, description: `Too Many Requests: retry after ${retryAfter}`, parameters: { retry_after: retryAfter } }, token ? { token } : {});
  }
  /** Bot posts in one chat, oldest first. */
  postsIn(chatId: number): Posted[] {
    return this.posted.filter((p) => p.chatId === chatId);
  }
  /** Everything a human sees in a chat (human and bot messages), oldest first. */
  transcript(chatId: number): Array<{ id: number; author: string; text: string }> {
    const chat = this.state.chat(chatId);
    return chat.messages.filter((m) => m.text !== undefined).map((m) => ({ id: this.state.idFor(m, 'human'), author: m.authorName, text: m.text! }));
  }
  /**
   * `user` presses a button — by its text or its callback_data — on a message a bot posted: a
   * `callback_query` update goes to that bot (polling or webhook). Returns the query id. Throws
   * when the message has no such button now (removed by editMessageReplyMarkup, say).
   */
  press(post: Posted | { key: number }, user: FakeUser, button: string): string {
    const msg = this.findMessage(post.key);
    return this.buttons.press(msg, user, button).id;
  }
  /** Telegram delivers that press once more (new update id, same query), as when it was not confirmed. */
  redeliverPress(queryId: string): void {
    this.buttons.redeliver(queryId);
  }
  /** The inline keyboard a posted message has now. */
  keyboardOf(post: Posted | { key: number }): InlineKeyboard {
    return this.findMessage(post.key).keyboard ?? [];
  }
  get answers() {
    return this.buttons.answers;
  }
  get edits() {
    return this.buttons.edits;
  }
  private findMessage(key: number): MsgRec {
    for (const chat of this.state.chats.values()) {
      const m = chat.messages.find((x) => x.key === key);
      if (m) return m;
    }
    throw new Error(`fake telegram: no message ${key}`);
  }
  callsOf(method: string, bot?: string): Array<{ bot: string | null; payload: Record<string, unknown> }> {
    return this.calls.filter((c) => c.method === method && (bot === undefined || c.bot === bot));
  }

  // ------------------------------------------------------------------------------------------
  // HTTP

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (this.files.serve(req.url ?? '', (t) => this.state.bots.has(t), res)) return;
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(req.url ?? '');
    const send = (r: ApiResult) => {
      if (res.writableEnded || res.destroyed) return;
      res.writeHead(r.ok ? 200 : r.error_code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(r));
    };
    if (!m) return send(fail(404, 'Not Found'));
    const token = decodeURIComponent(m[1]!);
    const method = m[2]!;
    let payload: Record<string, unknown> = {};
    const raw = Buffer.concat(chunks).toString('utf8');
    if (/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
      const form = await readMultipart(req, Buffer.concat(chunks));
      payload = { ...form.fields, __files: form.files };
    } else if (raw) {
      try {
        payload = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return send(fail(400, 'Bad Request: invalid JSON'));
      }
    }
    const bot = this.state.bots.get(token);
    this.calls.push({ bot: bot && !bot.revoked ? bot.username : null, method, payload });
    if (!bot || bot.revoked) return send(fail(401, 'Unauthorized'));
    if (this.outage && !this.outage.spare.includes(method)) return send(fail(this.outage.status, this.outage.status === 502 ? 'Bad Gateway' : 'Internal Server Error'));
    const fault = this.faults.find((f) => f.remaining > 0 && f.method === method && (!f.token || f.token === token) && (!f.when || f.when(payload)));
    if (fault) {
      fault.remaining--;
      this.faultLog.push({ method, fault: fault.fault, payload });
      const f = fault.fault;
      if (f === 'drop' || f === 'drop-after') {
        // 'drop-after': the platform did the work (e.g. posted the message), the answer is lost.
        if (f === 'drop-after' && method !== 'getUpdates') this.call(bot, method, payload);
        res.socket?.destroy();
        res.destroy();
        return;
      }
      if (f.html) {
        res.writeHead(f.status, { 'content-type': 'text/html' });
        res.end(`<html><body><h1>${f.status} Bad Gateway</h1></body></html>`);
        return;
      }
      return send(fail(f.status, f.status === 502 ? 'Bad Gateway' : 'Internal Server Error'));
    }
    const inj = this.injected.find((i) => i.remaining > 0 && i.method === method && (!i.token || i.token === token) && (!i.when || i.when(payload)));
    if (inj) {
      inj.remaining--;
      return send({ ok: false, ...inj.error });
    }
    if (method === 'getUpdates') {
      if (bot.webhook) return send(fail(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"));
      return this.getUpdates(bot, payload, res, send);
    }
    send(this.call(bot, method, payload));
  }

  private getUpdates(bot: BotRec, p: Record<string, unknown>, res: http.ServerResponse, send: (r: ApiResult) => void): void {
    if (typeof p.offset === 'number' && p.offset > 0) {
      const offset = p.offset;
      const confirmed = bot.queue.filter((u) => (u.update_id as number) < offset);
      bot.queue = bot.queue.filter((u) => (u.update_id as number) >= offset);
      if (confirmed.length) this.onConfirm?.(bot.username, confirmed);
    }
    if (Array.isArray(p.allowed_updates)) bot.allowed = p.allowed_updates.length ? (p.allowed_updates as string[]) : undefined;
    const limit = typeof p.limit === 'number' && p.limit > 0 ? Math.min(p.limit, 100) : 100;
    const timeout = typeof p.timeout === 'number' ? p.timeout : 0;
    // Only one getUpdates per token: the older long poll is ended with 409, as on Telegram.
    if (bot.poll) this.state.endPoll(bot, fail(409, 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running'));
    const ready = this.state.takeUpdates(bot, limit);
    if (ready.length || timeout <= 0) return send({ ok: true, result: ready });
    const poll = {
      limit,
      respond: (r: ApiResult) => {
        clearTimeout(poll.timer);
        send(r);
      },
      timer: setTimeout(() => this.state.answerPoll(bot, []), timeout * 1000),
    };
    bot.poll = poll;
    res.on('close', () => {
      if (bot.poll === poll) {
        clearTimeout(poll.timer);
        bot.poll = undefined;
      }
    });
  }

  private call(bot: BotRec, method: string, p: Record<string, unknown>): ApiResult {
    switch (method) {
      case 'getMe':
        return { ok: true, result: { ...this.state.botUser(bot), can_join_groups: true, can_read_all_group_messages: bot.canReadAll, supports_inline_queries: false } };
      case 'setWebhook':
        return this.setWebhook(bot, p);
      case 'deleteWebhook':
        bot.webhook = undefined;
        bot.lastError = undefined;
        if (p.drop_pending_updates === true) bot.queue = [];
        return { ok: true, result: true };
      case 'getWebhookInfo':
        return {
          ok: true,
          result: {
            url: bot.webhook?.url ?? '',
            has_custom_certificate: false,
            pending_update_count: this.state.takeUpdates(bot, 1_000_000).length,
            ...(bot.webhook ? { max_connections: 40, ip_address: '127.0.0.1' } : {}),
            ...(bot.webhook && bot.allowed ? { allowed_updates: bot.allowed } : {}),
            ...(bot.lastError ? { last_error_date: bot.lastError.date, last_error_message: bot.lastError.message } : {}),
          },
        };
      case 'setMyCommands':
        return { ok: true, result: true };
      case 'sendChatAction': {
        const chat = this.state.findChat(p.chat_id);
        if (!chat) return fail(400, 'Bad Request: chat not found');
        return { ok: true, result: true };
      }
      case 'sendMessage':
        return this.sendMessage(bot, p);
      case 'getFile':
        return this.files.getFile(p) as ApiResult;
      case 'sendPhoto':
      case 'sendDocument':
      case 'sendAnimation':
        return this.sendFile(bot, method, p);
      case 'answerCallbackQuery':
        return this.buttons.answer(bot, p);
      case 'editMessageText':
        return this.changes.editText(bot, p);
      case 'editMessageCaption':
        return this.changes.editCaption(bot, p);
      case 'deleteMessage':
        return this.changes.deleteMessage(bot, p);
      case 'editMessageReplyMarkup':
        return this.buttons.editMarkup(bot, p);
      case 'setMessageReaction':
        return this.reactions.setMessageReaction(bot, p);
      case 'getChatAdministrators': {
        const chat = this.state.findChat(p.chat_id);
        if (!chat) return fail(400, 'Bad Request: chat not found');
        const bot = (id: number) => [...this.state.bots.values()].find((b) => b.id === id);
        const result = [...chat.admins].map((id) => ({ status: 'administrator', user: bot(id) ? this.state.botUser(bot(id)!) : { id, is_bot: false, first_name: `user${id}` } }));
        return { ok: true, result };
      }
      case 'getChatMember': {
        const chat = this.state.findChat(p.chat_id);
        if (!chat) return fail(400, 'Bad Request: chat not found');
        // A bot that is not in a group cannot ask about it, as on Telegram for private groups.
        if (chat.type !== 'private' && !chat.bots.has(bot.token)) return fail(403, 'Forbidden: bot is not a member of the group chat');
        const uid = Number(p.user_id);
        // Bots are members only while added; admins see every message whatever their privacy mode.
        const other = [...this.state.bots.values()].find((b) => b.id === uid);
        if (other) {
          const status = !chat.bots.has(other.token) ? 'left' : chat.admins.has(uid) ? 'administrator' : 'member';
          return { ok: true, result: { status, user: this.state.botUser(other) } };
        }
        const status = chat.admins.has(uid) ? 'administrator' : 'member';
        return { ok: true, result: { status, user: { id: uid, is_bot: false, first_name: `user${uid}` } } };
      }
      default:
        return fail(404, 'Not Found');
    }
  }

  private setWebhook(bot: BotRec, p: Record<string, unknown>): ApiResult {
    const url = typeof p.url === 'string' ? p.url : '';
    if (url === '') {
      bot.webhook = undefined;
      return { ok: true, result: true };
    }
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return fail(400, 'Bad Request: bad webhook: invalid URL');
    }
    // Telegram only posts to https; loopback http is allowed here so tests need no certificate.
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && (u.hostname === '127.0.0.1' || u.hostname === 'localhost'))) {
      return fail(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
    }
    const secret = p.secret_token;
    if (secret !== undefined && (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{1,256}$/.test(secret))) {
      return fail(400, 'Bad Request: secret token contains unallowed characters');
    }
    if (Array.isArray(p.allowed_updates)) bot.allowed = p.allowed_updates.length ? (p.allowed_updates as string[]) : undefined;
    if (p.drop_pending_updates === true) bot.queue = [];
    // A long poll still waiting ends, as on Telegram when a webhook is set.
    if (bot.poll) this.state.endPoll(bot, fail(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"));
    bot.webhook = { url, secret: typeof secret === 'string' ? secret : undefined };
    bot.lastError = undefined;
    this.deliver(bot);
    return { ok: true, result: true };
  }

  /** Webhook deliveries not yet answered 2xx, per bot username (as getWebhookInfo's pending_update_count). */
  pendingWebhook(): Map<string, number> {
    return new Map([...this.state.bots.values()].filter((b) => b.webhook).map((b) => [b.username, this.state.takeUpdates(b, 1_000_000).length]));
  }

  /**
   * POST this bot's pending updates to its webhook, oldest first, one at a time; an update leaves
   * the queue only on a 2xx answer. Runs until the queue is empty, the webhook is removed or the
   * fake closes.
   */
  private deliver(bot: BotRec): void {
    if (!bot.webhook || this.delivering.has(bot.token) || this.closed) return;
    this.delivering.add(bot.token);
    void (async () => {
      try {
        while (!this.closed && bot.webhook && !bot.revoked) {
          const next = this.state.takeUpdates(bot, 1)[0];
          if (!next) return;
          const hook = bot.webhook;
          const url = this.webhookRoute ? this.webhookRoute(hook.url, this.routed++) : hook.url;
          let status = await this.post(url, next, hook.secret);
          const lost = status >= 200 && status < 300 && this.loseWebhookAnswers > 0;
          if (lost) {
            this.loseWebhookAnswers--;
            status = 0;
          }
          this.deliveries.push({ bot: bot.username, updateId: next.update_id as number, url, status });
          if (status >= 200 && status < 300) {
            bot.queue = bot.queue.filter((u) => u !== next);
            this.onConfirm?.(bot.username, [next]);
            continue;
          }
          bot.lastError = {
            date: Math.floor(Date.now() / 1000),
            message: status === 0 ? (lost ? 'Read timeout expired' : 'Connection refused') : `Wrong response from the webhook: ${status} ${http.STATUS_CODES[status] ?? ''}`.trim(),
          };
          await new Promise((r) => setTimeout(r, this.webhookRetryMs));
        }
      } finally {
        this.delivering.delete(bot.token);
        // Something may have been queued between the last check and now.
        if (!this.closed && bot.webhook && this.state.takeUpdates(bot, 1).length) this.deliver(bot);
      }
    })();
  }

  /** One POST; resolves with the status, or 0 when the connection failed. */
  private post(url: string, update: Record<string, unknown>, secret: string | undefined): Promise<number> {
    const body = JSON.stringify(update);
    return new Promise((resolve) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            ...(secret !== undefined ? { 'x-telegram-bot-api-secret-token': secret } : {}),
          },
          timeout: 10_000,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', () => resolve(0));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(0));
      req.end(body);
    });
  }

  /** `sendPhoto` / `sendDocument` / `sendAnimation` with an uploaded file (10 MB for photos, 50 MB otherwise). */
  private sendFile(bot: BotRec, method: string, p: Record<string, unknown>): ApiResult {
    const chat = this.state.findChat(p.chat_id === undefined ? undefined : Number(p.chat_id));
    if (!chat) return fail(400, 'Bad Request: chat not found');
    if (chat.migratedTo !== undefined) return fail(400, 'Bad Request: group chat was upgraded to a supergroup chat', { migrate_to_chat_id: chat.migratedTo });
    if (chat.type !== 'private' && !chat.bots.has(bot.token)) return fail(403, 'Forbidden: bot is not a member of the group chat');
    const field = method === 'sendPhoto' ? 'photo' : method === 'sendDocument' ? 'document' : 'animation';
    const file = ((p.__files ?? []) as Array<{ field: string; name: string; bytes: Buffer }>).find((f) => f.field === field);
    if (!file) return fail(400, `Bad Request: there is no ${field} in the request`);
    if (file.bytes.length > (method === 'sendPhoto' ? 10 : 50) * 1024 * 1024) return fail(413, 'Request Entity Too Large');
    let caption: string | undefined;
    try {
      // Telegram counts a caption's length after its markup is parsed.
      caption = typeof p.caption !== 'string' ? undefined : p.parse_mode === 'HTML' ? parseHtml(p.caption) : p.parse_mode === 'MarkdownV2' ? parseMarkdownV2(p.caption) : p.caption;
    } catch (e) {
      if (e instanceof EntityParseError) return fail(400, `Bad Request: can't parse entities: ${e.message}`);
      throw e;
    }
    if (caption && caption.length > 1024) return fail(400, 'Bad Request: message caption is too long');
    const threadId = p.message_thread_id !== undefined ? Number(p.message_thread_id) : undefined;
    if (threadId !== undefined && (!chat.isForum || !chat.topics.has(threadId))) return fail(400, 'Bad Request: message thread not found');
    const markup = readKeyboard(p.reply_markup);
    if (!markup.ok) return markup.error;
    const media = { [field === 'animation' ? 'document' : field]: field === 'photo' ? [{ file_id: 'sent', file_unique_id: 'sent', width: 1, height: 1 }] : { file_id: 'sent', file_unique_id: 'sent' } };
    const rp = p.reply_parameters as { message_id?: number } | string | undefined;
    const replyId = typeof rp === 'string' ? (JSON.parse(rp) as { message_id?: number }).message_id : rp?.message_id;
    const replyTo = replyId !== undefined ? chat.messages.find((m) => this.state.idFor(m, bot.token) === replyId) : undefined;
    const rec = this.state.botMessage(chat, bot, caption ?? '', replyTo, threadId, markup.keyboard, media);
    const messageId = this.state.idFor(rec, bot.token);
    this.files.uploads.push({
      key: rec.key,
      bot: bot.username, method, chatId: chat.id, name: file.name, sha256: sha256(file.bytes), size: file.bytes.length, caption, messageId,
      replyToMessageId: replyTo ? this.state.idFor(replyTo, bot.token) : undefined,
      parseMode: typeof p.parse_mode === 'string' ? p.parse_mode : undefined,
      threadId,
      ...(markup.keyboard.length ? { keyboard: markup.keyboard } : {}),
    });
    return { ok: true, result: this.state.apiMessage(rec, bot.token) };
  }

  private sendMessage(bot: BotRec, p: Record<string, unknown>): ApiResult {
    const chat = this.state.findChat(p.chat_id);
    if (!chat) return fail(400, 'Bad Request: chat not found');
    if (chat.migratedTo !== undefined) return fail(400, 'Bad Request: group chat was upgraded to a supergroup chat', { migrate_to_chat_id: chat.migratedTo });
    if (chat.type !== 'private' && !chat.bots.has(bot.token)) return fail(403, 'Forbidden: bot is not a member of the group chat');
    const raw = typeof p.text === 'string' ? p.text : '';
    let text: string;
    try {
      text = p.parse_mode === 'HTML' ? parseHtml(raw) : p.parse_mode === 'MarkdownV2' ? parseMarkdownV2(raw) : raw;
    } catch (e) {
      if (e instanceof EntityParseError) return fail(400, `Bad Request: can't parse entities: ${e.message}`);
      throw e;
    }
    if (!text.trim()) return fail(400, 'Bad Request: message text is empty');
    if (text.length > 4096) return fail(400, 'Bad Request: message is too long');
    let threadId: number | undefined;
    if (p.message_thread_id !== undefined) {
      threadId = Number(p.message_thread_id);
      if (!chat.isForum || !chat.topics.has(threadId)) return fail(400, 'Bad Request: message thread not found');
    }
    const rp = p.reply_parameters as { message_id?: number; allow_sending_without_reply?: boolean } | undefined;
    const replyId = rp?.message_id ?? (typeof p.reply_to_message_id === 'number' ? p.reply_to_message_id : undefined);
    let replyTo: MsgRec | undefined;
    if (replyId !== undefined) {
      replyTo = chat.messages.find((m) => this.state.idFor(m, bot.token) === replyId);
      if (!replyTo && !rp?.allow_sending_without_reply) return fail(400, 'Bad Request: message to be replied not found');
    }
    const markup = readKeyboard(p.reply_markup);
    if (!markup.ok) return markup.error;
    const rec = this.state.botMessage(chat, bot, text, replyTo, threadId, markup.keyboard);
    const messageId = this.state.idFor(rec, bot.token);
    this.posted.push({
      key: rec.key,
      chatId: chat.id,
      messageId,
      bot: bot.username,
      author: bot.firstName,
      text,
      parseMode: typeof p.parse_mode === 'string' ? p.parse_mode : undefined,
      threadId,
      replyToMessageId: replyTo ? this.state.idFor(replyTo, bot.token) : undefined,
      ...(markup.keyboard.length ? { keyboard: markup.keyboard } : {}),
    });
    return { ok: true, result: this.state.apiMessage(rec, bot.token) };
  }
}
