/**
 * Live events between instances. Every event of a group this instance holds is sent with NOTIFY
 * on one connection (in order); the other instances re-emit it to their SSE clients and keep
 * their read-only copy of the group up to date. A transcript entry too large for NOTIFY's
 * 8000-byte payload travels as its seq and is read from the database; a streamed delta is cut
 * into pieces.
 */
import type pg from 'pg';
import type { Logger, Store } from '../core/ports.js';
import type { GatewayEvent } from '../core/readModels.js';
import type { TranscriptEntry } from '../core/types.js';
import { describeError } from '../core/errors.js';
import { PAYLOAD_MAX } from './inbox.js';
import type { Serial } from './serial.js';

export const EVENTS_CHANNEL = 'chorus_events';
/** Refresh a read-only copy at most this often per group (events come in bursts). */
const REFRESH_DEBOUNCE_MS = 150;

/** What the relay needs of the local router: its events, and its read-only copies of other groups. */
export interface RelayRouter {
  events: { emit(ev: GatewayEvent): void; subscribe(listener: (ev: GatewayEvent) => void): () => void };
  refreshCopy(id: string): Promise<void>;
  copyEntry(id: string, entry: TranscriptEntry): void;
}

export interface RelayOptions {
  pool: pg.Pool;
  instanceId: string;
  store: Pick<Store, 'readEntries'>;
  log: Logger;
  serial: Serial;
  /** A lease of the group is held here (loading, running or leaving it). */
  holds(groupId: string): boolean;
  /** This instance runs the group now. */
  runs(groupId: string): boolean;
}

