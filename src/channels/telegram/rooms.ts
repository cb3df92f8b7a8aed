/**
 * Rooms across chats, the Telegram side going out: people from the room's other chats posted
 * under their names ("**Maya** (Discord): …", before every chunk of a long text and on every file,
 * since each is a message of its own from a bot that may be an agent's), and the changes of posted
 * messages (an edit, a deletion) carried to their copies here.
 *
 * Who posts a relayed message: the relay bot (`channels.telegram.relay_token`) when it is up, else
 * the first participant agent's bot of the chat's group. Telegram lets only the bot that sent a
 * message edit it (and delete it, unless that bot is an admin), so every post says which bot sent
 * it (`PostedMessage.via`: the bot's id, the part of its token before the colon), the core keeps
 * that with the copy and hands it back with each edit or deletion: the same bot makes the change,
 * whatever happened since (a fallback, a restart, a new relay token). A copy recorded without it
 * (by an older Chorus) is found by trying the likely bots in order (supergroups only: in a basic
 * group every bot numbers messages its own way, so another bot's id would name another message —
 * there only the first choice is tried). For the same reason a relayed message in a basic group is
 * not threaded: the relay bot receives no updates, so it knows no message's id there.
 *
 * A relayed post that was owed when the process stopped (`resumedSince`) is posted again: a bot
 * cannot read its chat to see whether Telegram took it just before, so in that one window a
 * relayed message is delivered at least once (a rare duplicate, never a loss), as agent posts are.
 */
import type { Bot } from 'grammy';
import { PostRefusedError } from '../../core/errors.js';
import { readKept } from '../../core/fileTypes.js';
import { BoundedMap } from '../../core/lib/BoundedMap.js';
import { cleanDisplayName } from '../../core/text/displayName.js';
import type { ChannelHost, Logger, PostedMessage, PostOptions } from '../../core/ports.js';
import type { PostedBy, RelayedAuthor } from '../../core/roomTypes.js';
import type { ChannelKind, ChatRef } from '../../core/types.js';
import { causeApiCode, describeError, isMediaMessage, isNotModified, isNotOurs, isParseError, isRefusal, isTextMessage } from './errors.js';
import { CAPTION_LIMIT, nameCaption, sendPost } from './sendFiles.js';
import { escapeHtml } from './format.js';
import { isBasicGroupId } from './normalize.js';
import { chunksOf, renderChunk, TELEGRAM_LIMIT, type Prefix, type SendHooks, type SendTarget } from './sender.js';

/** A bot that posts: an agent's (`key` = its id) or the relay bot (`key` = 'relay'). */
export interface Poster {
  key: string;
  bot: Bot;
}

/** Not a possible agent id (those are slugs), so it never names an agent's bot. */
export const RELAY_KEY = '@relay';

/** A bot's Telegram user id, read from its token ("123456:ABC…"): what a post's `via` names. Never the secret part. */
export function botIdOf(token: string): string | undefined {
  const i = token.indexOf(':');
  return i > 0 ? token.slice(0, i) : undefined;
}

export interface RoomsDeps {
  log: Logger;
  host(): ChannelHost | undefined;
  /** The relay bot when it is up; 'never' when none is configured or Telegram refused its token. */
  relayBot(): Bot | 'never' | undefined;
  /** An agent's bot when it can send; 'never' when the agent has no bot here at all. */
  agentBot(agentId: string): Bot | 'never' | undefined;
  /** Whose bot has this id now: RELAY_KEY, an agent's id, or none configured. */
  botKeyOf(botId: string): string | undefined;
  /** The bots the system voice posts through in this chat, in the order it tries them. */
  systemBots(chat: ChatRef): Poster[];
  target(chat: ChatRef): { tgId: number; threadId: number | undefined };
  /** The id `posterKey`'s bot knows a reply target by, when known. */
  replyId(chat: ChatRef, tgId: number, posterKey: string, replyTo: string | undefined): number | undefined;
  /** Posts to one chat go out one at a time (see TelegramChannel). */
  queue<T>(chatId: string, fn: () => Promise<T>): Promise<T>;
  hooks: SendHooks;
}

const PLATFORM: Record<ChannelKind, string> = { telegram: 'Telegram', discord: 'Discord', web: 'Web' };

/** How long an agent's bot relays in a chat the relay bot could not post in, before it is asked again. */
const RELAY_ABSENT_MS = 10 * 60 * 1000;

/** What a cut edit ends with: the message had fewer chunks than the new text needs. */
export const CUT_MARKER = '\n… (cut: the edited text is longer than this message was)';

