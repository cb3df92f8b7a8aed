/**
 * One grammY bot per agent: its identity (getMe), its start-up calls and its poller. A bot whose
 * token Telegram rejects is reported once, by agent id, and left out; the other bots go on.
 */
import { autoRetry } from '@grammyjs/auto-retry';
import { Bot } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import type { ChannelPartStatus, Logger } from '../../core/ports.js';
import type { AgentDef } from '../../core/types.js';
import { apiErrorCode, describeError } from './errors.js';
import { UpdatePoller } from './poller.js';

/** Commands shown in Telegram's "/" menu; set once per bot, not per message. */
export const BOT_COMMANDS = [
  { command: 'group', description: 'Manage this group: create, add, remove, list, config, mute, reset, dissolve' },
  { command: 'ask', description: 'Make agents answer: /ask <agent> [text]' },
  { command: 'help', description: 'How to talk to the agents' },
];

export type BotStatus = 'idle' | 'ready' | 'unauthorized' | 'unreachable';

export class AgentBot {
  readonly bot: Bot;
  status: BotStatus = 'idle';
  me: UserFromGetMe | undefined;
  /** Why the bot is not working, as Telegram or the network said it (no token in it). */
  problem: string | null = null;
  readonly poller: UpdatePoller;
  private commandsSet = false;

  constructor(
    readonly agent: AgentDef,
    token: string,
    apiRoot: string,
    private readonly log: Logger,
    pollTimeoutSeconds: number,
  ) {
    this.bot = new Bot(token, { client: { apiRoot, timeoutSeconds: pollTimeoutSeconds + 30 } });
    // 429 → wait retry_after and repeat the same call; the caller sees one slow success, so
    // the per-chat queue keeps order. Network errors are left to our own code (see sender/poller).
    this.bot.api.config.use(autoRetry({ maxRetryAttempts: 10, maxDelaySeconds: 600, rethrowHttpErrors: true }));
    this.poller = new UpdatePoller(this.bot, log, {
      timeoutSeconds: pollTimeoutSeconds,
      allowedUpdates: ['message', 'my_chat_member'],
      onUnauthorized: () => {
        this.status = 'unauthorized';
        this.problem = '401: Unauthorized (the token was revoked while polling)';
      },
      onHealth: (problem) => {
        this.problem = problem;
      },
    });
  }

  get token(): string {
    return this.bot.token;
  }

  /**
   * getMe, deleteWebhook, setMyCommands, then poll. Resolves 'retry' when Telegram could not be
   * reached (the caller tries again later), never throws.
   */
  async bringUp(): Promise<'ok' | 'fatal' | 'retry'> {
    const agent = this.agent.id;
    try {
      this.me = await this.bot.api.getMe();
      this.bot.botInfo = this.me;
    } catch (err) {
      const code = apiErrorCode(err);
      this.problem = describeError(err, [this.token]);
      if (code === 401 || code === 404) {
        this.status = 'unauthorized';
        this.log.error(
          { agent, code },
          `telegram: Telegram rejected the bot token of agent "${agent}" (${code}); check agents[].telegram.token for "${agent}" — its bot is skipped, the other bots keep working`,
        );
        return 'fatal';
      }
      this.status = 'unreachable';
      this.log.warn({ agent, err: describeError(err, [this.token]) }, `telegram: cannot reach the Bot API for agent "${agent}"; will retry`);
      return 'retry';
    }
    if (!this.me.can_read_all_group_messages) {
      this.log.warn(
        { agent, bot: this.me.username },
        `telegram: the bot @${this.me.username} of agent "${agent}" has privacy mode on and only sees commands, replies and mentions in groups; ` +
          `for voluntary replies: in @BotFather send /setprivacy, choose @${this.me.username}, pick Disable, then remove and re-add the bot to each group`,
      );
    }
    try {
      // Polling and a webhook exclude each other; keep pending updates, they are real messages.
      await this.bot.api.deleteWebhook({ drop_pending_updates: false });
    } catch (err) {
      this.log.warn({ agent, err: describeError(err, [this.token]) }, 'telegram: deleteWebhook failed');
    }
    if (!this.commandsSet) {
      try {
        await this.bot.api.setMyCommands(BOT_COMMANDS);
        this.commandsSet = true;
      } catch (err) {
        this.log.warn({ agent, err: describeError(err, [this.token]) }, 'telegram: setMyCommands failed');
      }
    }
    this.status = 'ready';
    this.problem = null;
    this.poller.start();
    this.log.info({ agent, bot: this.me.username, privacy: !this.me.can_read_all_group_messages }, 'telegram: bot is polling');
    return 'ok';
  }

  async stop(): Promise<void> {
    await this.poller.stop();
    if (this.status === 'ready' || this.status === 'unreachable') this.status = 'idle';
  }

  /** For `/readyz`: working means getMe succeeded and polling is not failing. */
  health(): ChannelPartStatus {
    const name = this.me ? `@${this.me.username}` : undefined;
    const note = this.me && !this.me.can_read_all_group_messages ? 'privacy mode is on: in groups the bot sees only commands, replies and @mentions' : undefined;
    switch (this.status) {
      case 'ready':
        return this.problem
          ? { ok: false, state: 'failing', name, error: `polling fails: ${this.problem}`, note }
          : { ok: true, state: 'ready', name, note };
      case 'unauthorized':
        return { ok: false, state: 'unauthorized', name, error: `${this.problem ?? 'token rejected'} — check agents[].telegram.token of "${this.agent.id}"` };
      case 'unreachable':
        return { ok: false, state: 'unreachable', name, error: `cannot reach the Bot API: ${this.problem ?? 'no answer'}; retrying` };
      default:
        return { ok: false, state: 'starting', name };
    }
  }
}

/** What `/group list` should say about an agent's bot in a group chat, if anything. */
export function botWarning(agent: AgentDef, b: AgentBot | undefined): string | undefined {
  if (!b) return `${agent.name} has no Telegram bot (agents[].telegram.token), so it cannot post here.`;
  if (b.status === 'unauthorized') return `${agent.name}'s bot token was rejected by Telegram; fix agents[].telegram.token and restart.`;
  if (b.me && !b.me.can_read_all_group_messages) {
    return (
      `${agent.name}'s bot @${b.me.username} has privacy mode on and only sees commands, replies and @mentions: ` +
      `in @BotFather send /setprivacy, choose @${b.me.username}, pick Disable, then remove and re-add the bot here.`
    );
  }
  return undefined;
}
