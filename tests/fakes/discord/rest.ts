/**
 * The fake's REST API: the routes discord.js and the Chorus adapter call, with Discord's error
 * shapes (401, 403 codes 50013 / 50005, 404 codes 1000x, 400 code 50035, 429 with `retry_after`,
 * 500 during an outage).
 */
import { readMultipart, sha256 } from '../telegram/files.js';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeDiscord, RecordedRequest } from './FakeDiscord.js';
import {
  Perm,
  channelPayload,
  isUnicodeEmoji,
  memberPayload,
  messagePayload,
  rolePayload,
  snowflake,
  userPayload,
  webhookPayload,
  type StoredMessage,
} from './model.js';

type Reply = { status: number; body?: unknown; headers?: Record<string, string> };

const MAX_CONTENT = 2000;

export async function handleRest(fake: FakeDiscord, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  // discord.js calls `<api>/v10/...`; accept the path with or without those prefixes.
  const path = url.pathname.replace(/^\/api/, '').replace(/^\/v\d+/, '');
  const method = (req.method ?? 'GET').toUpperCase();
  if (method === 'GET' && path.startsWith('/attachments/')) {
    const bytes = fake.cdn.get(path);
    fake.cdnFetches.push(path);
    const fault = fake.cdnFaults.shift();
    if (fault !== undefined) {
      fake.cdnAnswers.push(fault === 'drop' ? 0 : fault);
      if (fault === 'drop') res.socket?.destroy();
      else res.writeHead(fault, { 'content-type': 'text/plain' }).end(`error ${fault}`);
      return;
    }
    fake.cdnAnswers.push(bytes ? 200 : 404);
    res.writeHead(bytes ? 200 : 404, { 'content-type': 'application/octet-stream' });
    res.end(bytes ?? 'Not Found');
    return;
  }
  const rawBytes = await readBody(req);
  const raw = rawBytes.toString('utf8');
  let body: unknown = undefined;
  if (/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
    // File uploads: the JSON is in `payload_json`, the files in `files[n]`; the server's upload limit a request.
    if (rawBytes.length > fake.uploadLimitBytes) {
      fake.requests.push({ method, path: path + url.search, body: undefined, status: 413 });
      res.writeHead(413, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'Request entity too large', code: 40005 }));
      return;
    }
    const form = await readMultipart(req, rawBytes);
    body = { ...((form.fields.payload_json as Record<string, unknown> | undefined) ?? {}), __files: form.files };
  } else if (raw.length > 0) {
    try {
      body = JSON.parse(raw);
    } catch {
      body = raw;
    }
  }
  const record: RecordedRequest = { method, path: path + url.search, body, status: 0 };
  fake.requests.push(record);
  if (fake.outage) {
    record.status = 500;
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: '500: Internal Server Error', code: 0 }));
    return;
  }

  const fault = fake.takeFault(method, path, body);
  if (fault !== null) {
    if (fault === 'drop' || fault === 'drop-after') {
      // 'drop-after': Discord acted (e.g. created the message); the answer never arrives.
      if (fault === 'drop-after') {
        try {
          record.status = route(fake, method, path, url.searchParams, body, req.headers.authorization).status;
        } catch {
          // the client is not told either way
        }
      }
      res.socket?.destroy();
      res.destroy();
      return;
    }
    record.status = fault.status;
    res.writeHead(fault.status, { 'content-type': 'text/html' });
    res.end(`<html><body><h1>${fault.status}</h1></body></html>`);
    return;
  }

  let reply: Reply;
  const retryAfter = fake.takeRateLimit(method, path);
  const failure = retryAfter === null ? fake.takeFailure(method, path) : null;
  if (failure) {
    reply = err(failure.status, failure.code, failure.message);
  } else if (retryAfter !== null) {
    reply = {
      status: 429,
      body: { message: 'You are being rate limited.', retry_after: retryAfter, global: false },
      headers: {
        'retry-after': String(retryAfter),
        'x-ratelimit-limit': '5',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset-after': String(retryAfter),
        'x-ratelimit-bucket': 'fake-bucket',
        'x-ratelimit-scope': 'user',
      },
    };
  } else {
    try {
      reply = route(fake, method, path, url.searchParams, body, req.headers.authorization);
    } catch (err) {
      reply = { status: 500, body: { message: String(err), code: 0 } };
    }
  }
  record.status = reply.status;
  res.writeHead(reply.status, { ...(reply.body === undefined ? {} : { 'content-type': 'application/json' }), ...reply.headers });
  res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
}


