/**
 * Long polling for one bot, with at-least-once confirmation. grammY's `bot.start()` confirms an
 * update once its handler was *tried* (and `bot.stop()` confirms the update still being handled),
 * so a failed or interrupted hand-over would be lost. Here the offset only moves past an update
 * after its handler resolved, i.e. after the router recorded the message durably; anything else
 * is fetched again and the router's dedupe absorbs the repeat.
 */
import type { Bot } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../core/ports.js';
import { apiErrorCode, describeError } from './errors.js';
import { MalformedUpdateError, handlerError, type KeepDeadLetter } from './deadLetters.js';

export interface PollerOptions {
  /** Seconds a getUpdates call may wait for news. */
  timeoutSeconds: number;
  allowedUpdates: ReadonlyArray<'message' | 'edited_message' | 'my_chat_member' | 'callback_query' | 'message_reaction'>;
  /** The token stopped working (401): the bot is out until the next start. */
  onUnauthorized: () => void;
  /**
   * Polling keeps failing (the problem, after two failures in a row) or works again (null). One
   * failure is not reported: a single dropped long poll is routine and retried at once.
   */
  onHealth?: ((problem: string | null) => void) | undefined;
  /** Where an update that can never be handed over goes before its offset is passed. */
  deadLetter: KeepDeadLetter;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });

export class UpdatePoller {
  /** Next update id to ask for: everything below it was handled. */
  private offset = 0;
  private abort: AbortController | undefined;
  private loopDone: Promise<void> | undefined;

  constructor(
    private readonly bot: Bot,
    private readonly log: Logger,
    private readonly opts: PollerOptions,
  ) {}

  get running(): boolean {
    return this.abort !== undefined;
  }

  start(): void {
    if (this.abort) return;
    const abort = new AbortController();
    this.abort = abort;
    this.loopDone = this.loop(abort.signal);
  }

  /**
   * Stop polling. Waits (bounded) for the update in hand, then confirms what was handled so a
   * restart does not fetch it again. An update whose hand-over did not finish stays unconfirmed.
   */
  async stop(graceMs = 5000): Promise<void> {
    const abort = this.abort;
    if (!abort) return;
    this.abort = undefined;
    abort.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loopDone, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    if (this.offset > 0) {
      try {
        await this.bot.api.getUpdates({ offset: this.offset, limit: 1, timeout: 0 });
      } catch (err) {
        this.log.debug({ err: describeError(err, [this.bot.token]) }, 'telegram: could not confirm last updates on stop');
      }
    }
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let first = true;
    let failures = 0;
    while (!signal.aborted) {
      let updates: Update[];
      try {
        updates = await this.bot.api.getUpdates(
          {
            offset: this.offset || undefined,
            timeout: this.opts.timeoutSeconds,
            // Telegram remembers allowed_updates; send it once per start.
            allowed_updates: first ? [...this.opts.allowedUpdates] : undefined,
          },
          // grammY types its signal with the abort-controller polyfill; the native one works.
          signal as Parameters<Bot['api']['getUpdates']>[1],
        );
        first = false;
        if (failures > 0) this.opts.onHealth?.(null);
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (apiErrorCode(err) === 401) {
          this.log.error({ err: describeError(err, [this.bot.token]) }, 'telegram: bot token was rejected while polling; this bot stops');
          this.opts.onUnauthorized();
          break;
        }
        failures++;
        if (failures >= 2) this.opts.onHealth?.(describeError(err, [this.bot.token]));
        const wait = Math.min(30_000, 500 * 2 ** Math.min(failures, 6));
        this.log.warn({ err: describeError(err, [this.bot.token]), retryInMs: wait }, 'telegram: getUpdates failed');
        await sleep(wait, signal);
        continue;
      }
      for (const update of updates) {
        // Stopped mid-batch: leave the rest unconfirmed; they come again after a restart.
        if (signal.aborted) return;
        try {
          try {
            await this.bot.handleUpdate(update);
          } catch (err) {
            const cause = handlerError(err);
            // Fetched again it would fail again, and the updates after it would never come:
            // kept as a dead letter and passed. If it cannot be kept, it is fetched again.
            if (!(cause instanceof MalformedUpdateError)) throw cause;
            await this.opts.deadLetter(update, cause.message);
          }
          this.offset = update.update_id + 1;
        } catch (err) {
          // The router could not record it (e.g. storage trouble): fetch it again later.
          this.log.warn({ updateId: update.update_id, err: describeError(err, [this.bot.token]) }, 'telegram: update not handed over; will retry');
          await sleep(2000, signal);
          break;
        }
      }
    }
  }
}
