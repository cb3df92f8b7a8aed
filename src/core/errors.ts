/**
 * Errors that cross a port carry a code and whether retrying can help, so the router can decide
 * without knowing which SDK produced them.
 */

/** A model call failed. Providers convert SDK errors to this at the boundary. */
export class LlmError extends Error {
  override readonly name = 'LlmError';
  constructor(
    message: string,
    /** Short machine code: 'timeout' | 'rate_limited' | 'overloaded' | 'auth' | 'bad_request' | 'network' | 'server' | 'empty' | 'aborted'. */
    readonly code: string,
    /** Whether another attempt later may succeed. */
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A user-facing mistake (bad command, unknown agent, invalid config value). Shown verbatim. */
export class UserError extends Error {
  override readonly name = 'UserError';
  constructor(
    message: string,
    /** Machine code, used as `error.code` in API responses. */
    readonly code: string = 'bad_request',
    /** HTTP status for the web API. */
    readonly status: number = 400,
    /** A refusal that passes with time (a rate limit): when the same request would be taken. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/**
 * A group was created a moment ago by another instance sharing the database (its lease was taken
 * first): the request is refused with 409, and the group's id says where it went.
 */
export class CreatedElsewhereError extends UserError {
  constructor(readonly groupId: string) {
    super(`a group with id "${groupId}" was just created by another instance`, 'conflict', 409);
  }
}

/** A change for a group another instance runs: 409, naming that instance when it is known. */
export function notOwnerError(groupId: string, owner: string | null): UserError {
  return new UserError(`group "${groupId}" is run by ${owner ? `instance "${owner}"` : 'another instance (being taken over)'}; send this change there or retry shortly`, 'not_owner', 409);
}

/** A Store could not make a change durable: the request is refused (503) and nothing is kept. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A platform refused a post, an edit or a deletion for good (the chat is gone, the bot was removed,
 * the message no longer exists): trying again cannot help. Any other error from a channel is taken
 * as passing (an outage, a 5xx, a rate limit) and the same post is tried again later.
 */
export class PostRefusedError extends Error {
  override readonly name = 'PostRefusedError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Data on disk written by a newer Chorus, or unusable as a whole: refuse to start. */
export class StoreFormatError extends Error {
  override readonly name = 'StoreFormatError';
}

/** Short, log-safe description of any thrown value. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
