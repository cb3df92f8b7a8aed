/**
 * Posting a message from the page: `POST /api/groups/:id/messages` with a JSON body, or a
 * `multipart/form-data` form that also carries files (upload.ts). Both take the same fields and
 * give the same answers; a form's files are checked and kept durably before the message is
 * handed over, so an acknowledged message never names a file that is not there. A store that
 * cannot keep them answers 503 and nothing is acknowledged (server.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Attachment, Files, KeptFile, SpooledFile } from '../../core/fileTypes.js';
import type { ChannelHost, GatewayApi } from '../../core/ports.js';
import type { GroupDetail } from '../../core/readModels.js';
import { MAX_DISPLAY_NAME, cleanDisplayName, impersonates } from '../../core/text/displayName.js';
import type { AgentDef, TranscriptEntry } from '../../core/types.js';
import { clientAddressKey, tagOf } from './client.js';
import { HttpError, field, readJsonObject, sendJson } from './http.js';
import type { RequestContext } from './router.js';
import { fileTooLarge, isMultipart, readUpload, type Upload } from './upload.js';
import { discardSpooled } from './spool.js';
import { requireWritable } from './writable.js';

const CLIENT_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

export interface MessageDeps {
  host(): ChannelHost;
  /** The longest text one message may have. */
  maxMessageLength: number;
}

/**
 * The name a web message is posted under: cleaned (no bidi or invisible characters, one line) and
 * at most 64 characters. A name that reads as an agent's (same name, id or alias up to case,
 * compatibility forms, look-alike letters and decorations such as "(bot)") is refused with a
 * 400 that says why, and the message is not recorded; the page keeps the text for another try.
 */
export function authorName(body: Record<string, unknown>, agents: readonly AgentDef[], fallback = 'Guest'): string {
  // The raw field may carry invisible padding; the limit that matters is on what is shown.
  // Without a name the fallback is one everyone can read: "You" would name every reader.
  const raw = field.string(body, 'author_name', { max: 256, optional: true });
  if (raw === undefined) return fallback;
  const cleaned = cleanDisplayName(raw, Number.MAX_SAFE_INTEGER);
  if (Array.from(cleaned).length > MAX_DISPLAY_NAME) {
    throw new HttpError(400, 'invalid_field', `"author_name" may have at most ${MAX_DISPLAY_NAME} characters`);
  }
  const name = cleaned || fallback;
  const agent = impersonates(name, agents);
  if (agent) {
    throw new HttpError(
      400,
      'reserved_name',
      `"${name}" reads as the agent ${agent.name} (@${agent.id}); people cannot post under an agent's name, choose another name`,
    );
  }
  return name;
}

/** The body as fields, and the files of a form (none for JSON). 415 for any other content type. */
async function readMessage(req: IncomingMessage, files: Files): Promise<{ body: Record<string, unknown>; upload: Upload['files'] }> {
  if (isMultipart(req)) {
    // A gateway that takes no files has no spool: its forms are refused at their first file.
    const spoolDir = files.maxPerMessage > 0 ? await spoolOf(req, files) : '';
    const form = await readUpload(req, { maxFileBytes: files.maxBytes, maxFiles: files.maxPerMessage, spoolDir });
    return { body: form.fields, upload: form.files };
  }
  const ct = req.headers['content-type'];
  if (typeof ct === 'string' && ct.split(';')[0]!.trim().toLowerCase() !== 'application/json') {
    req.resume();
    throw new HttpError(415, 'unsupported_media_type', 'send the message as application/json, or as multipart/form-data with files');
  }
  return { body: await readJsonObject(req), upload: [] };
}

async function spoolOf(req: IncomingMessage, files: Files): Promise<string> {
  try {
    return (await files.spool()) ?? '';
  } catch (err) {
    req.resume();
    const why = `cannot take files for now (${(err as Error).message})`;
    throw new HttpError(503, 'unavailable', why, { connection: 'close', 'retry-after': '5' });
  }
}

/** Why a file was not kept, as the answer to the whole message. */
function refusal(name: string, kept: Exclude<KeptFile, { ok: true }>, files: Files): HttpError {
  switch (kept.code) {
    case 'too_large':
      return fileTooLarge(name, files.maxBytes);
    case 'too_many_pixels':
      return new HttpError(413, 'image_too_large', kept.reason, {}, { file: name, limit: files.maxImagePixels });
    case 'unsupported_type':
      return new HttpError(415, 'unsupported_type', kept.reason, {}, { file: name });
    case 'empty':
      return new HttpError(400, 'empty_file', kept.reason, {}, { file: name });
  }
}

export async function postMessage(ctx: RequestContext, deps: MessageDeps, g: GroupDetail): Promise<void> {
  // A room the web has joined takes messages here too: handed over as the web chat's, the core
  // finds the group through that chat.
  const { webChatId } = requireWritable(g);
  const { body, upload } = await readMessage(ctx.req, deps.host().files);
  try {
    await postRead(ctx, deps, g, webChatId, body, upload);
  } finally {
    // Kept files have left the spool; a message refused before its files were kept leaves nothing there.
    await discardSpooled(upload);
  }
}