export class EventRelay {
  private router: RelayRouter | undefined;
  /** Events that came from another instance: shown here, never sent back out. */
  private readonly remote = new WeakSet<GatewayEvent>();
  private readonly refreshTimers = new Map<string, NodeJS.Timeout>();
  private outgoing: string[] = [];
  private sending: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly o: RelayOptions) {}

  /** Send the local events of held groups out, and show the others' here. */
  start(router: RelayRouter): void {
    this.router = router;
    this.stopped = false;
    this.unsubscribe = router.events.subscribe((ev) => this.publish(ev));
  }

  /** Send nothing more from now on (a shutdown has begun). */
  halt(): void {
    this.stopped = true;
  }

  /** Stop sending; wait for what is being sent. */
  async stop(): Promise<void> {
    this.halt();
    for (const t of this.refreshTimers.values()) clearTimeout(t);
    this.refreshTimers.clear();
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.sending?.catch(() => undefined);
  }

  /** An event another instance sent (EVENTS_CHANNEL). */
  onEvent(payload: string): void {
    let msg: { i: string; e: WireEvent };
    try {
      msg = JSON.parse(payload) as { i: string; e: WireEvent };
    } catch {
      return;
    }
    if (msg.i === this.o.instanceId) return;
    const ev = msg.e;
    const groupId = ev.groupId;
    if (this.o.runs(groupId)) return; // a stale owner's echo: this instance runs the group now
    // In order per group: an entry that must be read from the database holds back what follows.
    void this.o.serial.run(`events:${groupId}`, async () => {
      let out: GatewayEvent;
      if ((ev.type === 'message' || ev.type === 'decision') && 'seq' in ev) {
        const [entry] = await this.o.store.readEntries(groupId, { afterSeq: ev.seq - 1, limit: 1 });
        if (!entry || entry.seq !== ev.seq) return;
        out = { type: ev.type, groupId, entry };
      } else if (ev.type === 'edited' && 'reread' in ev) {
        // An edit too long for one notification comes without its text and reactions: read as the store has them.
        const [entry] = await this.o.store.readEntries(groupId, { afterSeq: ev.seq - 1, limit: 1 });
        if (!entry || entry.seq !== ev.seq) return;
        const { reread: _reread, ...rest } = ev;
        out = { ...rest, text: entry.text, reactions: entry.reactions ?? [] };
      } else {
        out = ev as GatewayEvent;
        // The page asks for the group right after these: the copy here must show the change.
        if (out.type === 'group' || out.type === 'member' || out.type === 'config') await this.refreshNow(groupId);
      }
      // Cheap: the entry joins the copy's tail; the rest of the copy is read again on changes.
      if ((out.type === 'message' || out.type === 'decision') && !this.o.holds(groupId)) this.router?.copyEntry(groupId, out.entry);
      this.remote.add(out);
      this.router?.events.emit(out);
    });
  }

  /** Read the group's read-only copy again now (not if this instance holds the group). */
  refreshNow(groupId: string): Promise<void> {
    return this.o.serial.run(groupId, async () => {
      if (this.o.holds(groupId) || !this.router) return;
      await this.router.refreshCopy(groupId).catch((err: unknown) => this.o.log.debug({ group: groupId, err: describeError(err) }, 'could not refresh a read-only copy'));
    });
  }

  /** Read the copy again soon (several calls within the debounce are one read). */
  scheduleRefresh(groupId: string): void {
    if (this.refreshTimers.has(groupId) || this.stopped) return;
    const t = setTimeout(() => {
      this.refreshTimers.delete(groupId);
      void this.refreshNow(groupId);
    }, REFRESH_DEBOUNCE_MS);
    t.unref?.();
    this.refreshTimers.set(groupId, t);
  }

  /** A local event of a group this instance holds: send it to the others, in order. */
  private publish(ev: GatewayEvent): void {
    if (this.remote.has(ev) || this.stopped) return;
    if (!this.o.holds(ev.groupId)) return;
    for (const wire of toWire(ev)) this.outgoing.push(JSON.stringify({ i: this.o.instanceId, e: wire }));
    if (!this.sending) this.sending = this.sendLoop();
  }

  private async sendLoop(): Promise<void> {
    try {
      while (this.outgoing.length > 0) {
        const batch = this.outgoing;
        this.outgoing = [];
        try {
          // One statement, one connection at a time: NOTIFYs arrive in the order they were sent.
          await this.o.pool.query(`SELECT pg_notify('${EVENTS_CHANNEL}', p) FROM unnest($1::text[]) WITH ORDINALITY AS t(p, i) ORDER BY i`, [batch]);
        } catch (err) {
          this.o.log.debug({ err: describeError(err), events: batch.length }, 'could not send live events to other instances');
        }
      }
    } finally {
      this.sending = null;
    }
  }
}

/** An event as sent over NOTIFY: entries too large travel as their seq. */
type WireEvent =
  | GatewayEvent
  | { type: 'message' | 'decision'; groupId: string; seq: number }
  | (Omit<Extract<GatewayEvent, { type: 'edited' }>, 'text' | 'reactions'> & { reread: true });

/** Split an event into NOTIFY-sized pieces (an entry by reference, a long delta in parts). */
export function toWire(ev: GatewayEvent): WireEvent[] {
  if (ev.type === 'message' || ev.type === 'decision') {
    const full = JSON.stringify(ev);
    if (Buffer.byteLength(full) <= PAYLOAD_MAX) return [ev];
    return [{ type: ev.type, groupId: ev.groupId, seq: (ev.entry as TranscriptEntry).seq }];
  }
  if (ev.type === 'edited' && Buffer.byteLength(JSON.stringify(ev)) > PAYLOAD_MAX) {
    const { text: _text, reactions: _reactions, ...rest } = ev;
    return [{ ...rest, reread: true }];
  }
  if (ev.type === 'delta' && Buffer.byteLength(JSON.stringify(ev)) > PAYLOAD_MAX) {
    return splitText(ev.text, Math.floor(PAYLOAD_MAX / 8)).map((text) => ({ ...ev, text }));
  }
  return [ev];
}

/** Cut text into pieces of at most `max` UTF-16 units, never inside a surrogate pair. */
function splitText(text: string, max: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(text.length, i + max);
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}
