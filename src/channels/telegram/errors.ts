/**
 * Describing Bot API failures without leaking secrets. grammY's own error messages never carry
 * the token, but the network errors it wraps do (the request URL is `/bot<token>/<method>`), so
 * every error goes through `describeError` before it reaches a log line.
 */
import { GrammyError, HttpError } from 'grammy';
import { PostRefusedError } from '../../core/errors.js';

const TOKEN_LIKE = /\d{3,}:[A-Za-z0-9_-]{2,}/g;

/** A one-line description of an API failure that is safe to log. */
export function describeError(err: unknown, secrets: readonly string[] = []): string {
  let text: string;
  if (err instanceof GrammyError) text = `${err.error_code}: ${err.description}`;
  else if (err instanceof HttpError) {
    const inner = err.error instanceof Error ? err.error.message : String(err.error);
    text = `network error (${inner})`;
  } else if (err instanceof Error) text = err.message;
  else text = String(err);
  for (const s of secrets) if (s) text = text.split(s).join('<token>');
  return text.replace(TOKEN_LIKE, '<token>');
}

export function apiErrorCode(err: unknown): number | undefined {
  return err instanceof GrammyError ? err.error_code : undefined;
}

/** The Bot API's "your markup is broken" answer; the text itself is fine to resend plain. */
export function isParseError(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /can't parse entities|can't find end/i.test(err.description);
}

/** A basic group became a supergroup; returns the new chat id if this error says so. */
export function migratedTo(err: unknown): number | undefined {
  if (!(err instanceof GrammyError)) return undefined;
  const id = err.parameters?.migrate_to_chat_id;
  return typeof id === 'number' ? id : undefined;
}

export function isThreadNotFound(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /thread not found/i.test(err.description);
}

export function isNetworkError(err: unknown): boolean {
  return err instanceof HttpError;
}

/** Telegram's answer to an edit that changes nothing: the message already shows it. */
export function isNotModified(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description);
}

/** editMessageText on a photo or document: its text is a caption. */
export function isMediaMessage(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /no text in the message/i.test(err.description);
}

/** editMessageCaption on a text message. */
export function isTextMessage(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /no caption in the message/i.test(err.description);
}

/** Another bot's message (only the bot that sent a message may edit it, or delete it unless an admin). */
export function isNotOurs(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /message can't be (edited|deleted)/i.test(err.description);
}

/**
 * A refusal trying again cannot change: 403 (the bot was kicked, is not a member, was blocked)
 * and 400 (chat not found, message to edit not found, message can't be deleted, …). The sender's
 * errors carry the Bot API's as their cause. 401 (a revoked token), 429 (waited out by
 * auto-retry), 5xx and network errors pass.
 */
export function isRefusal(err: unknown): boolean {
  const e = err instanceof GrammyError ? err : err instanceof Error && err.cause instanceof GrammyError ? err.cause : undefined;
  return e !== undefined && (e.error_code === 403 || e.error_code === 400);
}

/**
 * A post refused for good becomes the core's PostRefusedError: in a room, the chat's delivery
 * queue records it as failed and goes on, instead of trying it (and holding back everything after
 * it there) for ever. Anything else is passed on as it is.
 */
export function refusedForGood(err: unknown, what: string): unknown {
  if (err instanceof PostRefusedError || !isRefusal(err)) return err;
  return new PostRefusedError(`Telegram refused ${what}: ${describeError(err)}`, { cause: err });
}

/** The Bot API's error code anywhere along an error's causes (our wrappers keep theirs). */
export function causeApiCode(err: unknown): number | undefined {
  for (let e = err, i = 0; e instanceof Error && i < 5; e = e.cause, i++) if (e instanceof GrammyError) return e.error_code;
  return undefined;
}
