/**
 * Discord errors, made safe to log and to hand to the router.
 *
 * discord.js errors carry the request URL, and a webhook execute URL contains the webhook token;
 * loggers serialise whole error objects. So nothing raw leaves the adapter: every failure is
 * re-thrown as a DiscordPostError with the status, Discord's code and its message only.
 */
import { DiscordAPIError, HTTPError, RateLimitError } from 'discord.js';
import { PostRefusedError } from '../../core/errors.js';

/** Discord's JSON error codes the adapter reacts to. */
export const DiscordCode = {
  UnknownChannel: 10003,
  UnknownMessage: 10008,
  UnknownWebhook: 10015,
  MissingAccess: 50001,
  MissingPermissions: 50013,
} as const;

export class DiscordPostError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly code: number | string | undefined,
  ) {
    super(message);
    this.name = 'DiscordPostError';
  }
}

/** Status and Discord code of any discord.js REST error (undefined when it is something else). */
export function apiErrorInfo(err: unknown): { status: number | undefined; code: number | string | undefined } {
  if (err instanceof DiscordAPIError) return { status: err.status, code: err.code };
  if (err instanceof HTTPError) return { status: err.status, code: undefined };
  if (err instanceof RateLimitError) return { status: 429, code: undefined };
  return { status: undefined, code: undefined };
}

export function isMissingPermission(err: unknown): boolean {
  const { status, code } = apiErrorInfo(err);
  return code === DiscordCode.MissingPermissions || code === DiscordCode.MissingAccess || (status === 403 && code === undefined);
}

/** A copy of `err` without URLs, request bodies or tokens, prefixed with what we were doing. */
export function sanitizeError(err: unknown, doing: string): DiscordPostError {
  if (err instanceof DiscordPostError) return err;
  const { status, code } = apiErrorInfo(err);
  let detail: string;
  if (err instanceof DiscordAPIError) detail = `${err.message} (HTTP ${err.status}, code ${err.code})`;
  else if (err instanceof HTTPError) detail = `HTTP ${err.status} ${err.message}`;
  else if (err instanceof Error) detail = err.message;
  else detail = String(err);
  // Belt and braces: strip anything that looks like a webhook path with its token.
  detail = detail.replace(/\/webhooks\/\d+\/[\w-]+/g, '/webhooks/<id>/<token>');
  return new DiscordPostError(`${doing}: ${detail}`, status, code);
}

/** The message is not there (deleted, or never one this webhook / the bot can reach). */
export function isUnknownMessage(err: unknown): boolean {
  return apiErrorInfo(err).code === DiscordCode.UnknownMessage;
}

/**
 * `err` as the core reads it: a 4xx is Discord refusing this request for good (the channel or the
 * message is gone, the bot may not, the body is invalid), so it becomes a PostRefusedError, and
 * the core stops trying; anything else (429, 5xx, no answer) passes and is tried again later. 401
 * is the bot's token, which a restart with a fixed config mends: not this post's fault.
 */
export function refusalOf(err: unknown): Error {
  if (err instanceof PostRefusedError) return err;
  const status = err instanceof DiscordPostError ? err.status : apiErrorInfo(err).status;
  const message = err instanceof Error ? err.message : String(err);
  if (status !== undefined && status >= 400 && status < 500 && status !== 429 && status !== 401 && status !== 408) return new PostRefusedError(message, { cause: err });
  return err instanceof Error ? err : new Error(message);
}
