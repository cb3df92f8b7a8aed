/**
 * The fake platform's world: bots, chats, messages and per-bot update queues, plus the fan-out
 * rules deciding which bot receives which message. Kept apart from the HTTP layer so the rules
 * read on their own.
 */
import type { FakeEntity } from './entities.js';
import type { InlineKeyboard } from './buttons.js';

type Json = { [k: string]: unknown };

export interface BotRec {
  token: string;
  id: number;
  username: string;
  firstName: string;
  canReadAll: boolean;
  /**
   * Bot-to-Bot Communication Mode (set in @BotFather; getMe does not show it): the bot also
   * receives other bots' group messages — addressed to it (a command to it, a reply to it) or,
   * when it is an admin with privacy mode off, all of them.
   */
  botToBot: boolean;
  revoked: boolean;
  queue: Json[];
  /** Every update ever queued, for replaying a redelivery after a crash. */
  history: Json[];
  nextUpdateId: number;
  allowed: string[] | undefined;
  poll: { limit: number; respond: (r: { ok: true; result: unknown } | { ok: false; error_code: number; description: string }) => void; timer: NodeJS.Timeout } | undefined;
  /** First message id this bot uses in basic groups, so its ids differ from everyone else's. */
  idBase: number;
  /** Set by setWebhook: updates are POSTed there instead of waiting for getUpdates. */
  webhook: { url: string; secret: string | undefined } | undefined;
  /** Telegram's last failed webhook delivery (getWebhookInfo). */
  lastError: { date: number; message: string } | undefined;
}

export interface ChatRec {
  id: number;
  type: 'group' | 'supergroup' | 'private';
  title: string;
  isForum: boolean;
  topics: Set<number>;
  bots: Set<string>;
  admins: Set<number>;
  migratedTo: number | undefined;
  messages: MsgRec[];
  /** Basic groups number messages per account; supergroups share one counter ('*'). */
  counters: Map<string, number>;
  privateUser?: Json | undefined;
}

export interface MsgRec {
  key: number;
  chatId: number;
  from: Json;
  authorName: string;
  fromToken: string | undefined;
  text: string | undefined;
  entities: FakeEntity[];
  date: number;
  threadId: number | undefined;
  replyTo: MsgRec | undefined;
  /** viewer (bot token, 'human' or '*' for everyone) → message id in that viewer's numbering. */
  ids: Map<string, number>;
  service?: Json | undefined;
  /** A bot message's inline keyboard as it is now (editMessageReplyMarkup changes it). */
  keyboard?: InlineKeyboard | undefined;
  /** A photo or document message: its `photo` / `document` fields; the text is then its caption. */
  media?: Json | undefined;
}

const DEFAULT_UPDATES = ['message', 'edited_message', 'channel_post', 'edited_channel_post', 'callback_query', 'my_chat_member', 'inline_query'];

export class FakeState {
  readonly bots = new Map<string, BotRec>();
  /** Called after an update was queued (the HTTP layer starts a webhook delivery). */
  onQueued: ((bot: BotRec) => void) | undefined;
  readonly chats = new Map<number, ChatRec>();
  private nextKey = 1;
  private nextGroupId = 1;
  private nextBotId = 7000000001;

  addBot(token: string, username: string, firstName: string, canReadAll: boolean, botToBot = false): BotRec {
    const bot: BotRec = {
      token, username, firstName, canReadAll, botToBot, revoked: false, queue: [], history: [], nextUpdateId: 1000, allowed: undefined, poll: undefined,
      id: this.nextBotId++, idBase: this.bots.size * 1000 + 500, webhook: undefined, lastError: undefined,
    };
    this.bots.set(token, bot);
    return bot;
  }

  botUser(b: BotRec): Json {
    return { id: b.id, is_bot: true, first_name: b.firstName, username: b.username };
  }

  createChat(type: 'group' | 'supergroup', title: string, forum: boolean): ChatRec {
    const n = this.nextGroupId++;
    const id = type === 'group' ? -(4000 + n) : -1001000000000 - n;
    const chat: ChatRec = { id, type, title, isForum: forum, topics: new Set(), bots: new Set(), admins: new Set(), migratedTo: undefined, messages: [], counters: new Map() };
    this.chats.set(id, chat);
    return chat;
  }

  privateChat(user: Json, token: string): ChatRec {
    const id = user.id as number;
    let chat = this.chats.get(id);
    if (!chat) {
      chat = { id, type: 'private', title: String(user.first_name), isForum: false, topics: new Set(), bots: new Set(), admins: new Set(), migratedTo: undefined, messages: [], counters: new Map(), privateUser: user };
      this.chats.set(id, chat);
    }
    // On Telegram each bot has its own private chat with a user under the same id; one record
    // per user is enough here because only the addressed bot receives the DM.
    chat.bots = new Set([token]);
    return chat;
  }

  chat(id: number): ChatRec {
    const c = this.chats.get(id);
    if (!c) throw new Error(`fake telegram: no chat ${id}`);
    return c;
  }
  findChat(id: unknown): ChatRec | undefined {
    return this.chats.get(Number(id));
  }

