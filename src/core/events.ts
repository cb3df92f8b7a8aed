import type { Logger } from './ports.js';
import type { GatewayEvent } from './readModels.js';

/** Fan-out of live events to subscribers (SSE clients). A throwing listener never hurts others. */
export class EventHub {
  private readonly listeners = new Set<(ev: GatewayEvent) => void>();
  constructor(private readonly logger: Logger) {}

  subscribe(listener: (ev: GatewayEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  get size(): number {
    return this.listeners.size;
  }

  emit(ev: GatewayEvent): void {
    for (const l of this.listeners) {
      try {
        l(ev);
      } catch (err) {
        this.logger.warn({ err: String(err), type: ev.type }, 'event listener failed');
      }
    }
  }
}