/**
 * "**Maya** (Discord): " before a relayed person's text (a foreign bot: "**Name (bot)** …"). The
 * name is cleaned and bounded here too: it goes before every chunk, which must keep room for text.
 */
export function relayPrefix(from: RelayedAuthor): Prefix {
  const shown = cleanDisplayName(from.name) || 'Someone';
  const name = from.kind === 'bot' ? `${shown} (bot)` : shown;
  const where = ` (${PLATFORM[from.platform] ?? from.platform}): `;
  return { html: `<b>${escapeHtml(name)}</b>${escapeHtml(where)}`, plain: name + where };
}

export class TelegramRooms {
  /** `chatId:messageId` → who posted it (relayed and system posts; an agent's post names its agent). */
  private readonly posters = new BoundedMap<string, string>(20_000);
  /**
   * Chats the relay bot could not post in (not added, removed) → until when an agent's bot relays
   * there without asking it first. It takes no updates, so it is asked again after a while.
   */
  private readonly relayAbsent = new BoundedMap<string, number>(1_000);

  constructor(private readonly deps: RoomsDeps) {}

  /** Keep which bot posted these messages (the system voice's posts: whichever bot it used). */
  notePoster(chatId: string, ids: readonly string[], key: string): void {
    for (const id of ids) this.posters.set(`${chatId}:${id}`, key);
  }

