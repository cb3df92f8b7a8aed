/**
 * Telegram webhook mode: where each bot's endpoint lives, registering it with Telegram once
 * (setWebhook only when getWebhookInfo shows something else), and the HTTP handler that takes
 * the POSTed updates.
 *
 * The handler answers 200 only after the update's handler resolved, i.e. after the router
 * recorded the message durably; anything else (store trouble, shutting down, the bot not up yet)
 * is a 5xx, so Telegram delivers the update again and the router's dedupe absorbs repeats. The
 * exception is an update that can never be handed over (malformed): it is answered 200 once it
 * is kept as a dead letter (see deadLetters.ts). The handler keeps no state of its own beyond the
 * bot, so any instance behind a load balancer can answer.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Bot } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../core/ports.js';
import { HttpError, readJsonObject, sendJson } from '../web/http.js';
import { describeError } from './errors.js';
import { MalformedUpdateError, handlerError, type KeepDeadLetter } from './deadLetters.js';

/**
 * Update types Chorus asks for, in both modes (edited_message: people's edits, carried to the room's
 * other chats; callback_query: presses of the approval buttons; message_reaction: people's
 * reactions, which Telegram sends only when asked and only to admin bots).
 */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'my_chat_member', 'callback_query', 'message_reaction'] as const;

/** An update is at most a few 4096-character texts with entities; 1 MiB leaves room and bounds memory. */
const WEBHOOK_MAX_BODY_BYTES = 1024 * 1024;

/** The header Telegram echoes `secret_token` in. */
const SECRET_HEADER = 'x-telegram-bot-api-secret-token';

export interface WebhookSettings {
  /** Public base URL, e.g. https://chorus.example.com (no trailing slash needed). */
  url: string;
  /** Base path on our server, e.g. /telegram. */
  path: string;
  secretToken: string;
}

/** One bot's endpoint: the path we serve and the URL Telegram is given. */
export interface WebhookEndpoint {
  path: string;
  url: string;
}

/**
 * `<path>/<agent id>` on our server; the URL Telegram gets is the public base plus that path plus
 * `?v=<fingerprint>`. getWebhookInfo never shows the secret token, so without the fingerprint a
 * changed secret would look "already set" and every update would then be refused with 401. The
 * fingerprint is an HMAC keyed with the bot token: it changes with the secret and reveals nothing
 * of it to whoever sees the URL (a proxy log).
 */
export function webhookEndpoint(s: WebhookSettings, agentId: string, botToken: string): WebhookEndpoint {
  const base = s.path.replace(/\/+$/, '');
  const path = `${base}/${encodeURIComponent(agentId)}`;
  const v = createHmac('sha256', botToken).update(s.secretToken).digest('hex').slice(0, 16);
  return { path, url: `${s.url.replace(/\/+$/, '')}${path}?v=${v}` };
}

/** What `ensureWebhook` did. */
export type WebhookSetResult = 'set' | 'kept';

const sameSet = (a: readonly string[] | undefined, b: readonly string[]) => {
  // Telegram reports an empty or missing list for "the default types".
  const x = [...(a ?? [])].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

/**
 * Make Telegram post this bot's updates to `url`: skipped when getWebhookInfo already shows the
 * same URL and update types (another instance, or our last start, set it), so N instances do not
 * call setWebhook N times. Pending updates are kept: they are real messages. Throws the API error.
 */
export async function ensureWebhook(bot: Bot, url: string, secretToken: string): Promise<WebhookSetResult> {
  const info = await bot.api.getWebhookInfo();
  if (info.url === url && sameSet(info.allowed_updates, ALLOWED_UPDATES)) return 'kept';
  await bot.api.setWebhook(url, { secret_token: secretToken, allowed_updates: [...ALLOWED_UPDATES], drop_pending_updates: false });
  return 'set';
}

/** Constant-time comparison; hashing first makes the lengths equal without an early exit. */
function secretMatches(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export interface WebhookHandlerOptions {
  secretToken: string;
  log: Logger;
  /** The bot, once getMe succeeded and the channel runs; undefined → 503 and Telegram retries. */
  bot: () => Bot | undefined;
  /** Run an update's handling; the channel hands updates of one chat over one at a time. */
  run: (update: Update, handle: () => Promise<void>) => Promise<void>;
  /** Secrets to keep out of log lines. */
  secrets: readonly string[];
  /** Where an update that can never be handed over goes before it is answered 200. */
  deadLetter: KeepDeadLetter;
}

/** The route for one bot: POST with the right secret header and a JSON update → 200 once recorded. */
export function createWebhookHandler(o: WebhookHandlerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  // Refusals are logged at most once a minute with a count, so a flood of forged POSTs cannot flood the log.
  let refused = 0;
  let lastRefusalLog = 0;
  return async (req, res) => {
    if (req.method !== 'POST') {
      req.resume();
      throw new HttpError(405, 'method_not_allowed', 'Telegram webhooks are POST requests', { allow: 'POST' });
    }
    // Checked before the body is read: a caller without the secret gets nothing processed.
    if (!secretMatches(req.headers[SECRET_HEADER], o.secretToken)) {
      req.resume();
      refused++;
      if (Date.now() - lastRefusalLog >= 60_000) {
        o.log.warn({ remote: req.socket.remoteAddress, refused }, 'telegram: webhook request(s) without the right secret token refused (401); if these are Telegram\'s, the webhook was set with another secret_token');
        lastRefusalLog = Date.now();
        refused = 0;
      }
      throw new HttpError(401, 'unauthorized', 'missing or wrong X-Telegram-Bot-Api-Secret-Token', { connection: 'close' });
    }
    const body = await readJsonObject(req, WEBHOOK_MAX_BODY_BYTES);
    if (typeof body.update_id !== 'number' || !Number.isSafeInteger(body.update_id)) {
      throw new HttpError(400, 'bad_update', 'the body is not a Telegram update (no numeric update_id)');
    }
    const update = body as unknown as Update;
    const bot = o.bot();
    if (!bot) throw new HttpError(503, 'not_ready', 'this bot is not running here yet; try again', { 'retry-after': '2' });
    try {
      await o.run(update, () => bot.handleUpdate(update));
    } catch (err) {
      const cause = handlerError(err);
      // It would fail the same way at every delivery while Telegram held the bot's later updates
      // back: kept as a dead letter, then answered 200. If it cannot be kept, it is not answered.
      if (cause instanceof MalformedUpdateError) await keepOr503(o, update, cause);
      else {
        // Not recorded (storage trouble, shutting down): a 5xx makes Telegram deliver it again.
        o.log.warn({ updateId: update.update_id, err: describeError(cause, o.secrets) }, 'telegram: webhook update not handed over; Telegram will deliver it again');
        throw new HttpError(503, 'not_recorded', 'the update was not recorded; deliver it again', { 'retry-after': '2' });
      }
    }
    // Telegram reads only the status; an empty object keeps the body valid JSON.
    sendJson(res, 200, {});
  };
}

async function keepOr503(o: WebhookHandlerOptions, update: Update, cause: MalformedUpdateError): Promise<void> {
  try {
    await o.deadLetter(update, cause.message);
  } catch (err) {
    o.log.warn({ updateId: update.update_id, err: describeError(err, o.secrets) }, 'telegram: a malformed update could not be kept as a dead letter; Telegram will deliver it again');
    throw new HttpError(503, 'not_recorded', 'the update was not kept; deliver it again', { 'retry-after': '2' });
  }
}
