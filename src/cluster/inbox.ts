/**
 * The inbox (`chorus_inbox`): messages and changes an instance took for a group another instance
 * runs. A row is durable before the poster's 202, and the owner is woken with NOTIFY. The owner
 * moves the rows into the group's log in id order — before any message posted to it directly, so
 * a person's order is kept — and deletes them; a crash in between is caught by the core's dedupe.
 * Unique per (group, dedupe key): a message posted twice to non-owners is kept once.
 *
 * A command asked on the web page waits a few seconds for the owner's outcome, which comes back
 * on another NOTIFY channel (the answer RPC).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { PlatformChange, Logger } from '../core/ports.js';
import type { EphemeralAnswer, InboundMessage, ReceiveResult } from '../core/types.js';
import { StoreUnavailableError, describeError } from '../core/errors.js';

export const INBOX_CHANNEL = 'chorus_inbox';
/** The owner's outcome of a command handed over from the web page, for the instance that took it. */
export const ANSWERS_CHANNEL = 'chorus_answers';
/** How long a handed-over web command waits for the owner's answer before its 202 goes out. */
const ANSWER_WAIT_MS = 5000;
/** NOTIFY payloads must stay under 8000 bytes; leave room for the envelope. */
export const PAYLOAD_MAX = 7000;
/** Inbox rows moved per query. */
const INBOX_BATCH = 200;

type Answer = { ephemeral?: EphemeralAnswer; entryId?: string };

/** What the inbox needs of the instance that runs a group. */
export interface InboxOwner {
  /** Does this instance run the group right now? */
  runs(groupId: string): boolean;
  /** Record a message handed over (throws `StoreUnavailableError` if the group was lost meanwhile). */
  receiveForwarded(msg: InboundMessage): Promise<ReceiveResult>;
  applyForwarded(groupId: string, change: PlatformChange): Promise<void>;
}

export class Inbox {
  /** Handed-over commands waiting for the owner's answer (group + message id → resolve). */
  private readonly answers = new Map<string, (a: Answer) => void>();

  constructor(
    private readonly o: {
      pool: pg.Pool;
      log: Logger;
      /** False while the LISTEN connection is down: nobody would hear an answer. */
      listening(): boolean;
    },
  ) {}

  /**
   * Keep a message for the group's owner (durable when resolved). `awaitAnswer`: wait a few
   * seconds for the owner to run the command and return its outcome on the 'forwarded' result.
   */
  async forward(groupId: string, msg: InboundMessage, opts: { awaitAnswer?: boolean } = {}): Promise<ReceiveResult> {
    // Listening before the insert: the owner may answer before the insert's reply reaches us.
    const key = JSON.stringify([groupId, msg.messageId]);
    let answered: Promise<Answer | null> | null = null;
    let timer: NodeJS.Timeout | undefined;
    let mine: ((a: Answer) => void) | undefined;
    // (A second copy of the same message turns out a duplicate below and does not wait.)
    if (opts.awaitAnswer && this.o.listening() && !this.answers.has(key)) {
      answered = new Promise((resolve) => {
        mine = resolve;
        this.answers.set(key, resolve);
        timer = setTimeout(() => resolve(null), ANSWER_WAIT_MS);
        timer.unref?.();
      });
    }
    try {
      const res = await this.insert(groupId, msg);
      if (res.status !== 'forwarded' || !answered) return res;
      const answer = await answered;
      return answer ? { ...res, ...answer } : res;
    } finally {
      clearTimeout(timer);
      if (mine && this.answers.get(key) === mine) this.answers.delete(key);
    }
  }

  private async insert(groupId: string, msg: InboundMessage): Promise<ReceiveResult> {
    try {
      const { rows } = await this.o.pool.query<{ id: string }>(
        `WITH ins AS (
           INSERT INTO chorus_inbox (group_id, dedupe_key, message) VALUES ($1, $2, $3::json)
           ON CONFLICT (group_id, dedupe_key) DO NOTHING RETURNING id)
         SELECT id, pg_notify('${INBOX_CHANNEL}', $1) FROM ins`,
        [groupId, msg.messageId, JSON.stringify(msg)],
      );
      const row = rows[0];
      if (!row) return { status: 'duplicate', groupId };
      return { status: 'forwarded', groupId, inboxId: String(row.id) };
    } catch (err) {
      this.o.log.warn({ group: groupId, err: describeError(err) }, 'could not hand a message over to the inbox');
      return { status: 'rejected', groupId, code: 'unavailable', reason: 'storage is unavailable; nothing was recorded, try again shortly' };
    }
  }

  /** Keep a change (bots joining or leaving, a reaction, an edit, a new chat id) for the group's owner, in order with its messages. */
  async forwardChange(groupId: string, change: PlatformChange): Promise<void> {
    try {
      await this.o.pool.query(
        `WITH ins AS (INSERT INTO chorus_inbox (group_id, dedupe_key, message) VALUES ($1, $2, $3::json) RETURNING id)
         SELECT id, pg_notify('${INBOX_CHANNEL}', $1) FROM ins`,
        [groupId, `change:${randomUUID()}`, JSON.stringify({ forwardedChange: change })],
      );
    } catch (err) {
      throw new StoreUnavailableError(`could not hand a change of group ${groupId} over: ${describeError(err)}`, { cause: err });
    }
  }

