/**
 * Editing and deleting one's own message from the page. Only the browser that sent a message may
 * change it: its `X-Chorus-Client` key, turned into the one-way tag recorded on the message
 * (client.ts), must give the same tag. Refusals are 4xx JSON errors from the core (404 unknown
 * message, 403 another browser's, 409 not a person's message or already deleted, 400 empty or too
 * long); a write that fails is 503 and nothing is kept (server.ts).
 */
import type { GatewayApi } from '../../core/ports.js';
import { tagOf } from './client.js';
import { HttpError, field, readJsonObject, sendJson } from './http.js';
import type { Router } from './router.js';
import { requireWritable, type WritableFacts } from './writable.js';

export interface EditApiDeps {
  gateway(): GatewayApi;
  /** The group or a 404; throws for an unknown one. */
  group(id: string): WritableFacts;
  /** The most characters a message may have (`limits.max_message_chars`). */
  maxChars(): number;
}

/** A group whose messages the page may change (writable.ts: 409 dissolved, 403 one the web only follows). */
export function writableGroup(group: EditApiDeps['group'], id: string): { id: string } {
  return requireWritable(group(id));
}

export function registerEditRoutes(router: Router, deps: EditApiDeps): void {
  const writable = (id: string) => writableGroup(deps.group, id);

  router.add('PATCH', '/api/groups/:id/messages/:entryId', async ({ req, res, params }) => {
    const g = writable(params.id!);
    const gw = deps.gateway();
    if (!gw.editMessage) throw new HttpError(501, 'not_supported', 'this server cannot edit messages');
    const clientTag = tagOf(req.headers['x-chorus-client']);
    const body = await readJsonObject(req);
    const text = field.string(body, 'text', { max: 1_000_000 })!;
    sendJson(res, 200, { message: await gw.editMessage(g.id, params.entryId!, { clientTag, text, maxChars: deps.maxChars() }) });
  });

  router.add('DELETE', '/api/groups/:id/messages/:entryId', async ({ req, res, params }) => {
    const g = writable(params.id!);
    const gw = deps.gateway();
    if (!gw.deleteMessage) throw new HttpError(501, 'not_supported', 'this server cannot delete messages');
    const clientTag = tagOf(req.headers['x-chorus-client']);
    req.resume();
    sendJson(res, 200, { message: await gw.deleteMessage(g.id, params.entryId!, { clientTag }) });
  });
}
