/**
 * Everything Chorus posts on Discord, per chat in order: agents' replies, the system voice,
 * people relayed from the room's other chats, and the edits and deletions carried to them.
 *
 * One post is split into the chunks Discord takes and sent through the channel webhook. A post
 * resumed after the process stopped
 * (`resumedSince`) may be in the channel already, in part or whole: each chunk is looked for first
 * and only the ones not there are sent, so a restart after `kill -9` posts it exactly once. (A
 * notice the bot posted itself, without the webhook, is not looked for: it may come twice.)
 */
import type { Files } from '../../core/fileTypes.js';
import { BoundedMap, BoundedSet } from '../../core/lib/BoundedMap.js';
import { KeyedQueue } from '../../core/lib/KeyedQueue.js';
import type { Logger, PostOptions, PostedMessage } from '../../core/ports.js';
import type { PostedBy, RelayedAuthor } from '../../core/roomTypes.js';
import { splitMessage } from '../../core/text/split.js';
import type { AgentDef, ChatRef } from '../../core/types.js';
import { DISCORD_MAX_MESSAGE, POSTED_INDEX_SIZE, type DiscordConfig } from './config.js';
import { deleteChunks, editChunks } from './edits.js';
import { DiscordPostError, isMissingPermission, refusalOf } from './errors.js';
import { uploadsOf } from './files.js';
import { identityFor, relayIdentity } from './identity.js';
import { ANSWERED_KEPT, LOOKUP_SLACK_MS, findPosted, sendChunk, type OutboundContext, type Sender } from './outbound.js';
import { sendWithFiles } from './sendFiles.js';
import { discordApproval } from './approvalPosts.js';
import { MissingWebhookPermission } from './webhooks.js';

type Uploads = Array<{ attachment: Buffer; name: string }>;
type PostAs = { agentId?: string; system?: boolean; files?: Uploads; resumedSince?: number | undefined };

/** What posting needs of the running session; null while the channel is not running. */
export type PostingContext = Omit<OutboundContext, 'answered'> & { files: Files };

export class Poster {
  /** Platform message id → the agent that posted it, for replies to an agent's message. */
  private readonly posted = new BoundedMap<string, string>(POSTED_INDEX_SIZE);
  /**
   * Per chat, one at a time: the chunks of one reply never interleave with another reply, an edit
   * never overtakes the post it changes, and a 429 (which discord.js REST waits out) delays the
   * later posts instead of letting them overtake.
   */
  private readonly queue = new KeyedQueue();
  /** This process's posts, never taken for a lost or resumed one (outbound.ts). */
  private readonly answered = new BoundedSet<string>(ANSWERED_KEPT);

  constructor(
    private readonly cfg: DiscordConfig,
    private readonly agents: readonly AgentDef[],
    private readonly log: Logger,
    private readonly session: () => PostingContext | null,
  ) {}

  /** The agent that posted this message here, while remembered. */
  agentOf(messageId: string): string | undefined {
    return this.posted.get(messageId);
  }

  async asAgent(chat: ChatRef, agent: AgentDef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    const id = identityFor(agent, this.cfg);
    if (opts?.approval) {
      // A request for approval: every argument, laid out as approvalPosts.ts says; it pings nobody.
      const { chunks, files } = discordApproval(opts.approval, id.label ?? '');
      const who: Sender = { username: id.username, avatarURL: id.avatarURL, mentions: 'none' };
      return this.postChunks(chat, chunks, who, { agentId: agent.id, files, resumedSince: opts.resumedSince });
    }
    const body = id.label ? id.label + text : text;
    return this.post(chat, body, { username: id.username, avatarURL: id.avatarURL }, { agentId: agent.id, files: await this.uploads(opts), resumedSince: opts?.resumedSince });
  }

  asSystem(chat: ChatRef, text: string, opts?: PostOptions): Promise<PostedMessage> {
    return this.post(chat, text, { username: this.cfg.webhook_name, avatarURL: undefined }, { system: true, resumedSince: opts?.resumedSince });
  }

  /** Through the channel webhook as "Maya · Telegram", with their picture; their text pings nobody. */
  async relay(chat: ChatRef, from: RelayedAuthor, text: string, opts?: PostOptions): Promise<PostedMessage> {
    return this.post(chat, text, relayIdentity(from), { files: await this.uploads(opts), resumedSince: opts?.resumedSince });
  }

