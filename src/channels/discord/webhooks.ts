/**
 * One webhook per Discord channel, through which every agent (and the system voice) posts.
 *
 * The webhook is found by name among the channel's webhooks (so restarts reuse it instead of
 * piling up "Chorus" webhooks) or created once; its WebhookClient is cached for the life of the
 * adapter. The ids of these webhooks are what lets the adapter recognise its own echoes.
 */
import { Routes, WebhookClient, type APIWebhook, type REST } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import { DiscordCode, apiErrorInfo, isMissingPermission } from './errors.js';

export interface WebhookCacheOptions {
  /** The bot's REST client (authenticated with the bot token). */
  rest: REST;
  /** Name Chorus gives its webhooks (`channels.discord.webhook_name`). */
  name: string;
  /** REST base for webhook clients; undefined = discord.js default. */
  api: string | undefined;
  /** The bot's application id: a webhook this application created is ours for sure. */
  applicationId: string | undefined;
  logger: Logger;
}

/** The bot may not manage webhooks in this channel. */
export class MissingWebhookPermission extends Error {
  constructor(readonly channelId: string) {
    super(`missing Manage Webhooks in ${channelId}`);
    this.name = 'MissingWebhookPermission';
  }
}

export class WebhookCache {
  private readonly clients = new Map<string, Promise<WebhookClient>>();
  private readonly ownIds = new Set<string>();

  constructor(private readonly opts: WebhookCacheOptions) {}

  /** Is this webhook id one of Chorus's own (a message from it is an echo)? */
  isOwn(webhookId: string): boolean {
    return this.ownIds.has(webhookId);
  }

  /**
   * The webhook client of a channel, found or created on first use. Concurrent callers share one
   * lookup, so a burst of posts never creates two webhooks. A failed lookup is not cached.
   */
  get(channelId: string): Promise<WebhookClient> {
    let pending = this.clients.get(channelId);
    if (!pending) {
      pending = this.findOrCreate(channelId);
      this.clients.set(channelId, pending);
      pending.catch(() => {
        if (this.clients.get(channelId) === pending) this.clients.delete(channelId);
      });
    }
    return pending;
  }

  /** Drop a channel's webhook (someone deleted it on Discord); the next `get` finds or creates anew. */
  forget(channelId: string): void {
    const pending = this.clients.get(channelId);
    this.clients.delete(channelId);
    pending?.then((c) => c.destroy()).catch(() => {});
  }

  /** Destroy every cached client (their REST managers hold timers). */
  async destroy(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    for (const p of all) {
      try {
        (await p).destroy();
      } catch {
        // a lookup that failed has nothing to destroy
      }
    }
  }

  private async findOrCreate(channelId: string): Promise<WebhookClient> {
    const { rest, name, logger } = this.opts;
    let hook: APIWebhook | undefined;
    try {
      const existing = (await rest.get(Routes.channelWebhooks(channelId))) as APIWebhook[];
      // Remember every webhook this application made in the channel: all of their posts are ours.
      for (const w of existing) if (this.opts.applicationId && w.application_id === this.opts.applicationId) this.ownIds.add(w.id);
      const usable = existing.filter((w) => w.name === name && typeof w.token === 'string');
      hook = usable.find((w) => w.application_id === this.opts.applicationId) ?? usable[0];
      if (!hook) {
        hook = (await rest.post(Routes.channelWebhooks(channelId), { body: { name }, reason: 'Chorus: agents post through this webhook' })) as APIWebhook;
        logger.info({ channelId, webhookId: hook.id }, 'discord: created the channel webhook');
      } else {
        logger.debug({ channelId, webhookId: hook.id }, 'discord: reusing the channel webhook');
      }
    } catch (err) {
      if (isMissingPermission(err)) throw new MissingWebhookPermission(channelId);
      throw err;
    }
    if (!hook.token) throw new Error(`webhook ${hook.id} in ${channelId} came back without a token`);
    this.ownIds.add(hook.id);
    return new WebhookClient(
      { id: hook.id, token: hook.token },
      // Mentions in agent text may ping users, never @everyone/@here or roles.
      // retries: 0 — a dropped connection, timeout or 5xx is not resent blindly by discord.js
      // (that can post a reply twice); outbound.ts checks the channel first. 429s still wait.
      { rest: { retries: 0, ...(this.opts.api ? { api: this.opts.api } : {}) }, allowedMentions: { parse: ['users'] } },
    );
  }
}

/** The webhook was deleted on Discord behind our back: worth one re-lookup. */
export function isUnknownWebhook(err: unknown): boolean {
  const { status, code } = apiErrorInfo(err);
  return code === DiscordCode.UnknownWebhook || (status === 404 && code === undefined);
}
