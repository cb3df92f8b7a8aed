/**
 * The JSON API of the web feed. Handlers validate their input, call the gateway,
 * and answer JSON; every mistake becomes a 4xx `{error: {code, message}}` (see server.ts).
 */
import { randomUUID } from 'node:crypto';
import { COMMAND_LIST } from '../../core/commands/commands.js';
import type { ChannelHost, GatewayApi } from '../../core/ports.js';
import type { GroupDetail } from '../../core/readModels.js';
import type { AgentDef, TranscriptEntry } from '../../core/types.js';
import { clientAddressKey, tagOf } from './client.js';
import { HttpError, field, intParam, readJsonObject, sendJson } from './http.js';
import type { Router } from './router.js';
import type { SseHub } from './sse.js';
import { registerSearchRoutes, sendAround } from './searchApi.js';
import { registerEditRoutes } from './editApi.js';
import { registerReactionRoutes } from './reactionApi.js';
import { authorName, findEntry, postMessage } from './messageApi.js';
import { registerFileRoutes } from './fileApi.js';
import { registerLinkRoutes } from './linkApi.js';
import { requireWritable } from './writable.js';

export interface ApiDeps {
  host(): ChannelHost;
  hub(): SseHub;
  /** Group handles from the config (`aliases:`), for autocomplete. */
  aliases: Record<string, string[]>;
  maxMessageLength: number;
  /** `limits.max_message_chars`, the limit the router holds human messages to. */
  maxMessageChars?: number | undefined;
}

/** The schema's default for `limits.max_message_chars`, for channels started without a config. */
export const DEFAULT_MAX_MESSAGE_CHARS = 8000;

/** An agent as the page sees it: identity only, never tokens or the persona. */
export interface PublicAgent {
  id: string;
  name: string;
  avatar: string | null;
  color: string | null;
  aliases: string[];
  /** Every handle that addresses the agent, without `@`, lower case. */
  handles: string[];
  model: string | null;
}

export function publicAgent(a: AgentDef): PublicAgent {
  const handles = [a.id, a.name.replace(/\s+/g, ''), ...a.aliases.map((x) => x.replace(/^@/, ''))].map((h) => h.toLowerCase());
  return {
    id: a.id,
    name: a.name,
    avatar: a.avatar,
    color: a.color,
    aliases: a.aliases.map((x) => x.replace(/^@/, '')),
    handles: [...new Set(handles)],
    model: a.model,
  };
}

const SEQ_MAX = Number.MAX_SAFE_INTEGER;

