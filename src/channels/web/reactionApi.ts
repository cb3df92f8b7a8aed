/**
 * Reacting to a message from the page: `POST` adds one, `DELETE` takes it back, both with
 * `{ emoji, author_name }`, both answering 200 `{ message }` (the entry with its `reactions`).
 * Who reacted is the browser (its `X-Chorus-Client` tag; a client without one, its address, as a
 * digest): one reaction per emoji per browser, whatever name is typed. The rate limit
 * (`limits.reactions_per_minute`) counts per client address, like messages. Refusals are 4xx JSON
 * errors from the core (400 `invalid_emoji`, 404, 409 `not_reactable`, 429 `rate_limited` with
 * `Retry-After`); a write that fails is 503 and nothing is kept (server.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { GatewayApi } from '../../core/ports.js';
import { addressTag, clientAddressKey, tagOf } from './client.js';
import { writableGroup, type EditApiDeps } from './editApi.js';
import { field, readJsonObject, sendJson } from './http.js';
import type { Router } from './router.js';

export interface ReactionApiDeps {
  gateway(): GatewayApi;
  group: EditApiDeps['group'];
  /** The name the person reacts under (`author_name`, checked as for messages). */
  name(body: Record<string, unknown>): string;
}

export function registerReactionRoutes(router: Router, deps: ReactionApiDeps): void {
  for (const [method, on] of [['POST', true], ['DELETE', false]] as const) {
    router.add(method, '/api/groups/:id/messages/:entryId/reactions', async ({ req, res, params }) => {
      const g = writableGroup(deps.group, params.id!);
      const body = await readJsonObject(req);
      const emoji = field.string(body, 'emoji', { min: 1, max: 64 })!;
      const name = deps.name(body);
      const address = `addr:${clientAddressKey(req.socket.remoteAddress)}`;
      const message = await deps.gateway().react(g.id, params.entryId!, { emoji, by: { key: whoReacts(req), name }, on, rateKey: address });
      sendJson(res, 200, { message });
    });
  }
}

/** The browser's tag, or for a client without a key a digest of its address. */
function whoReacts(req: IncomingMessage): string {
  return tagOf(req.headers['x-chorus-client']) ?? addressTag(clientAddressKey(req.socket.remoteAddress));
}