function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const err = (status: number, code: number, message: string, errors?: unknown): Reply => ({
  status,
  body: { message, code, ...(errors ? { errors } : {}) },
});
const ok = (body: unknown): Reply => ({ status: 200, body });

function route(fake: FakeDiscord, method: string, path: string, query: URLSearchParams, body: any, auth: string | undefined): Reply {
  const parts = path.split('/').filter(Boolean);

  // Webhook execution authenticates with the webhook token in the path, not the bot token.
  if (parts[0] === 'webhooks' && parts.length >= 3) return webhookRoute(fake, method, parts[1]!, parts[2]!, parts.slice(3), query, body);

  if (auth !== `Bot ${fake.token}`) return err(401, 0, '401: Unauthorized');

  if (method === 'GET' && path === '/gateway/bot') {
    return ok({
      url: fake.gatewayUrl,
      shards: 1,
      session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
    });
  }
  if (method === 'GET' && path === '/users/@me') return ok(userPayload(fake.bot));
  // The bot's application (a client without a gateway session learns its id here).
  if (method === 'GET' && path === '/applications/@me') return ok({ id: fake.applicationId, name: fake.bot.username, bot_public: false, bot_require_code_grant: false, flags: 0 });

  if (parts[0] === 'channels' && parts[1]) return channelRoute(fake, method, parts[1], parts.slice(2), body, query);

  if (parts[0] === 'guilds' && parts[1] === fake.guildId) {
    if (method === 'GET' && parts.length === 2) return ok({ id: fake.guildId, name: fake.guildName, owner_id: fake.owner.id, roles: fake.roles.map(rolePayload) });
    if (method === 'GET' && parts[2] === 'roles') return ok(fake.roles.map(rolePayload));
    if (method === 'GET' && parts[2] === 'members' && parts[3]) {
      const user = fake.users.get(parts[3]);
      if (!user) return err(404, 10007, 'Unknown Member');
      return ok(memberPayload(user, fake.members.get(user.id) ?? []));
    }
  }
  return err(404, 0, '404: Not Found');
}