  /** Groups with rows waiting (their NOTIFY may have been missed: a reconnect, a takeover). */
  async waiting(): Promise<string[]> {
    const { rows } = await this.o.pool.query<{ group_id: string }>('SELECT DISTINCT group_id FROM chorus_inbox');
    return rows.map((r) => r.group_id);
  }

  /**
   * Move the group's waiting rows into its log, oldest first (run it in the group's serial
   * order). True once none is left; false when one could not be recorded (it stays for the next try).
   */
  async drain(groupId: string, owner: InboxOwner): Promise<boolean> {
    for (;;) {
      if (!owner.runs(groupId)) return false;
      const { rows } = await this.o.pool.query<{ id: string; message: InboundMessage | { forwardedChange: PlatformChange } }>('SELECT id, message FROM chorus_inbox WHERE group_id = $1 ORDER BY id LIMIT $2', [groupId, INBOX_BATCH]);
      let kept = 0;
      for (const row of rows) {
        const moved = 'forwardedChange' in row.message ? await this.applyChange(groupId, row.id, row.message.forwardedChange, owner) : await this.record(groupId, row.id, row.message, owner);
        if (moved === 'stop') return false;
        if (moved === 'kept') kept++;
        else await this.o.pool.query('DELETE FROM chorus_inbox WHERE id = $1', [row.id]);
      }
      // A full batch of kept rows would be read again and again: stop there.
      if (rows.length < INBOX_BATCH || kept === rows.length) return true;
    }
  }

  private async applyChange(groupId: string, rowId: string, change: PlatformChange, owner: InboxOwner): Promise<'moved' | 'kept' | 'stop'> {
    try {
      await owner.applyForwarded(groupId, change);
      return 'moved';
    } catch (err) {
      if (err instanceof StoreUnavailableError) {
        this.o.log.warn({ group: groupId, inboxId: rowId, err: describeError(err) }, 'a handed-over change could not be applied yet; it stays in the inbox');
        return 'stop';
      }
      // Refused for a reason a retry would not change: the messages behind it must not wait
      // forever. It stays for an operator; the rest goes on.
      this.o.log.error({ group: groupId, inboxId: rowId, kind: change.kind, err: describeError(err) }, 'a handed-over change was refused; it is kept in the inbox (chorus_inbox) for an operator');
      return 'kept';
    }
  }

  private async record(groupId: string, rowId: string, msg: InboundMessage, owner: InboxOwner): Promise<'moved' | 'kept' | 'stop'> {
    const res = await owner.receiveForwarded(msg);
    // Not recorded (the store refused, or this instance is leaving): the row stays for later.
    if (res.status === 'rejected' && (res.code === 'unavailable' || res.code === 'shutting_down')) {
      this.o.log.warn({ group: groupId, inboxId: rowId, reason: res.reason }, 'a handed-over message could not be recorded yet; it stays in the inbox');
      return 'stop';
    }
    if (res.status === 'no_group') {
      // Acknowledged, yet this instance finds no group for its chat (the chat moved to a new id
      // after it was handed over): deleting it would lose it. It stays, the rest goes on.
      this.o.log.error({ group: groupId, inboxId: rowId, chat: msg.chatId }, 'a handed-over message has no group for its chat here; it is kept in the inbox (chorus_inbox) for an operator');
      return 'kept';
    }
    // A command from the web page: the instance that took it may still be waiting to answer.
    if (msg.ephemeral && res.status === 'command') await this.answer(groupId, msg.messageId, res);
    return 'moved';
  }

  private async answer(groupId: string, messageId: string, res: ReceiveResult): Promise<void> {
    const k = [groupId, messageId];
    let payload = JSON.stringify({ k, e: res.ephemeral, id: res.entryId });
    // Too long for NOTIFY: the asker is told where it went (the page can ask again).
    if (Buffer.byteLength(payload) > PAYLOAD_MAX) payload = JSON.stringify({ k, id: res.entryId ?? null, big: true });
    await this.o.pool.query(`SELECT pg_notify('${ANSWERS_CHANNEL}', $1)`, [payload]).catch(() => undefined);
  }

  /** An answer came in on ANSWERS_CHANNEL: hand it to the forward waiting for it, if any. */
  onAnswer(payload: string): void {
    try {
      const a = JSON.parse(payload) as { k: [string, string]; e?: EphemeralAnswer; id?: string | null; big?: boolean };
      const resolve = this.answers.get(JSON.stringify(a.k));
      resolve?.({ ...(a.e && !a.big ? { ephemeral: a.e } : {}), ...(a.id ? { entryId: a.id } : {}) });
    } catch {
      // Not ours to read: ignore.
    }
  }
}