async function postRead(
  { req, res }: RequestContext,
  deps: MessageDeps,
  g: GroupDetail,
  webChatId: string,
  body: Record<string, unknown>,
  upload: SpooledFile[],
): Promise<void> {
  const host = deps.host();
  // With files the words are optional: a picture may say it all.
  const text = field.string(body, 'text', { min: upload.length > 0 ? 0 : 1, optional: upload.length > 0 }) ?? '';
  if (text.length > deps.maxMessageLength) {
    throw new HttpError(400, 'invalid_field', `"text" may have at most ${deps.maxMessageLength} characters`);
  }
  const name = authorName(body, host.gateway.listAgents());
  const clientId = field.string(body, 'client_id', { min: 1, max: 100, optional: true });
  if (clientId !== undefined && !CLIENT_ID.test(clientId)) {
    throw new HttpError(400, 'invalid_field', '"client_id" may only use letters, digits and _ . : -');
  }
  const replyTo = field.string(body, 'reply_to', { min: 1, max: 200, optional: true });
  let replyToAgentId: string | undefined;
  if (replyTo !== undefined) {
    const entry = await findEntry(host.gateway, g.id, replyTo);
    if (!entry) throw new HttpError(400, 'unknown_entry', `"reply_to": no message "${replyTo}" in this group`);
    if (entry.kind === 'agent') replyToAgentId = entry.agentId;
  }
  // Everything about the message is right: now its files are kept, all of them before it is
  // handed over (a store that fails throws, and nothing is acknowledged).
  const attachments: Attachment[] = [];
  for (const file of upload) {
    const kept = await host.files.keepSpooled(file);
    if (!kept.ok) throw refusal(file.name || 'the file', kept, host.files);
    // The same bytes twice are one file.
    if (!attachments.some((a) => a.id === kept.attachment.id)) attachments.push(kept.attachment);
  }
  const result = await host.handle({ kind: 'message', message: {
    channel: 'web',
    chatId: webChatId,
    messageId: clientId ?? randomUUID(),
    author: { id: name, name }, // the router prefixes the channel: "web:Maya"
    // The rate limit counts per client, never per typed name (see client.ts).
    rateKey: `addr:${clientAddressKey(req.socket.remoteAddress)}`,
    text,
    ts: Date.now(),
    replyToAgentId,
    replyToEntryId: replyTo,
    clientTag: tagOf(req.headers['x-chorus-client']),
    chatTitle: g.title,
    // The page shows command answers and refusals to the asker alone; they are not stored.
    ephemeral: true,
    ...(attachments.length > 0 ? { attachments } : {}),
  } });
  const files = attachments.length > 0 ? { attachments } : {};
  if (result.ephemeral && result.status !== 'rejected' && result.status !== 'forwarded') {
    sendJson(res, 200, { status: result.status, entryId: null, groupId: result.groupId ?? g.id, ephemeral: result.ephemeral });
    return;
  }
  switch (result.status) {
    case 'recorded':
    case 'command':
    case 'duplicate':
      sendJson(res, 202, { status: result.status, entryId: result.entryId ?? null, groupId: result.groupId ?? g.id, ...files });
      return;
    case 'forwarded':
      // Durable in the shared inbox; the instance that runs the group gives it its seq (it shows
      // up on the live feed of every instance as soon as that one records it).
      // A command handed over carries a note for the asker (where it went, what to expect).
      sendJson(res, 202, { status: 'forwarded', entryId: null, inboxId: result.inboxId, groupId: result.groupId, ...files, ...(result.ephemeral ? { ephemeral: result.ephemeral } : {}) });
      return;
    case 'no_group':
      throw new HttpError(404, 'unknown_group', result.reason);
    case 'rejected': {
      const reason = result.reason;
      if (result.code === 'shutting_down' || result.code === 'unavailable') throw new HttpError(503, 'unavailable', reason, { 'retry-after': '5' });
      const status = result.code === 'rate_limited' ? 429 : 422;
      const retry = result.ephemeral?.retryAfterSeconds;
      // The refusal, with when to try again; the page keeps the typed text in the composer.
      sendJson(res, status, { error: { code: result.code, message: reason }, ...(result.ephemeral ? { ephemeral: result.ephemeral } : {}) },
        retry !== undefined ? { 'retry-after': String(retry) } : {});
      return;
    }
  }
}

/** Look an entry up by id (`<group>.<seq>`), anywhere in the history. */
export async function findEntry(gateway: GatewayApi, groupId: string, id: string): Promise<TranscriptEntry | undefined> {
  const seq = Number(id.slice(id.lastIndexOf('.') + 1));
  if (!Number.isSafeInteger(seq) || seq < 1) return undefined;
  const [hit] = await gateway.messages(groupId, { before: seq + 1, limit: 1 });
  return hit?.id === id ? hit : undefined;
}
