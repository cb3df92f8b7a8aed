/**
 * Approve / Deny buttons under a request for approval of a tool call. The request is posted by the
 * agent's own bot, every argument shown (approvalPosts.ts), with an inline keyboard under its last
 * message; a press comes back as a callback_query to that bot only and is handed to the router as
 * the command a person could type (`/approve t12 <digest>`, see normalize.ts): the digest of the
 * call the buttons were shown with, so a press never approves other arguments than those. The
 * core decides exactly as for a typed command: it checks the person is an admin when it must,
 * records the decision with its line, and the waiting turn goes on. A redelivered press has the
 * same message id (`cb:<query id>`) and is a duplicate.
 *
 * The router answers a command in the chat, not to the channel, so the press's outcome is read
 * from the system lines posted in the chat while the router handled it: the decision's line
 * (`✅ Maya approved orders.cancel (t12)`, core/router/Approvals.ts) or the command's refusal
 * (`⚠ …`, core/commands/commands.ts). The person gets it as the callback's answer. Once a call is
 * decided — by a press, a typed command or the web page, whose decision line is posted here too —
 * its buttons are taken away so nobody presses again.
 */
import type { CallbackQuery, InlineKeyboardMarkup } from 'grammy/types';
import type { ChannelHost, Logger } from '../../core/ports.js';
import type { ChatRef, ReceiveResult } from '../../core/types.js';
import { BoundedMap, BoundedSet } from '../../core/lib/BoundedMap.js';
import type { AgentBot } from './bots.js';
import { describeError } from './errors.js';
import { approvalData, normalizePress, type ApprovalPress } from './normalize.js';

export { sendPostOrRequest } from './approvalPosts.js';

/** The line Approvals.decide records: `✅ <name> approved <server.tool> (<id>)`, or ⛔ … denied. */
const DECISION_LINE = /^(?:✅|⛔) .+ (approved|denied) \S+ \(([A-Za-z0-9_-]+)\)$/;
/** A command's refusal, as handleCommand answers it. */
const REFUSAL = /^⚠\s*/;
/** Telegram shows at most 200 characters of a callback's answer. */
const ANSWER_MAX = 200;
const REMEMBERED = 2000;

/** The Approve / Deny keyboard of call `callId` shown with `digest`; undefined when they do not fit 64 bytes. */
export function approvalKeyboard(callId: string, digest?: string): InlineKeyboardMarkup | undefined {
  const approve = approvalData(true, callId, digest);
  const deny = approvalData(false, callId, digest);
  if (!approve || !deny) return undefined;
  return { inline_keyboard: [[{ text: '✅ Approve', callback_data: approve }, { text: '⛔ Deny', callback_data: deny }]] };
}

/** A message with buttons: the bot that posted it, its id in that bot's numbering, the digest they carry. */
interface Buttons {
  agentId: string;
  tgChatId: number;
  messageId: number;
  digest?: string | undefined;
}

export interface ApprovalDeps {
  log: Logger;
  host: () => ChannelHost | undefined;
  /** False while the channel stops: a refusal then is not final (the update comes again). */
  running: () => boolean;
  bot: (agentId: string) => AgentBot | undefined;
  isAdmin: (chat: ChatRef, userId: string) => Promise<boolean>;
}

/** What a press came to: the callback's answer, and whether the call no longer waits (buttons go). */
interface Verdict {
  text: string;
  alert: boolean;
  settled: boolean;
}

export class ApprovalButtons {
  /** `<chat id>|<call id>` → where its buttons are. */
  private readonly asked = new BoundedMap<string, Buttons>(REMEMBERED);
  /** Messages whose buttons were taken away (or are being): `<agent>|<chat>|<message>`. */
  private readonly cleared = new BoundedSet<string>(REMEMBERED);
  /** Presses being handled, per chat: they collect the system lines posted meanwhile. */
  private readonly watchers = new Map<string, Set<(text: string, via: string | undefined) => void>>();

  constructor(private readonly d: ApprovalDeps) {}

  /** A request for approval of `callId` went out with its buttons. */
  posted(chatId: string, callId: string, where: Buttons): void {
    this.asked.set(`${chatId}|${callId}`, where);
  }

  /** A system line is about to be posted in a chat: presses being handled read it; a decision takes its call's buttons away. */
  systemLine(chat: ChatRef, text: string): void {
    for (const w of this.watchers.get(chat.chatId) ?? []) w(text, chat.viaAgentId);
    const id = DECISION_LINE.exec(text.trim())?.[2];
    const where = id ? this.asked.get(`${chat.chatId}|${id}`) : undefined;
    if (where) void this.clear(where);
  }

