/**
 * Server-Sent Events for the web feed. One hub fans the gateway's live events out to every
 * connected client; it subscribes to the gateway only while at least one client is connected, so
 * a disconnected client leaves no listener behind.
 *
 * Group streams carry `id: <seq>` on message and decision events. A client that reconnects with
 * `Last-Event-ID` (or `?after=`) first gets the transcript entries it missed, then live events,
 * with no duplicates and no gaps: while the replay is written, live events are held back and
 * those already covered by the replay are dropped.
 *
 * A fast model streams hundreds of small deltas a second; each SSE event costs the browser a task.
 * So a client that asks for it (`?batch=1`, the page does) gets at most one `delta` event per
 * DELTA_BATCH_MS: the first chunk at once, those that follow within the window together in one
 * event (their text joined, in order). Any other event first sends the deltas held back, so the
 * order of events never changes.
 *
 * A group client that asks for it (`?inflight=1`, the page does) first gets an `inflight` event:
 * who is typing and the text so far of each reply being written (inflight.ts). It is taken at the
 * moment the client is registered, so the deltas after it are exactly the ones it lacks. The global
 * stream, asked the same way, first gets `typing-all`: who is typing in every group.
 */
import type { ServerResponse } from 'node:http';
import type { GatewayApi, Logger } from '../../core/ports.js';
import type { GatewayEvent } from '../../core/readModels.js';
import type { TranscriptEntry } from '../../core/types.js';
import type { InFlightSnapshot } from './inflight.js';
import type { WebMetrics } from './metrics.js';

/** How many missed entries a reconnecting client may be sent before it is told to reload. */
const MAX_REPLAY = 2000;
/** A client whose unsent output grows past this is too slow and is disconnected. */
const MAX_BUFFERED_BYTES = 2 * 1024 * 1024;
/** Heartbeats in a row that a client could not take before it is taken for dead. */
const STALLED_BEATS = 2;
/** A client gets at most one delta event per this many ms (about a frame); the rest waits, joined. */
const DELTA_BATCH_MS = 16;

type DeltaEvent = Extract<GatewayEvent, { type: 'delta' }>;

interface SseClient {
  res: ServerResponse;
  /** null = the global stream (every group, no deltas). */
  groupId: string | null;
  /** Held-back live events while the replay is written. */
  pending: GatewayEvent[] | null;
  /** Entries up to this seq were covered by the replay. */
  replayedUpTo: number;
  /** The last heartbeat has not left the process yet (its write callback has not run). */
  beatPending: boolean;
  /** Writes handed to the kernel so far (their callbacks ran): the measure of progress. */
  flushed: number;
  /** `flushed` at the previous heartbeat. */
  flushedAtBeat: number;
  /** Heartbeat intervals in a row with output waiting and nothing flushed. */
  missedBeats: number;
  /** Whether deltas are batched for this client. */
  batch: boolean;
  /** Deltas of one turn held back until the batch window ends, and its timer. */
  held: { ev: DeltaEvent; parts: string[] } | null;
  heldTimer: NodeJS.Timeout | null;
  /** When the last delta event was written (performance.now()). */
  lastDeltaAt: number;
}

export interface SseHubOptions {
  gateway: GatewayApi;
  logger: Logger;
  heartbeatMs?: number;
  /** Reconnect delay suggested to browsers. */
  retryMs?: number | undefined;
  /** Counts streams cut for not reading (optional). */
  metrics?: WebMetrics | undefined;
  /** Unsent output at which a client is cut at once (default 2 MiB; tests raise it to watch the heartbeat). */
  maxBufferedBytes?: number | undefined;
  /** The replies being written in a group, for clients that ask (`inflight`). */
  inFlight?: ((groupId: string) => InFlightSnapshot) | undefined;
  /** Who is typing in every group, for global clients that ask (`inflight`). */
  typingEverywhere?: (() => Record<string, string[]>) | undefined;
}

export class SseHub {
  private readonly clients = new Set<SseClient>();
  private unsubscribe: (() => void) | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** When the last heartbeat ran (0: none yet). */
  private lastPingAt = 0;
  private readonly heartbeatMs: number;
  private readonly retryMs: number;