  apiChat(c: ChatRec): Json {
    if (c.type === 'private') return { id: c.id, type: 'private', first_name: c.privateUser?.first_name, username: c.privateUser?.username };
    return c.type === 'supergroup' ? { id: c.id, type: 'supergroup', title: c.title, ...(c.isForum ? { is_forum: true } : {}) } : { id: c.id, type: 'group', title: c.title };
  }

  idFor(m: MsgRec, viewer: string): number {
    return m.ids.get('*') ?? m.ids.get(viewer) ?? -1;
  }

  private assignIds(chat: ChatRec, m: MsgRec): void {
    if (chat.type !== 'group') {
      const n = (chat.counters.get('*') ?? 0) + 1;
      chat.counters.set('*', n);
      m.ids.set('*', n);
      return;
    }
    const viewers = ['human', ...chat.bots, ...(m.fromToken ? [m.fromToken] : [])];
    for (const v of new Set(viewers)) {
      const base = v === 'human' ? 0 : this.bots.get(v)!.idBase;
      const n = (chat.counters.get(v) ?? base) + 1;
      chat.counters.set(v, n);
      m.ids.set(v, n);
    }
  }

  private newMsg(chat: ChatRec, from: Json, authorName: string, fields: Partial<MsgRec>): MsgRec {
    const m: MsgRec = {
      key: this.nextKey++, chatId: chat.id, from, authorName, fromToken: undefined, text: undefined, entities: [],
      date: Math.floor(Date.now() / 1000), threadId: undefined, replyTo: undefined, ids: new Map(), ...fields,
    };
    this.assignIds(chat, m);
    chat.messages.push(m);
    return m;
  }

  createTopic(chatId: number, name: string): number {
    const chat = this.chat(chatId);
    if (!chat.isForum) throw new Error('fake telegram: not a forum');
    const m = this.newMsg(chat, { id: 1, is_bot: false, first_name: 'Owner' }, 'Owner', { service: { forum_topic_created: { name, icon_color: 0 } } });
    const id = this.idFor(m, '*');
    m.threadId = id;
    chat.topics.add(id);
    return id;
  }

  humanMessage(chatId: number, user: Json, text: string, entities: FakeEntity[], replyKey: number | undefined, threadId: number | undefined, media?: Json): MsgRec {
    const chat = this.chat(chatId);
    if (chat.migratedTo !== undefined) throw new Error('fake telegram: chat was migrated');
    const replyTo = replyKey !== undefined ? chat.messages.find((m) => m.key === replyKey) : undefined;
    const from = { is_bot: false, ...user };
    const name = [user.first_name, user.last_name].filter(Boolean).join(' ');
    const m = this.newMsg(chat, from, name, { text, entities, replyTo, threadId, ...(media ? { media } : {}) });
    for (const token of chat.bots) {
      const bot = this.bots.get(token)!;
      if (this.botSees(chat, bot, m)) this.push(bot, { message: this.apiMessage(m, token) });
    }
    return m;
  }

  /** Privacy mode (https://core.telegram.org/bots/features#privacy-mode), as far as Chorus needs it. */
  botSees(chat: ChatRec, bot: BotRec, m: MsgRec): boolean {
    if (chat.type === 'private' || bot.canReadAll) return true;
    const text = m.text ?? '';
    for (const e of m.entities) {
      const word = text.slice(e.offset, e.offset + e.length);
      if (e.type === 'bot_command') {
        const at = word.indexOf('@');
        if (at < 0 || word.slice(at + 1).toLowerCase() === bot.username.toLowerCase()) return true;
      }
      if (e.type === 'mention' && word.slice(1).toLowerCase() === bot.username.toLowerCase()) return true;
      if (e.type === 'text_mention' && (e.user?.id as number | undefined) === bot.id) return true;
    }
    return m.replyTo?.fromToken === bot.token;
  }

  botMessage(chat: ChatRec, bot: BotRec, text: string, replyTo: MsgRec | undefined, threadId: number | undefined, keyboard?: InlineKeyboard, media?: Json): MsgRec {
    const m = this.newMsg(chat, this.botUser(bot), bot.firstName, { fromToken: bot.token, text, replyTo, threadId, ...(keyboard?.length ? { keyboard } : {}), ...(media ? { media } : {}) });
    this.fanOutBotMessage(chat, m);
    return m;
  }

  /**
   * A message by a bot that is not one of the fake's (`from` a bot user the test names), in a
   * group: it reaches only the bots in bot-to-bot mode that may see it.
   */
  foreignBotMessage(chatId: number, from: Json, text: string, entities: FakeEntity[], replyKey: number | undefined, threadId: number | undefined): MsgRec {
    const chat = this.chat(chatId);
    const replyTo = replyKey !== undefined ? chat.messages.find((m) => m.key === replyKey) : undefined;
    const m = this.newMsg(chat, { ...from, is_bot: true }, String(from.first_name), { text, entities, replyTo, threadId });
    this.fanOutBotMessage(chat, m);
    return m;
  }