export function registerApiRoutes(router: Router, deps: ApiDeps): void {
  const gw = (): GatewayApi => deps.host().gateway;
  const group = (id: string): GroupDetail => {
    const g = gw().getGroup(id);
    if (!g) throw new HttpError(404, 'unknown_group', `no group "${id}"`);
    return g;
  };

  router.add('GET', '/api/info', ({ req, res }) => {
    sendJson(res, 200, {
      name: 'chorus',
      scriptedProvider: gw().scriptedProvider,
      maxMessageLength: deps.maxMessageLength,
      // The tag this browser's messages carry (null without an X-Chorus-Client key): the page
      // draws entries with it as its own.
      client: tagOf(req.headers['x-chorus-client']) ?? null,
    });
  });

  router.add('GET', '/api/agents', ({ res }) => {
    sendJson(res, 200, {
      agents: gw().listAgents().map(publicAgent),
      aliases: Object.fromEntries(Object.entries(deps.aliases).map(([k, v]) => [k.toLowerCase(), v])),
      builtinAliases: ['all', 'everyone'],
      scriptedProvider: gw().scriptedProvider,
      // The composer counts against the real limit instead of finding out after Send.
      // Files too: the page refuses a file over the limit, or one too many, before uploading it.
      limits: {
        max_message_chars: Math.min(deps.maxMessageChars ?? DEFAULT_MAX_MESSAGE_CHARS, deps.maxMessageLength),
        max_file_bytes: deps.host().files.maxBytes,
        max_files_per_message: deps.host().files.maxPerMessage,
      },
      // What `/` completes to in the composer: the commands the router carries out.
      commands: COMMAND_LIST,
    });
  });

  router.add('GET', '/api/groups', ({ res }) => {
    sendJson(res, 200, { groups: gw().listGroups() });
  });

  router.add('POST', '/api/groups', async ({ req, res }) => {
    const body = await readJsonObject(req);
    const title = field.string(body, 'title', { min: 1, max: 100 })!.trim();
    const participants = field.stringArray(body, 'participants');
    if (participants.length === 0) throw new HttpError(400, 'invalid_field', '"participants" needs at least one agent');
    const id = field.string(body, 'id', { min: 1, max: 64, optional: true });
    if (id !== undefined && !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(id)) {
      throw new HttpError(400, 'invalid_field', '"id" must be a slug (a-z 0-9 _ -, starting with a letter or digit)');
    }
    const created = await gw().createGroup({ title, participants, id });
    sendJson(res, 201, { group: gw().getGroup(created.id) ?? created });
  });

  router.add('GET', '/api/groups/:id', ({ res, params }) => {
    sendJson(res, 200, { group: group(params.id!) });
  });

  router.add('DELETE', '/api/groups/:id', async ({ res, params }) => {
    group(params.id!);
    await gw().dissolveGroup(params.id!);
    sendJson(res, 200, { status: 'dissolved', groupId: params.id });
  });

  router.add('PATCH', '/api/groups/:id/config', async ({ req, res, params }) => {
    group(params.id!);
    const body = await readJsonObject(req);
    if (Object.keys(body).length === 0) throw new HttpError(400, 'invalid_field', 'send at least one config key to change');
    const config = await gw().updateConfig(params.id!, body);
    sendJson(res, 200, { config });
  });

  router.add('POST', '/api/groups/:id/members', async ({ req, res, params }) => {
    group(params.id!);
    const body = await readJsonObject(req);
    const agent = field.string(body, 'agent', { min: 1, max: 64 })!;
    const view = await gw().addMember(params.id!, agent);
    sendJson(res, 200, { group: gw().getGroup(view.id) ?? view });
  });

  router.add('DELETE', '/api/groups/:id/members/:agent', async ({ res, params }) => {
    group(params.id!);
    const view = await gw().removeMember(params.id!, params.agent!);
    sendJson(res, 200, { group: gw().getGroup(view.id) ?? view });
  });

  router.add('GET', '/api/groups/:id/messages', async ({ res, params, url }) => {
    const before = intParam(url.searchParams, 'before', { min: 0, max: SEQ_MAX });
    const limit = intParam(url.searchParams, 'limit', { min: 1, max: 500 }) ?? 50;
    // The page around any entry (a search hit, a reply's original far back): see searchApi.ts.
    const around = intParam(url.searchParams, 'around', { min: 1, max: SEQ_MAX });
    if (around !== undefined) return sendAround(res, gw(), params.id!, around, limit, before);
    // Archived groups can still be read: their history is kept.
    const page = await gw().messagePage(params.id!, { before, limit });
    sendJson(res, 200, { messages: page.entries, hasMore: page.hasMore });
  });

  router.add('POST', '/api/groups/:id/messages', async (ctx) => postMessage(ctx, deps, group(ctx.params.id!)));
  registerEditRoutes(router, { gateway: gw, group, maxChars: () => Math.min(deps.maxMessageChars ?? DEFAULT_MAX_MESSAGE_CHARS, deps.maxMessageLength) });
  registerReactionRoutes(router, { gateway: gw, group, name: (body) => authorName(body, gw().listAgents()) });

  // Another answer from the agent of one reply (its latest); the old reply stays in the transcript.
  router.add('POST', '/api/groups/:id/messages/:entryId/regenerate', async ({ res, params }) => {
    const g = requireWritable(group(params.id!));
    const host = deps.host();
    const result = await host.gateway.regenerate(g.id, params.entryId!);
    if (result.status === 'queued') {
      sendJson(res, 202, { status: 'queued', groupId: result.groupId, roundId: result.roundId, agentId: result.agentId, regenerates: params.entryId });
      return;
    }
    if (result.code === 'unknown_entry') throw new HttpError(404, 'unknown_entry', result.reason);
    throw new HttpError(409, result.code, result.reason);
  });

  // Retry on a failure notice ("⚠ Writer could not reply"): that agent is asked again about the
  // question its failed turn was answering, the way "Ask <agent> again" asks (an `/ask` about one
  // message, never stored on the web). The question is the one another reply of the same round
  // answered; failing that, the router takes the last person's message before the notice.
  router.add('POST', '/api/groups/:id/messages/:entryId/retry', async ({ req, res, params }) => {
    const g = requireWritable(group(params.id!));
    const host = deps.host();
    const body = req.headers['content-type'] ? await readJsonObject(req) : (req.resume(), {});
    const name = authorName(body, host.gateway.listAgents(), 'someone');
    const notice = await findEntry(host.gateway, g.id, params.entryId!);
    if (!notice) throw new HttpError(404, 'unknown_entry', `no message "${params.entryId}" in this group`);
    const agentId = notice.kind === 'system' && notice.decision?.type === 'error' ? notice.decision.agentId : undefined;
    if (!agentId) throw new HttpError(400, 'not_failure', `message "${notice.id}" is not a notice that an agent could not reply`);
    if (!g.participants.includes(agentId)) throw new HttpError(409, 'not_member', `${agentId} is no longer in this group`);
    const about = (await questionOfRound(host.gateway, g.id, notice)) ?? notice.id;
    const result = await host.handle({ kind: 'message', message: {
      channel: 'web',
      chatId: g.webChatId,
      messageId: `retry:${notice.id}:${randomUUID()}`,
      author: { id: name, name },
      rateKey: `addr:${clientAddressKey(req.socket.remoteAddress)}`,
      text: `/ask ${agentId}`,
      ts: Date.now(),
      replyToEntryId: about,
      clientTag: tagOf(req.headers['x-chorus-client']),
      chatTitle: g.title,
      ephemeral: true,
    } });
    if (result.status === 'no_group') throw new HttpError(404, 'unknown_group', result.reason);
    if (result.status === 'rejected') {
      if (result.code === 'shutting_down' || result.code === 'unavailable') throw new HttpError(503, 'unavailable', result.reason, { 'retry-after': '5' });
      throw new HttpError(result.code === 'rate_limited' ? 429 : 422, result.code, result.reason);
    }
    // The command was refused (its answer says why); a note from another instance is not a refusal.
    if (result.status === 'command' && result.ephemeral) throw new HttpError(409, 'refused', result.ephemeral.text.replace(/^⚠\s*/, ''));
    sendJson(res, 202, { status: 'queued', groupId: g.id, agentId, about: about === notice.id ? null : about, retries: notice.id });
  });

  // What the model was shown for one agent reply, rebuilt from the log (see core/groups/promptContext).
  router.add('GET', '/api/groups/:id/messages/:entryId/context', async ({ res, params }) => {
    group(params.id!);
    const gateway = gw();
    sendJson(res, 200, await gateway.promptContext(params.id!, params.entryId!));
  });

  // `/stop` for the page: ends the running round and the waiting ones, cancels replies in progress.
  router.add('POST', '/api/groups/:id/stop', async ({ req, res, params }) => {
    const g = requireWritable(group(params.id!));
    const host = deps.host();
    // The body is optional: `{ "author_name": "Maya" }` names who stopped it in the notice.
    const body = req.headers['content-type'] ? await readJsonObject(req) : (req.resume(), {});
    const result = await host.gateway.stopGroup(g.id, authorName(body, host.gateway.listAgents(), 'someone'));
    sendJson(res, 200, result);
  });

  // Approve or deny an agent's tool call that waits for a person (`{ "decision": "approve" | "deny",
  // "author_name": "Maya", "digest": "0123456789" }`; the digest, the request's, refuses the
  // decision when the call is not the one shown). Holding the web token counts as being an admin.
  router.add('POST', '/api/groups/:id/tools/:callId', async ({ req, res, params }) => {
    const g = requireWritable(group(params.id!));
    const host = deps.host();
    const body = await readJsonObject(req);
    const decision = field.string(body, 'decision', { max: 16 });
    if (decision !== 'approve' && decision !== 'deny') throw new HttpError(400, 'invalid_field', 'decision must be "approve" or "deny"');
    const digest = field.string(body, 'digest', { max: 64, optional: true });
    const by = authorName(body, host.gateway.listAgents(), 'someone');
    sendJson(res, 200, await host.gateway.decideTool(g.id, params.callId!, decision === 'approve', by, digest));
  });

  router.add('GET', '/api/groups/:id/events', ({ req, res, params, url }) => {
    group(params.id!);
    const header = req.headers['last-event-id'];
    let resume: number | undefined;
    if (typeof header === 'string' && header.trim() !== '') {
      if (!/^\d{1,15}$/.test(header.trim())) throw new HttpError(400, 'invalid_header', 'Last-Event-ID must be a whole number');
      resume = Number(header.trim());
    } else {
      resume = intParam(url.searchParams, 'after', { min: 0, max: SEQ_MAX });
    }
    // What a page asks for: the replies in flight first, and deltas batched (see sse.ts).
    deps.hub().open(res, params.id!, resume, { inflight: url.searchParams.get('inflight') === '1', batch: url.searchParams.get('batch') === '1' });
  });

  router.add('GET', '/api/events', ({ res, url }) => {
    // `?inflight=1`: begin with who is typing in every group (the page's sidebar asks).
    deps.hub().open(res, null, undefined, { inflight: url.searchParams.get('inflight') === '1' });
  });

  registerSearchRoutes(router, gw);
  registerLinkRoutes(router, { gateway: gw, group });
  registerFileRoutes(router, () => deps.host().files, () => deps.host().gateway);
}

/** The message another reply of `notice`'s round answered (the newest such), if any. */
async function questionOfRound(gateway: GatewayApi, groupId: string, notice: TranscriptEntry): Promise<string | undefined> {
  if (!notice.roundId) return undefined;
  // A round's replies sit close together: the page up to a little after the notice is enough.
  const near = await gateway.messages(groupId, { before: notice.seq + 50, limit: 250 });
  return near.filter((e) => e.roundId === notice.roundId && e.kind === 'agent' && e.meta?.answers).at(-1)?.meta?.answers;
}