  constructor(private readonly opts: SseHubOptions) {
    this.heartbeatMs = opts.heartbeatMs ?? 15_000;
    this.retryMs = opts.retryMs ?? 2_000;
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /**
   * Serve one SSE connection. `groupId` null = the global stream. `resumeAfter` = the last seq the
   * client has; entries after it are replayed first. `inflight`: begin with the replies in flight.
   * `batch`: deltas in at most one event per DELTA_BATCH_MS.
   */
  open(res: ServerResponse, groupId: string | null, resumeAfter: number | undefined, opts: { inflight?: boolean; batch?: boolean } = {}): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    // A stream is quiet between events by design: the server's inactivity timeout does not
    // apply to it; the heartbeat below decides whether the peer is still there.
    res.socket?.setTimeout(0);
    res.write(`retry: ${this.retryMs}\n: connected\n\n`);

    const client: SseClient = { res, groupId, pending: [], replayedUpTo: -1, beatPending: false, flushed: 0, flushedAtBeat: 0, missedBeats: 0, batch: opts.batch ?? false, held: null, heldTimer: null, lastDeltaAt: -Infinity };
    this.clients.add(client);
    this.ensureSubscribed();
    res.on('close', () => this.remove(client));
    const inflight = opts.inflight && groupId !== null && this.opts.inFlight ? { type: 'inflight', groupId, ...this.opts.inFlight(groupId) } : null;
    if (inflight) this.write(client, 'inflight', inflight);
    // The global stream's counterpart: who is typing in each group, so a sidebar that (re)connects
    // while an agent writes shows it instead of waiting for the next typing event.
    if (opts.inflight && groupId === null && this.opts.typingEverywhere) this.write(client, 'typing-all', { type: 'typing-all', typing: this.opts.typingEverywhere() });

    void this.replay(client, groupId, resumeAfter, inflight).catch((err: unknown) => {
      this.write(client, 'reset', { type: 'reset', groupId, reason: 'could not read the missed entries; reload the transcript' });
      if (inflight) this.write(client, 'inflight', inflight);
      this.opts.logger.warn({ group: groupId, err: String(err) }, 'sse: replay failed');
    });
  }

  /** Replay what a resuming client missed; live events are held meanwhile, then sent in order. */
  private async replay(client: SseClient, groupId: string | null, resumeAfter: number | undefined, inflight: object | null): Promise<void> {
    if (groupId !== null && resumeAfter !== undefined) {
      const missed = await this.missedEntries(groupId, resumeAfter);
      if (missed === 'too_many') {
        this.write(client, 'reset', { type: 'reset', groupId, reason: 'too many missed entries; reload the transcript' });
        // A reset starts the page afresh: what is being written is said again after it.
        if (inflight) this.write(client, 'inflight', inflight);
      } else {
        for (const entry of missed) {
          this.write(client, entry.kind === 'decision' ? 'decision' : 'message', { type: entry.kind === 'decision' ? 'decision' : 'message', groupId, entry }, entry.seq);
          client.replayedUpTo = Math.max(client.replayedUpTo, entry.seq);
        }
        client.replayedUpTo = Math.max(client.replayedUpTo, resumeAfter);
      }
    }
    const held = client.pending ?? [];
    client.pending = null;
    for (const ev of held) this.deliver(client, ev);
  }

  /** End every stream (shutdown, or tests forcing a reconnect). */
  closeAll(): void {
    for (const c of [...this.clients]) {
      c.res.end();
      this.remove(c);
    }
  }

  private ensureSubscribed(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.opts.gateway.subscribe((ev) => this.broadcast(ev));
    // Checked from setImmediate: after a stall of the whole process the timer fires before the
    // socket completions that piled up meanwhile have run, and a reading client would look stuck.
    this.heartbeat = setInterval(() => setImmediate(() => this.ping()), this.heartbeatMs);
    this.heartbeat.unref();
  }