function channelRoute(fake: FakeDiscord, method: string, channelId: string, rest: string[], body: any, query: URLSearchParams): Reply {
  const channel = fake.channel(channelId);
  if (!channel) return err(404, 10003, 'Unknown Channel');
  const perms = fake.permissionsOf(fake.bot.id, channelId);
  const sub = rest.join('/');

  if (method === 'GET' && sub === '') return ok(channelPayload(channel, fake.guildId, fake.channels.indexOf(channel)));

  if (sub === 'webhooks') {
    if (!(perms & Perm.ManageWebhooks)) return err(403, 50013, 'Missing Permissions');
    if (method === 'GET') {
      return ok(fake.webhooks.filter((w) => w.channel_id === channelId).map((w) => webhookPayload(w, fake.guildId, fake.bot)));
    }
    if (method === 'POST') {
      const name = String(body?.name ?? '');
      const bad = usernameProblem(name);
      if (bad) return err(400, 50035, 'Invalid Form Body', { name: { _errors: [{ code: 'BASE_TYPE_BAD_NAME', message: bad }] } });
      const hook = { id: snowflake(), token: randomBytes(24).toString('base64url'), channel_id: channelId, name, application_id: fake.applicationId };
      fake.webhooks.push(hook);
      return ok(webhookPayload(hook, fake.guildId, fake.bot));
    }
  }

  if (method === 'POST' && sub === 'typing') {
    fake.typing.push({ channelId, userId: fake.bot.id });
    return { status: 204 };
  }

  if (method === 'POST' && sub === 'messages') {
    if (!(perms & Perm.SendMessages)) return err(403, 50013, 'Missing Permissions');
    const problem = contentProblem(body?.content);
    if (problem) return problem;
    const msg: StoredMessage = {
      id: snowflake(),
      channel_id: channelId,
      author: fake.bot,
      content: body.content,
      webhook_id: null,
      application_id: null,
      avatar_url: null,
      reply_to: body?.message_reference?.message_id ?? null,
      ts: Date.now(),
      allowed_mentions: body?.allowed_mentions,
    };
    fake.recordPost(msg);
    return ok(messagePayload(msg, fake.guildId, undefined));
  }

  // Channel history, newest first (as Discord returns it); `after` and `limit` as on Discord.
  if (method === 'GET' && sub === 'messages') {
    if (!(perms & Perm.ViewChannel) || !(perms & Perm.ReadMessageHistory)) return err(403, 50001, 'Missing Access');
    const after = query.get('after');
    const limit = Math.min(100, Math.max(1, Number(query.get('limit') ?? 50) || 50));
    const list = fake.messages.filter((m) => m.channel_id === channelId && (!after || BigInt(m.id) > BigInt(after)));
    const page = after ? list.slice(0, limit) : list.slice(-limit);
    return ok(page.reverse().map((m) => messagePayload(m, fake.guildId, undefined)));
  }

  // The bot's own reaction: PUT adds it, DELETE takes it back (both 204, like Discord).
  if ((method === 'PUT' || method === 'DELETE') && rest[0] === 'messages' && rest[1] && rest[2] === 'reactions' && rest[3] && rest[4] === '@me' && rest.length === 5) {
    return ownReaction(fake, method, channelId, rest[1], rest[3], perms);
  }

  if (method === 'GET' && rest[0] === 'messages' && rest[1]) {
    const msg = fake.messages.find((m) => m.id === rest[1] && m.channel_id === channelId);
    return msg ? ok(messagePayload(msg, fake.guildId, undefined)) : err(404, 10008, 'Unknown Message');
  }

  // The bot edits only its own messages; it deletes its own, and others' with Manage Messages.
  if ((method === 'PATCH' || method === 'DELETE') && rest[0] === 'messages' && rest[1] && rest.length === 2) {
    const msg = fake.messages.find((m) => m.id === rest[1] && m.channel_id === channelId);
    if (!msg) return err(404, 10008, 'Unknown Message');
    const own = msg.author.id === fake.bot.id && !msg.webhook_id;
    if (method === 'PATCH') {
      if (!own) return err(403, 50005, 'Cannot edit a message authored by another user');
      return editMessage(fake, msg, body);
    }
    if (!own && !(perms & Perm.ManageMessages)) return err(403, 50013, 'Missing Permissions');
    fake.humanDeletes(channelId, msg.id);
    return { status: 204 };
  }
  return err(404, 0, '404: Not Found');
}

/** Change a message's text (`content` only; a message keeps its files), as PATCH answers it. */
function editMessage(fake: FakeDiscord, msg: StoredMessage, body: any): Reply {
  if (body?.content !== undefined) {
    const problem = (msg.attachments?.length ?? 0) > 0 && body.content === '' ? null : contentProblem(body.content);
    if (problem) return problem;
  }
  msg.allowed_mentions = body?.allowed_mentions;
  fake.editStored(msg, body?.content ?? msg.content);
  return ok(messagePayload(msg, fake.guildId, undefined));
}

