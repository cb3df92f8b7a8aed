/**
 * What Chorus knows about each Discord channel it serves: its name, and why the bot cannot post
 * there, if it cannot. Filled at start by preparing every channel's webhook, so a missing
 * permission is reported naming the channel rather than at the first agent reply, and kept up to
 * date by the posts themselves. `/readyz` and `/group list` read it.
 */
import type { Client } from 'discord.js';
import type { ChannelHost, Logger } from '../../core/ports.js';
import type { ChannelPartStatus } from '../../core/readModels.js';
import { sanitizeError } from './errors.js';
import { guildChannel, missingReactionPermissions } from './permissions.js';
import { missingManageWebhooksMessage, missingReactionPermissionsMessage } from './startupChecks.js';
import { MissingWebhookPermission, type WebhookCache } from './webhooks.js';

export class ChannelHealth {
  /** Channels where the bot cannot post (channel id → message). */
  private readonly problems = new Map<string, string>();
  /** Channel id → name, learnt while checking the channels at start. */
  private readonly names = new Map<string, string>();
  /** Channels where the bot cannot show agents' reactions (`agent_reactions: bot`); posting is not affected. */
  private readonly reactionProblems = new Map<string, string>();

  constructor(private readonly log: Logger) {}

  /** Why the bot cannot post in `channelId`, if it cannot. */
  problem(channelId: string): string | undefined {
    return this.problems.get(channelId);
  }

  /** Why the bot cannot show agents' reactions in `channelId`, if it cannot. */
  reactionProblem(channelId: string): string | undefined {
    return this.reactionProblems.get(channelId);
  }

  /** Remember that the bot cannot post in `channelId` (a post found out). */
  setProblem(channelId: string, message: string): void {
    this.problems.set(channelId, message);
  }

  /**
   * Prepare the webhook of every channel Chorus is meant to serve (the allow-list, and channels
   * that already have a group), recording a problem for each one that cannot take posts; with
   * `reactions`, also each one where the bot may not react (a warning: posts go on).
   */
  async check(run: { client: Client; host: ChannelHost; webhooks: WebhookCache }, allowList: ReadonlySet<string>, reactions = false): Promise<void> {
    const ids = new Set(allowList);
    for (const ch of run.client.channels.cache.values()) {
      if (!ch.isDMBased() && ch.isTextBased() && !ch.isThread() && run.host.findGroup('discord', ch.id)) ids.add(ch.id);
    }
    for (const id of ids) {
      const channel = await guildChannel(run.client, id);
      if (channel) this.names.set(id, `#${channel.name}`);
      if (!channel) {
        const msg = `Discord: channel ${id} from channels.discord.channels is not visible to the bot (wrong id, or the bot lacks View Channel there).`;
        this.problems.set(id, msg);
        this.log.error(msg);
        continue;
      }
      const missing = reactions ? missingReactionPermissions(run.client, channel) : [];
      if (missing.length > 0) {
        const msg = missingReactionPermissionsMessage({ id, name: channel.name }, missing);
        this.reactionProblems.set(id, msg);
        this.log.warn(msg);
      } else this.reactionProblems.delete(id);
      try {
        await run.webhooks.get(id);
        this.problems.delete(id);
      } catch (err) {
        const msg =
          err instanceof MissingWebhookPermission
            ? missingManageWebhooksMessage({ id, name: channel.name })
            : sanitizeError(err, `Discord: could not prepare the webhook of #${channel.name} (${id})`).message;
        this.problems.set(id, msg);
        this.log.error(msg);
      }
    }
  }

  /** The state of each allow-listed channel and of each with a problem, for the channel's status. */
  parts(allowList: ReadonlySet<string>): Record<string, ChannelPartStatus> {
    const channels: Record<string, ChannelPartStatus> = {};
    for (const id of new Set([...allowList, ...this.problems.keys()])) {
      const problem = this.problems.get(id);
      channels[id] = { ok: !problem, name: this.names.get(id), ...(problem ? { error: problem } : {}) };
    }
    return channels;
  }
}
