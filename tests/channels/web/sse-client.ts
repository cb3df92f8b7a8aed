/**
 * A minimal Server-Sent Events client over node:http for API tests: collects parsed events and
 * comments, waits for conditions, and can be closed abruptly like a browser tab.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';

export interface SseEvent {
  event: string;
  id: string | undefined;
  data: any;
}

export interface SseConnection {
  status: number;
  headers: IncomingMessage['headers'];
  events: SseEvent[];
  comments: string[];
  /** Resolve once `pred` holds for the collected events (polling), or reject after `ms`. */
  waitFor(pred: (events: SseEvent[]) => boolean, ms?: number): Promise<SseEvent[]>;
  close(): void;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    let req: ClientRequest;
    // eslint-disable-next-line prefer-const
    req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let buf = '';
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => (endResolve = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let idx: number;
        while ((idx = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          let event = 'message';
          let id: string | undefined;
          const data: string[] = [];
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) {
            const text = data.join('\n');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              /* keep raw */
            }
            events.push({ event, id, data: parsed });
          }
        }
      });
      res.on('end', () => endResolve());
      res.on('close', () => endResolve());
      res.on('error', () => endResolve());
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        comments,
        ended,
        close: () => {
          req.destroy();
          res.destroy();
        },
        async waitFor(pred, ms = 5000) {
          const deadline = Date.now() + ms;
          while (!pred(events)) {
            if (Date.now() > deadline) throw new Error(`SSE condition not met; got ${JSON.stringify(events.map((e) => [e.event, e.id]))}`);
            await new Promise((r) => setTimeout(r, 20));
          }
          return events;
        },
      });
    });
    req.on('error', reject);
    req.end();
  });
}
