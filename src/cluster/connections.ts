/**
 * Connections only one instance may hold at a time (a Telegram bot's long poll, the Discord
 * gateway): channels register them with `hold`; this instance starts one while it holds its lease
 * and stops it when the lease is lost. Each instance takes up to its share of them.
 */
import type { ConnectionGate, Logger } from '../core/ports.js';
import { describeError } from '../core/errors.js';
import { connectionKey, type Leases } from './leases.js';
import type { Serial } from './serial.js';

type Handlers = { start(): void | Promise<void>; stop(): Promise<void> };

export class Connections implements ConnectionGate {
  /** Registered by channels: name → what to do when this instance holds it or not. */
  private readonly registered = new Map<string, Handlers>();

  constructor(private readonly o: { leases: Leases; serial: Serial; log: Logger }) {}

  /** A connection only one instance may hold; taken at the next tick. */
  hold(name: string, handlers: Handlers): void {
    // The lease table tells a connection's row from a group's by the colon in its name.
    if (!name.includes(':')) throw new Error(`connection keys contain ":" (got "${name}")`);
    this.registered.set(name, handlers);
  }

  /**
   * Take the registered connections nobody holds. Each instance takes up to its share; one that
   * stayed free for two ticks (its holder died and the others are full) is taken by anyone.
   */
  async claim(liveInstances: number, stopped: () => boolean): Promise<void> {
    const { leases } = this.o;
    let mine = [...leases.connections.keys()].filter((k) => this.registered.has(k)).length;
    const share = Math.ceil(this.registered.size / liveInstances);
    for (const [name, handlers] of this.registered) {
      if (leases.connections.has(name) || stopped()) continue;
      const epoch = await leases.claimConnection(name, mine < share ? 0 : leases.tickMs * 2);
      if (epoch === null) continue;
      mine++;
      this.o.log.info({ connection: name }, 'now holding a connection');
      try {
        await handlers.start();
      } catch (err) {
        this.o.log.warn({ connection: name, err: describeError(err) }, 'could not start a connection; its lease is given back');
        await leases.giveBack(connectionKey(name), epoch);
      }
    }
  }

  /** Its lease is gone (already dropped from the held ones): stop the connection. */
  lost(name: string, why: string): void {
    const conn = this.registered.get(name);
    this.o.log.warn({ connection: name, why }, 'stopped holding a connection');
    if (conn) void this.o.serial.run(name, () => conn.stop());
  }
}