  async edit(chat: ChatRef, ids: readonly string[], by: PostedBy, text: string): Promise<void> {
    const ctx = this.context();
    // Shown as posted: an agent whose name Discord refuses keeps its label; a relayed text pings nobody.
    const agent = 'agentId' in by ? this.agents.find((a) => a.id === by.agentId) : undefined;
    const label = agent ? identityFor(agent, this.cfg).label : undefined;
    const job = { chat, ids, text: label ? label + text : text, mentions: 'relayed' in by ? ('none' as const) : ('users' as const), system: 'system' in by };
    await this.queue.run(chat.chatId, () => editChunks(ctx, job));
  }

  async delete(chat: ChatRef, ids: readonly string[]): Promise<void> {
    const ctx = this.context();
    await this.queue.run(chat.chatId, () => deleteChunks(ctx, chat, ids));
  }

  private async uploads(opts: PostOptions | undefined): Promise<Uploads> {
    const files = this.session()?.files;
    return opts?.attachments?.length && files ? uploadsOf(files, opts.attachments, this.log) : [];
  }

  private context(): PostingContext & OutboundContext {
    const ctx = this.session();
    if (!ctx) throw new DiscordPostError('Discord channel is not running', undefined, undefined);
    return { ...ctx, answered: this.answered };
  }

  /**
   * Split, then send every chunk through the channel webhook, in order, one chat at a time. A
   * refusal for good is a PostRefusedError (the core stops trying); anything else passes.
   */
  private post(chat: ChatRef, text: string, who: Sender, as: PostAs): Promise<PostedMessage> {
    return this.postChunks(chat, splitMessage(text, DISCORD_MAX_MESSAGE), who, as);
  }

  /** Send `chunks` (each within Discord's limit; blank ones are left out), the files with the last. */
  private async postChunks(chat: ChatRef, all: readonly string[], who: Sender, as: PostAs): Promise<PostedMessage> {
    const ctx = this.context();
    const files = as.files ?? [];
    const chunks = all.filter((c) => c.trim().length > 0);
    if (chunks.length === 0 && files.length === 0) return { ids: [] };
    if (chunks.length === 0) chunks.push('');
    return this.queue.run(chat.chatId, async () => {
      try {
        const ids = await postChunks(ctx, { chat, chunks, who, system: as.system === true, files, resumedSince: as.resumedSince });
        if (as.agentId) for (const id of ids) this.posted.set(id, as.agentId);
        return { ids };
      } catch (err) {
        throw refusalOf(err);
      }
    });
  }
}

export interface PostJob {
  chat: ChatRef;
  /** Within Discord's limit each; at least one (an empty one carries files alone). */
  chunks: readonly string[];
  who: Sender;
  /** The system voice: without the webhook the bot posts itself, so the notice still gets through. */
  system: boolean;
  /** Go with the last chunk, so they sit under the whole text. */
  files: Array<{ attachment: Buffer; name: string }>;
  resumedSince?: number | undefined;
}

/** The ids of the chunks, in order. */
export async function postChunks(ctx: OutboundContext, job: PostJob): Promise<string[]> {
  const { chat, who } = job;
  const ids: string[] = [];
  let lookIn = job.resumedSince === undefined ? undefined : await webhookIdOf(ctx, chat);
  for (const [i, content] of job.chunks.entries()) {
    if (lookIn !== undefined) {
      // A post whose files were split (over the upload limit) is not found as one: it is sent again.
      const files = i === job.chunks.length - 1 ? job.files.length : 0;
      const found = await findPosted(ctx, chat, lookIn, who.username, content, job.resumedSince! - LOOKUP_SLACK_MS, { after: ids.at(-1), skip: new Set(ids), files });
      if (found) {
        ctx.log.info({ chatId: chat.chatId, messageId: found }, 'discord: a resumed post was already in the channel; not sending it again');
        ctx.answered.add(found);
        ids.push(found);
        continue;
      }
      // Chunks go out in order: the ones after a missing one were never sent either.
      lookIn = undefined;
    }
    if (i === job.chunks.length - 1 && job.files.length) ids.push(...(await sendWithFiles(ctx, chat, content, job.files, who, job.system)));
    else ids.push(await sendChunk(ctx, chat, content, who, job.system));
  }
  return ids;
}

/** The channel webhook's id, or undefined when there is none to use (the send that follows says why). */
async function webhookIdOf(ctx: OutboundContext, chat: ChatRef): Promise<string | undefined> {
  try {
    return (await ctx.webhooks.get(chat.chatId)).id;
  } catch (err) {
    if (!(err instanceof MissingWebhookPermission) && !isMissingPermission(err)) ctx.log.warn({ chatId: chat.chatId }, 'discord: cannot look for a resumed post; sending it');
    return undefined;
  }
}
