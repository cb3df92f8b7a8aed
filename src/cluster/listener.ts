/**
 * The LISTEN connection, held open outside the pool: NOTIFYs of the inbox, the answer RPC and the
 * event relay come in on it. When it fails it is opened again (backing off up to 10 s) and
 * `onReconnect` runs: whatever was sent meanwhile was missed.
 */
import pg from 'pg';
import type { Logger } from '../core/ports.js';
import { describeError } from '../core/errors.js';

export interface ListenerOptions {
  connectionString: string;
  channels: readonly string[];
  log: Logger;
  onNotification(channel: string, payload: string): void;
  onReconnect(): void;
}

export class Listener {
  private client: pg.Client | null = null;
  private stopped = false;

  constructor(private readonly o: ListenerOptions) {}

  /** Connected and listening (an answer sent now would be heard). */
  get up(): boolean {
    return this.client !== null;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  /** No reconnecting from now on (a shutdown has begun). */
  halt(): void {
    this.stopped = true;
  }

  async stop(): Promise<void> {
    this.halt();
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.o.connectionString, application_name: 'chorus-listen' });
    client.on('error', (err) => {
      this.o.log.warn({ err: describeError(err) }, 'the LISTEN connection failed; reconnecting');
      if (this.client === client) {
        this.client = null;
        this.reconnect(500);
      }
    });
    client.on('notification', (n) => this.o.onNotification(n.channel, n.payload ?? ''));
    await client.connect();
    for (const channel of this.o.channels) await client.query(`LISTEN ${channel}`);
    this.client = client;
  }

  private reconnect(wait: number): void {
    if (this.stopped) return;
    const t = setTimeout(async () => {
      try {
        await this.connect();
        this.o.onReconnect();
      } catch {
        this.reconnect(Math.min(wait * 2, 10_000));
      }
    }, wait);
    t.unref?.();
  }
}
