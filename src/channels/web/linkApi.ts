/**
 * Linking chats into one room from the page ("Link a chat" in the group's panel):
 * - `POST /api/groups/:id/link-code` → 201 `{code, until}`: a one-time code to type as
 *   `/group link <code>` in a Telegram group or Discord channel, which then joins this room;
 * - `POST /api/links` `{code}` → 200 `{group}`: the web joins the room a code typed elsewhere
 *   was made for, so the page may write to it;
 * - `DELETE /api/groups/:id/links/:channel/:chatId` → 200 `{group}`: a linked chat leaves.
 * Holding the web token counts as being an admin of the room, as for tool decisions. The optional
 * `author_name` says who did it in the room's notices.
 */
import type { IncomingMessage } from 'node:http';
import type { GatewayApi } from '../../core/ports.js';
import type { GroupDetail, GroupView } from '../../core/readModels.js';
import type { ChannelKind } from '../../core/types.js';
import { HttpError, field, readJsonObject, sendJson } from './http.js';
import { authorName } from './messageApi.js';
import type { Router } from './router.js';

export interface LinkApiDeps {
  gateway(): GatewayApi;
  /** The group or a 404. */
  group(id: string): GroupDetail;
}

const CHANNELS: readonly ChannelKind[] = ['telegram', 'discord', 'web'];
/** What a code may look like: letters, digits and dashes; anything else is a typo, told at once. */
const CODE = /^[A-Za-z0-9][A-Za-z0-9-]{2,31}$/;

/** The code typed or pasted: trimmed, and the command around it dropped ("/group link ABCD-1234"). */
export function cleanCode(raw: string): string | undefined {
  const code = raw.trim().replace(/^\/group(?:@\S+)?\s+link\s+/i, '').trim();
  return CODE.test(code) ? code : undefined;
}

export function registerLinkRoutes(router: Router, deps: LinkApiDeps): void {
  const by = async (req: IncomingMessage): Promise<string> => {
    // The body is optional: `{ "author_name": "Maya" }` names who did it.
    const body = req.headers['content-type'] ? await readJsonObject(req) : (req.resume(), {});
    return authorName(body, deps.gateway().listAgents(), 'someone');
  };
  const detail = (view: GroupView) => deps.gateway().getGroup(view.id) ?? view;

  router.add('POST', '/api/groups/:id/link-code', async ({ req, res, params }) => {
    const g = deps.group(params.id!);
    if (g.archived) throw new HttpError(409, 'archived', `group "${g.id}" is dissolved`);
    const who = await by(req);
    const { code, until } = await deps.gateway().linkCode(g.id, who);
    sendJson(res, 201, { code, until });
  });

  router.add('POST', '/api/links', async ({ req, res }) => {
    const body = await readJsonObject(req);
    const raw = field.string(body, 'code', { min: 1, max: 200 })!;
    const code = cleanCode(raw);
    if (code === undefined) {
      throw new HttpError(400, 'invalid_code', 'that is not a link code: it has letters, digits and dashes, like the one /group link shows');
    }
    const who = authorName(body, deps.gateway().listAgents(), 'someone');
    sendJson(res, 200, { group: detail(await deps.gateway().linkWeb(code, who)) });
  });

  router.add('DELETE', '/api/groups/:id/links/:channel/:chatId', async ({ req, res, params }) => {
    const g = deps.group(params.id!);
    const channel = params.channel as ChannelKind;
    if (!CHANNELS.includes(channel)) throw new HttpError(400, 'invalid_channel', `"${params.channel}" is not a channel (telegram, discord or web)`);
    const who = await by(req);
    sendJson(res, 200, { group: detail(await deps.gateway().unlinkChat(g.id, { channel, chatId: params.chatId! }, who)) });
  });
}