  async relay(chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage> {
    const absent = (this.relayAbsent.get(chat.chatId) ?? 0) > Date.now();
    const poster = absent ? this.participantPosters(chat)[0] : this.relayPoster(chat);
    if (!poster) throw new Error(`telegram: no bot can relay into chat ${chat.chatId} (no relay bot is up and no participant's bot is)`);
    try {
      return await this.relayThrough(poster, chat, from, text, opts);
    } catch (err) {
      // The relay bot was never added to this group (or was removed): an agent's bot posts instead,
      // so nobody's message is lost to a setup slip; the log says what to fix.
      const fallback = poster.key === RELAY_KEY && causeApiCode(err) === 403 ? this.participantPosters(chat)[0] : undefined;
      if (!fallback) throw err;
      this.relayAbsent.set(chat.chatId, Date.now() + RELAY_ABSENT_MS);
      this.deps.log.warn({ chatId: chat.chatId, via: fallback.key }, "telegram: the relay bot cannot post in this chat (add it to the group); relaying through an agent's bot meanwhile");
      return this.relayThrough(fallback, chat, from, text, opts);
    }
  }

  private async relayThrough(poster: Poster, chat: ChatRef, from: RelayedAuthor, text: string, opts: PostOptions | undefined): Promise<PostedMessage> {
    const t = this.deps.target(chat);
    const prefix = relayPrefix(from);
    const host = this.deps.host();
    const files = opts?.attachments?.length && host ? await readKept(host.files, opts.attachments, (a) => this.deps.log.error({ file: a.id }, 'telegram: a file to relay is not kept; relaying without it')) : [];
    const target: SendTarget = { chatId: t.tgId, threadId: t.threadId, replyTo: this.deps.replyId(chat, t.tgId, poster.key, opts?.replyToMessageId), prefix };
    try {
      // With files the name leads the caption (sendFiles.ts).
      const ids = await this.deps.queue(chat.chatId, () => sendPost(poster.bot, target, text, files, this.deps.hooks));
      const out = ids.map(String);
      this.notePoster(chat.chatId, out, poster.key);
      return { ids: out, via: botIdOf(poster.bot.token) };
    } catch (err) {
      throw this.failure('relaying a message', chat, err);
    }
  }

  async editPosted(chat: ChatRef, ids: readonly string[], by: PostedBy, text: string, via?: string): Promise<void> {
    if (ids.length === 0) return;
    const t = this.deps.target(chat);
    const prefix = 'relayed' in by ? relayPrefix(by.relayed) : undefined;
    let chunks = chunksOf(text, prefix);
    if (chunks.length === 0) chunks = ['…'];
    if (chunks.length > ids.length) {
      const n = ids.length;
      const room = TELEGRAM_LIMIT - (prefix?.plain.length ?? 0) - CUT_MARKER.length;
      chunks = [...chunks.slice(0, n - 1), chunks[n - 1]!.slice(0, room).trimEnd() + CUT_MARKER];
    }
    const run = this.runner(chat, ids, by, via, 'edit');
    try {
      await this.deps.queue(chat.chatId, async () => {
        let ci = 0;
        for (const raw of ids) {
          const id = Number(raw);
          if (ci < chunks.length) {
            if ((await run((bot) => editText(bot, t.tgId, id, chunks[ci]!, prefix))) === 'media') {
              // A photo or document: the rest of the text is its caption.
              let body = chunks.slice(ci).join('\n');
              const room = CAPTION_LIMIT - (prefix?.plain.length ?? 0);
              if (body.length > room) body = body.slice(0, room - CUT_MARKER.length).trimEnd() + CUT_MARKER;
              await run((bot) => editCaption(bot, t.tgId, id, body, prefix));
              ci = chunks.length;
            } else ci++;
            continue;
          }
          // A chunk the new text no longer needs goes; the post's files (after its text) stay.
          if ((await run((bot) => probe(bot, t.tgId, id, prefix))) === 'media') break;
          await run((bot) => deleteOne(bot, t.tgId, id));
        }
      });
    } catch (err) {
      throw this.failure('editing a posted message', chat, err);
    }
  }

  async deletePosted(chat: ChatRef, ids: readonly string[], by: PostedBy, via?: string): Promise<void> {
    if (ids.length === 0) return;
    const { tgId } = this.deps.target(chat);
    const run = this.runner(chat, ids, by, via, 'delete');
    try {
      await this.deps.queue(chat.chatId, async () => {
        for (const raw of ids) await run((bot) => deleteOne(bot, tgId, Number(raw)));
      });
    } catch (err) {
      throw this.failure('deleting a posted message', chat, err);
    }
  }

  /** The relay bot, else the first participant's bot of the chat's group. */
  private relayPoster(chat: ChatRef): Poster | undefined {
    const relay = this.deps.relayBot();
    if (relay && relay !== 'never') return { key: RELAY_KEY, bot: relay };
    for (const id of this.deps.host()?.findGroup('telegram', chat.chatId)?.participants ?? []) {
      const bot = this.deps.agentBot(id);
      if (bot && bot !== 'never') return { key: id, bot };
    }
    return undefined;
  }

  /**
   * The bot that posted these messages (`via`), which alone may edit them. When it is no longer
   * configured, an edit is refused for good; a deletion in a supergroup is tried through the other
   * likely bots (one that is an admin may delete anyone's message).
   */
  private sender(chat: ChatRef, ids: readonly string[], by: PostedBy, via: string, change: 'edit' | 'delete'): Poster[] {
    const key = this.deps.botKeyOf(via);
    const bot = key === RELAY_KEY ? this.deps.relayBot() : key ? this.deps.agentBot(key) : 'never';
    if (bot === undefined) throw new Error(`telegram: the bot that posted message ${ids[0]} in chat ${chat.chatId} (bot id ${via}) is not up yet`);
    if (bot !== 'never') return [{ key: key!, bot }];
    const gone = `Telegram: the bot that posted message ${ids[0]} in chat ${chat.chatId} (bot id ${via}) is no longer configured here`;
    if (change === 'edit') throw new PostRefusedError(`${gone}, and only the bot that sent a message may edit it`);
    if (isBasicGroupId(this.deps.target(chat).tgId)) throw new PostRefusedError(`${gone}, and in a basic group no other bot knows the message by that id`);
    return this.candidates(chat, ids, by, false);
  }

  /** The bots that may have posted these messages, the most likely first (`known`: ask what this process remembers first). */
  private candidates(chat: ChatRef, ids: readonly string[], by: PostedBy, known = true): Poster[] {
    if ('agentId' in by) {
      const bot = this.deps.agentBot(by.agentId);
      if (bot === 'never') throw new PostRefusedError(`Telegram: agent "${by.agentId}" has no bot here any more, and only the bot that posted a message may change it`);
      if (!bot) throw new Error(`telegram: the bot of agent "${by.agentId}" is not up yet`);
      return [{ key: by.agentId, bot }];
    }
    const noted = known ? this.posters.get(`${chat.chatId}:${ids[0]}`) : undefined;
    const likely: Poster[] = [];
    // The bot that posted it is down for now: try again later rather than through bots that cannot.
    const bot = noted === RELAY_KEY ? this.deps.relayBot() : noted ? this.deps.agentBot(noted) : 'never';
    if (bot === undefined) throw new Error(`telegram: the bot that posted message ${ids[0]} in chat ${chat.chatId} is not up yet`);
    if (bot !== 'never') likely.push({ key: noted!, bot });
    const { tgId } = this.deps.target(chat);
    // In a basic group another bot's numbering would name another message: only the first choice.
    if (!(noted && isBasicGroupId(tgId))) {
      const guess = 'relayed' in by ? this.relayPoster(chat) : undefined;
      const more = 'relayed' in by ? [...(guess ? [guess] : []), ...this.participantPosters(chat)] : this.deps.systemBots(chat);
      likely.push(...(isBasicGroupId(tgId) ? more.slice(0, 1) : more));
    }
    const seen = new Set<string>();
    const out = likely.filter((p) => !seen.has(p.key) && seen.add(p.key));
    if (out.length === 0) throw new Error(`telegram: no bot that may have posted in chat ${chat.chatId} is up`);
    return out;
  }

  private participantPosters(chat: ChatRef): Poster[] {
    const out: Poster[] = [];
    for (const id of this.deps.host()?.findGroup('telegram', chat.chatId)?.participants ?? []) {
      const bot = this.deps.agentBot(id);
      if (bot && bot !== 'never') out.push({ key: id, bot });
    }
    return out;
  }

  /**
   * Runs each call through the bot that posted the messages: the first call tries the candidates
   * in order while Telegram answers "not this bot's message", later calls use the one that worked.
   */
  private runner(chat: ChatRef, ids: readonly string[], by: PostedBy, via: string | undefined, change: 'edit' | 'delete'): <T>(fn: (bot: Bot) => Promise<T>) => Promise<T> {
    const cands = via ? this.sender(chat, ids, by, via, change) : this.candidates(chat, ids, by);
    let chosen: Poster | undefined;
    return async <T>(fn: (bot: Bot) => Promise<T>): Promise<T> => {
      if (chosen) return fn(chosen.bot);
      let last: unknown;
      for (const c of cands) {
        try {
          const r = await fn(c.bot);
          chosen = c;
          if (!('agentId' in by)) this.notePoster(chat.chatId, ids, c.key);
          return r;
        } catch (err) {
          last = err;
          if (!isNotOurs(err)) throw err;
        }
      }
      throw last;
    };
  }

  /** A refusal for good becomes a PostRefusedError; anything else passes (the core tries again later). */
  private failure(what: string, chat: ChatRef, err: unknown): Error {
    if (err instanceof PostRefusedError) return err;
    const why = describeError(err);
    if (isRefusal(err)) return new PostRefusedError(`Telegram refused ${what} in chat ${chat.chatId}: ${why}`, { cause: err });
    this.deps.log.warn({ chatId: chat.chatId, err: why }, `telegram: ${what} failed; it is tried again later`);
    return new Error(`telegram: ${what} in chat ${chat.chatId} failed: ${why}`, { cause: err });
  }
}

/** One chunk's new text (HTML, plain when Telegram refuses the markup). 'media': the message is a photo or document. */
async function editText(bot: Bot, chatId: number, id: number, chunk: string, prefix: Prefix | undefined): Promise<'ok' | 'media'> {
  for (const html of [true, false]) {
    try {
      await bot.api.editMessageText(chatId, id, renderChunk(chunk, html, prefix), { ...(html ? { parse_mode: 'HTML' as const } : {}), link_preview_options: { is_disabled: true } });
      return 'ok';
    } catch (err) {
      if (isNotModified(err)) return 'ok';
      if (isMediaMessage(err)) return 'media';
      if (html && isParseError(err)) continue;
      throw err;
    }
  }
  return 'ok';
}

/** A caption's new text, HTML as posted (sendFiles.ts), plain when Telegram refuses the markup. */
async function editCaption(bot: Bot, chatId: number, id: number, body: string, prefix: Prefix | undefined): Promise<void> {
  for (const html of [true, false]) {
    try {
      await bot.api.editMessageCaption(chatId, id, { caption: renderChunk(body, html, prefix), ...(html ? { parse_mode: 'HTML' as const } : {}) });
      return;
    } catch (err) {
      if (isNotModified(err)) return;
      if (html && isParseError(err)) continue;
      throw err;
    }
  }
}

/**
 * Whether a message is a photo or document (it takes a caption) or text. It is asked by setting
 * the caption a file past the text has: none for an agent's, the name alone for a relayed person's.
 */
async function probe(bot: Bot, chatId: number, id: number, prefix: Prefix | undefined): Promise<'text' | 'media'> {
  const caption = prefix ? { caption: nameCaption(prefix, true), parse_mode: 'HTML' as const } : { caption: '' };
  try {
    await bot.api.editMessageCaption(chatId, id, caption);
    return 'media';
  } catch (err) {
    if (isTextMessage(err)) return 'text';
    if (isNotModified(err)) return 'media';
    throw err;
  }
}

/** deleteMessage; one already gone counts as deleted (a deletion repeated after a restart). */
async function deleteOne(bot: Bot, chatId: number, id: number): Promise<void> {
  try {
    await bot.api.deleteMessage(chatId, id);
  } catch (err) {
    if (err instanceof Error && /message to delete not found/i.test(err.message)) return;
    throw err;
  }
}