  /** A callback_query to `b`'s bot. Throws (the update comes again) when the router did not record it. */
  async press(b: AgentBot, q: CallbackQuery): Promise<void> {
    const host = this.d.host();
    if (!host) return;
    const p = normalizePress(q, b.agent.id, Date.now());
    if ('skip' in p) {
      this.d.log.debug({ agent: b.agent.id, reason: p.skip }, 'telegram: button press skipped');
      return this.answer(b, q.id, { text: 'This button does nothing any more.', alert: false, settled: false });
    }
    const lines: Array<{ text: string; via: string | undefined }> = [];
    const unwatch = this.watch(p.message.chatId, (text, via) => lines.push({ text, via }));
    let res: ReceiveResult;
    try {
      res = await host.handle({ kind: 'message', message: p.message });
    } finally {
      unwatch();
    }
    if (res.status === 'rejected' && (!this.d.running() || res.code === 'unavailable' || res.code === 'shutting_down')) throw new Error('not recorded; will be fetched again');
    const verdict = await this.verdict(res, lines, p, b.agent.id);
    this.d.log.debug({ agent: b.agent.id, chatId: p.message.chatId, call: p.callId, status: res.status, settled: verdict.settled }, 'telegram: approval button pressed');
    await this.answer(b, q.id, verdict);
    if (!verdict.settled) return;
    const msg = q.message!;
    await this.clear({ agentId: b.agent.id, tgChatId: msg.chat.id, messageId: msg.message_id });
    // A press of other buttons (another digest) leaves the request's own alone.
    const asked = this.asked.get(`${p.message.chatId}|${p.callId}`);
    if (asked && asked.digest === p.digest) await this.clear(asked);
  }

  private watch(chatId: string, fn: (text: string, via: string | undefined) => void): () => void {
    let set = this.watchers.get(chatId);
    if (!set) this.watchers.set(chatId, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.watchers.get(chatId) === set) this.watchers.delete(chatId);
    };
  }

  private async verdict(res: ReceiveResult, lines: ReadonlyArray<{ text: string; via: string | undefined }>, p: ApprovalPress, agentId: string): Promise<Verdict> {
    for (const l of lines) {
      const m = DECISION_LINE.exec(l.text.trim());
      if (m?.[2] === p.callId) return { text: m[1] === 'approved' ? 'Approved' : 'Denied', alert: false, settled: true };
    }
    const refusal = lines.find((l) => REFUSAL.test(l.text) && l.via === agentId);
    if (refusal) {
      // Refused to an admin, the call waits no more (decided, expired, unknown): its buttons go.
      // Refused to someone else, it may still wait for an admin.
      const chat: ChatRef = { channel: 'telegram', chatId: p.message.chatId, threadId: p.message.threadId, viaAgentId: agentId };
      const admin = await this.d.isAdmin(chat, p.message.author.id);
      return { text: short(refusal.text.replace(REFUSAL, '')), alert: true, settled: admin };
    }
    switch (res.status) {
      case 'duplicate':
        return { text: 'Already received.', alert: false, settled: false };
      case 'no_group':
        return { text: short(res.reason), alert: true, settled: true };
      case 'rejected':
        return { text: short(res.reason), alert: true, settled: false };
      case 'forwarded':
        return { text: 'Handed to the instance that runs this group.', alert: false, settled: false };
      default:
        return { text: p.approve ? 'Approval sent.' : 'Refusal sent.', alert: false, settled: false };
    }
  }

  /** Answer the press (stops the button's spinner). A redelivered press was answered before: Telegram says so, which is fine. */
  private async answer(b: AgentBot, queryId: string, v: Verdict): Promise<void> {
    try {
      await b.bot.api.answerCallbackQuery(queryId, { text: v.text, ...(v.alert ? { show_alert: true } : {}) });
    } catch (err) {
      this.d.log.debug({ agent: b.agent.id, err: describeError(err, [b.token]) }, 'telegram: could not answer a button press');
    }
  }

  /** Take a message's buttons away, once. */
  private async clear(w: Buttons): Promise<void> {
    const key = `${w.agentId}|${w.tgChatId}|${w.messageId}`;
    if (this.cleared.has(key)) return;
    this.cleared.add(key);
    const b = this.d.bot(w.agentId);
    if (!b) return;
    try {
      await b.bot.api.editMessageReplyMarkup(w.tgChatId, w.messageId, { reply_markup: { inline_keyboard: [] } });
    } catch (err) {
      const why = describeError(err, [b.token]);
      if (!/message is not modified/i.test(why)) this.d.log.warn({ agent: w.agentId, chatId: w.tgChatId, err: why }, 'telegram: could not take the approval buttons away');
    }
  }
}

function short(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= ANSWER_MAX ? flat : `${flat.slice(0, ANSWER_MAX - 1)}…`;
}