  /**
   * Bots do not see other bots' messages, except in bot-to-bot mode: a command addressed to the
   * bot or a reply to it, and everything when it is an admin with privacy mode off.
   */
  private fanOutBotMessage(chat: ChatRec, m: MsgRec): void {
    if (chat.type === 'private') return;
    for (const token of chat.bots) {
      const bot = this.bots.get(token)!;
      if (token === m.fromToken || !bot.botToBot) continue;
      const all = bot.canReadAll && chat.admins.has(bot.id);
      const addressed = m.replyTo?.fromToken === token || m.entities.some((e) => e.type === 'bot_command' && (m.text ?? '').slice(e.offset, e.offset + e.length).toLowerCase().endsWith(`@${bot.username.toLowerCase()}`));
      if (all || addressed) this.push(bot, { message: this.apiMessage(m, token) });
    }
  }

  /** Every bot that would receive `m` as a new message gets its edit (`edited_message`). */
  pushEdit(m: MsgRec, editDate: number): string[] {
    const chat = this.chat(m.chatId);
    const to: string[] = [];
    for (const token of chat.bots) {
      const bot = this.bots.get(token)!;
      if (token === m.fromToken || (m.from.is_bot === true && !bot.botToBot) || !this.botSees(chat, bot, m)) continue;
      this.push(bot, { edited_message: { ...this.apiMessage(m, token), edit_date: editDate } });
      to.push(bot.username);
    }
    return to;
  }

  apiMessage(m: MsgRec, viewer: string, depth = 0): Json {
    const chat = this.chat(m.chatId);
    const out: Json = { message_id: this.idFor(m, viewer), from: m.from, chat: this.apiChat(chat), date: m.date };
    if (m.media) {
      Object.assign(out, m.media);
      if (m.text) out.caption = m.text;
      if (m.entities.length) out.caption_entities = m.entities;
    } else {
      if (m.text !== undefined) out.text = m.text;
      if (m.entities.length) out.entities = m.entities;
    }
    if (m.service) Object.assign(out, m.service);
    if (m.keyboard?.length) out.reply_markup = { inline_keyboard: m.keyboard };
    if (m.threadId !== undefined && chat.isForum) {
      out.message_thread_id = m.threadId;
      out.is_topic_message = true;
    }
    // In a forum topic every message without an explicit reply "replies" to the topic's root.
    const reply = m.replyTo ?? (m.threadId !== undefined && chat.isForum && !m.service ? chat.messages.find((x) => this.idFor(x, '*') === m.threadId) : undefined);
    if (reply && depth === 0) out.reply_to_message = this.apiMessage(reply, viewer, 1);
    return out;
  }

  setMembership(chatId: number, token: string, join: boolean, by: Json): void {
    const chat = this.chat(chatId);
    const bot = this.bots.get(token)!;
    if (join === chat.bots.has(token)) return;
    if (join) chat.bots.add(token);
    else chat.bots.delete(token);
    const member = (status: string) => ({ status, user: this.botUser(bot) });
    this.push(bot, {
      my_chat_member: {
        chat: this.apiChat(chat), from: { is_bot: false, ...by }, date: Math.floor(Date.now() / 1000),
        old_chat_member: member(join ? 'left' : 'member'), new_chat_member: member(join ? 'member' : 'left'),
      },
    });
  }

  migrate(chatId: number, notify = true): number {
    const old = this.chat(chatId);
    if (old.type !== 'group') throw new Error('fake telegram: only basic groups migrate');
    const sg = this.createChat('supergroup', old.title, false);
    sg.bots = new Set(old.bots);
    sg.admins = new Set(old.admins);
    const owner = { id: 1, is_bot: false, first_name: 'Owner' };
    const a = this.newMsg(old, owner, 'Owner', { service: { migrate_to_chat_id: sg.id } });
    old.migratedTo = sg.id;
    const b = this.newMsg(sg, owner, 'Owner', { service: { migrate_from_chat_id: old.id } });
    for (const token of notify ? sg.bots : []) {
      this.push(this.bots.get(token)!, { message: this.apiMessage(a, token) });
      this.push(this.bots.get(token)!, { message: this.apiMessage(b, token) });
    }
    return sg.id;
  }

  push(bot: BotRec, update: Json): void {
    const u = { update_id: bot.nextUpdateId++, ...update };
    bot.queue.push(u);
    bot.history.push(u);
    this.onQueued?.(bot);
    if (bot.poll) {
      const ready = this.takeUpdates(bot, bot.poll.limit);
      if (ready.length) this.answerPoll(bot, ready);
    }
  }

  /** Pending updates of allowed types (others are dropped, as Telegram never queues them). */
  takeUpdates(bot: BotRec, limit: number): Json[] {
    const allowed = bot.allowed ?? DEFAULT_UPDATES;
    bot.queue = bot.queue.filter((u) => Object.keys(u).some((k) => k !== 'update_id' && allowed.includes(k)));
    return bot.queue.slice(0, limit);
  }

  answerPoll(bot: BotRec, result: Json[]): void {
    this.endPoll(bot, { ok: true, result });
  }
  endPoll(bot: BotRec, r: Parameters<NonNullable<BotRec['poll']>['respond']>[0]): void {
    const p = bot.poll;
    bot.poll = undefined;
    p?.respond(r);
  }
}