function webhookRoute(fake: FakeDiscord, method: string, id: string, token: string, rest: string[], query: URLSearchParams, body: any): Reply {
  const hook = fake.webhooks.find((w) => w.id === id);
  if (!hook || hook.token !== token) return err(404, 10015, 'Unknown Webhook');
  // A webhook reads, edits and deletes only its own messages; any other id is Unknown Message.
  if (rest[0] === 'messages' && rest[1] && rest.length === 2) {
    const msg = fake.messages.find((m) => m.id === rest[1] && m.webhook_id === hook.id);
    if (!msg) return err(404, 10008, 'Unknown Message');
    if (method === 'GET') return ok(messagePayload(msg, fake.guildId, undefined));
    if (method === 'PATCH') return editMessage(fake, msg, body);
    if (method === 'DELETE') {
      fake.humanDeletes(msg.channel_id, msg.id);
      return { status: 204 };
    }
    return err(405, 0, '405: Method Not Allowed');
  }
  if (rest.length > 0) return err(404, 0, '404: Not Found');
  if (method === 'GET') return ok(webhookPayload(hook, fake.guildId, null));
  if (method !== 'POST') return err(405, 0, '405: Method Not Allowed');

  const uploads = (body?.__files ?? []) as Array<{ field: string; name: string; bytes: Buffer }>;
  const problem = uploads.length > 0 && !body?.content ? null : contentProblem(body?.content);
  if (problem) return problem;
  const username = body?.username === undefined ? hook.name : String(body.username);
  const bad = usernameProblem(username);
  if (bad) return err(400, 50035, 'Invalid Form Body', { username: { _errors: [{ code: 'USERNAME_INVALID', message: bad }] } });

  const msg: StoredMessage = {
    id: snowflake(),
    channel_id: hook.channel_id,
    author: { id: hook.id, username, global_name: null, bot: true },
    content: body.content ?? '',
    webhook_id: hook.id,
    application_id: hook.application_id,
    avatar_url: typeof body?.avatar_url === 'string' ? body.avatar_url : null,
    reply_to: null,
    ts: Date.now(),
    allowed_mentions: body?.allowed_mentions,
    ...(uploads.length > 0
      ? { attachments: uploads.map((f) => ({ id: snowflake(), filename: f.name, size: f.bytes.length, url: `https://cdn.discordapp.test/${f.name}`, sha256: sha256(f.bytes) })) }
      : {}),
  };
  fake.recordPost(msg);
  return query.get('wait') === 'true' ? ok(messagePayload(msg, fake.guildId, undefined)) : { status: 204 };
}

/**
 * `emoji` as it is in the path: the URL-encoded character, or `name:id` for a custom emoji (the fake
 * server has none, so those are unknown). Discord asks for Read Message History to react at all and
 * for Add Reactions to be the first with an emoji on a message; taking one's own back needs neither.
 */
function ownReaction(fake: FakeDiscord, method: string, channelId: string, messageId: string, encoded: string, perms: bigint): Reply {
  if (!fake.messages.some((m) => m.id === messageId && m.channel_id === channelId)) return err(404, 10008, 'Unknown Message');
  let name: string;
  try {
    name = decodeURIComponent(encoded);
  } catch {
    return err(400, 10014, 'Unknown Emoji');
  }
  if (!isUnicodeEmoji(name)) return err(400, 10014, 'Unknown Emoji');
  const emoji = { name, id: null };
  if (method === 'PUT') {
    if (!(perms & Perm.ViewChannel) || !(perms & Perm.ReadMessageHistory)) return err(403, 50013, 'Missing Permissions');
    const first = !fake.reactions.some((r) => r.messageId === messageId && r.emoji.id === null && r.emoji.name === name);
    if (first && !(perms & Perm.AddReactions)) return err(403, 50013, 'Missing Permissions');
  }
  fake.setReaction(channelId, messageId, fake.bot, emoji, method === 'PUT');
  return { status: 204 };
}

/** Discord's 2,000-character rule (and no empty messages), answered the way Discord does. */
function contentProblem(content: unknown): Reply | null {
  if (typeof content !== 'string' || content.length === 0) return err(400, 50006, 'Cannot send an empty message');
  if (content.length > MAX_CONTENT) {
    return err(400, 50035, 'Invalid Form Body', {
      content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${MAX_CONTENT} or fewer in length.` }] },
    });
  }
  return null;
}

/** Webhook names: 1–80 characters, no "discord" or "clyde". */
function usernameProblem(name: string): string | null {
  if (name.length < 1 || name.length > 80) return 'Must be between 1 and 80 in length.';
  if (/discord|clyde/i.test(name)) return 'Username cannot contain "discord" or "clyde".';
  return null;
}