  private remove(client: SseClient): void {
    if (client.heldTimer) clearTimeout(client.heldTimer);
    client.heldTimer = null;
    client.held = null;
    if (!this.clients.delete(client)) return;
    if (this.clients.size === 0) {
      this.unsubscribe?.();
      this.unsubscribe = null;
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }

  private broadcast(ev: GatewayEvent): void {
    // Deltas arrive already filtered: the router never streams the pass token (core/text/passStream).
    for (const client of this.clients) {
      if (client.pending) client.pending.push(ev);
      else this.deliver(client, ev);
    }
  }

  private deliver(client: SseClient, ev: GatewayEvent): void {
    if (client.groupId === null) {
      if (ev.type === 'delta') return;
      this.write(client, ev.type, ev);
      return;
    }
    if (ev.groupId !== client.groupId) return;
    if (ev.type === 'delta' && client.batch) return this.batchDelta(client, ev);
    if (ev.type === 'message' || ev.type === 'decision') {
      if (ev.entry.seq <= client.replayedUpTo) return;
      this.write(client, ev.type, ev, ev.entry.seq);
      return;
    }
    this.write(client, ev.type, ev);
  }

  /** A delta now, or held to go with the next ones in one event (see the top of this file). */
  private batchDelta(client: SseClient, ev: DeltaEvent): void {
    if (client.held && client.held.ev.turnId !== ev.turnId) this.flushHeld(client);
    if (client.held) {
      client.held.parts.push(ev.text);
      return;
    }
    const wait = client.lastDeltaAt + DELTA_BATCH_MS - performance.now();
    if (wait <= 0) {
      client.lastDeltaAt = performance.now();
      this.send(client, 'delta', ev);
      return;
    }
    client.held = { ev, parts: [ev.text] };
    client.heldTimer = setTimeout(() => this.flushHeld(client), wait);
  }

  private flushHeld(client: SseClient): void {
    const held = client.held;
    if (!held) return;
    client.held = null;
    if (client.heldTimer) clearTimeout(client.heldTimer);
    client.heldTimer = null;
    client.lastDeltaAt = performance.now();
    this.send(client, 'delta', held.parts.length === 1 ? held.ev : { ...held.ev, text: held.parts.join('') });
  }

  /** Write one event, after any deltas held back (events keep their order). */
  private write(client: SseClient, event: string, data: unknown, id?: number): void {
    this.flushHeld(client);
    this.send(client, event, data, id);
  }

  private send(client: SseClient, event: string, data: unknown, id?: number): void {
    const res = client.res;
    if (res.writableEnded || res.destroyed) {
      this.remove(client);
      return;
    }
    let frame = `event: ${event}\n`;
    if (id !== undefined) frame += `id: ${id}\n`;
    frame += `data: ${JSON.stringify(data)}\n\n`;
    res.write(frame, () => {
      client.flushed++;
    });
    if (res.writableLength > (this.opts.maxBufferedBytes ?? MAX_BUFFERED_BYTES)) {
      this.opts.logger.warn({ groupId: client.groupId }, 'web: SSE client too slow, disconnecting');
      res.destroy();
      this.remove(client);
    }
  }

  /**
   * Heartbeat: a comment line to every stream. A peer that went away is found when the write
   * fails (the stream closes and is removed). A peer that is connected but no longer reads (a
   * frozen tab, a peer gone silent with a full window) is found by its output not moving: a
   * write's callback runs once Node has handed its bytes to the kernel, so output waiting while
   * no callback ran for a whole interval means the peer took nothing. After `STALLED_BEATS` such
   * intervals in a row the stream is destroyed and its buffered output freed. A client that
   * reads slowly but reads is kept. No heartbeat is queued behind a pending one, so a stalled
   * client does not grow by a line per interval.
   */
  private ping(): void {
    const now = Date.now();
    // A beat that comes much later than its interval means this process was not running (a busy
    // machine, a paused VM): nobody's output could move meanwhile, so that interval counts for no one.
    const late = this.lastPingAt !== 0 && now - this.lastPingAt > this.heartbeatMs * 1.5;
    this.lastPingAt = now;
    for (const client of [...this.clients]) {
      const res = client.res;
      if (res.writableEnded || res.destroyed) {
        this.remove(client);
        continue;
      }
      const stuck = res.writableLength > 0 && client.flushed === client.flushedAtBeat;
      client.flushedAtBeat = client.flushed;
      if (!late) client.missedBeats = stuck ? client.missedBeats + 1 : 0;
      if (client.missedBeats >= STALLED_BEATS) {
        this.opts.logger.warn({ groupId: client.groupId, unsentBytes: res.writableLength }, 'web: SSE client stopped reading, disconnecting');
        if (this.opts.metrics) this.opts.metrics.sseStalled++;
        res.destroy();
        this.remove(client);
        continue;
      }
      if (client.beatPending) continue;
      client.beatPending = true;
      res.write(': ping\n\n', () => {
        client.beatPending = false;
        client.flushed++;
      });
    }
  }

  /** Entries with seq > after, oldest first, paging backwards through the transcript. */
  private async missedEntries(groupId: string, after: number): Promise<TranscriptEntry[] | 'too_many'> {
    const out: TranscriptEntry[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await this.opts.gateway.messages(groupId, { before, limit: 200 });
      if (page.length === 0) break;
      const fresh = page.filter((e) => e.seq > after);
      out.unshift(...fresh);
      if (out.length > MAX_REPLAY) return 'too_many';
      if (fresh.length < page.length) break;
      const oldest = page[0]!.seq;
      if (before !== undefined && oldest >= before) break;
      before = oldest;
      if (oldest <= after + 1) break;
    }
    return out;
  }
}
