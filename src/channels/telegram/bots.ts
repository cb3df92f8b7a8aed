/**
 * One grammY bot per agent: its identity (getMe), its start-up calls and how updates arrive —
 * its poller, or in webhook mode the webhook it registers. A bot whose token Telegram rejects is
 * reported once, by agent id, and left out; the other bots go on.
 */
import { autoRetry } from '@grammyjs/auto-retry';
import { Bot } from 'grammy';
import type { UserFromGetMe, WebhookInfo } from 'grammy/types';
import type { ConnectionGate, Logger } from '../../core/ports.js';
import type { ChannelPartStatus, ChannelStatus } from '../../core/readModels.js';
import type { AgentDef } from '../../core/types.js';
import { apiErrorCode, describeError } from './errors.js';
import { UpdatePoller } from './poller.js';
import type { KeepDeadLetter } from './deadLetters.js';
import { ALLOWED_UPDATES, ensureWebhook } from './webhook.js';

/** Commands shown in Telegram's "/" menu; set once per bot, not per message. */
const BOT_COMMANDS = [
  { command: 'group', description: 'Manage this group: create, add, remove, list, config, mute, reset, dissolve' },
  { command: 'ask', description: 'Make agents answer: /ask <agent> [text]' },
  { command: 'stop', description: "End the agents' current round and cancel replies in progress" },
  { command: 'approve', description: "Let an agent's tool call run: /approve <id>" },
  { command: 'deny', description: "Refuse an agent's tool call: /deny <id>" },
  { command: 'help', description: 'How to talk to the agents' },
];

export type BotStatus = 'idle' | 'ready' | 'unauthorized' | 'unreachable' | 'webhook_failed';

/** Webhook mode: the URL this bot's updates go to and the secret Telegram sends back. */
export interface BotWebhook {
  url: string;
  secretToken: string;
}

export class AgentBot {
  readonly bot: Bot;
  status: BotStatus = 'idle';
  me: UserFromGetMe | undefined;
  /** Why the bot is not working, as Telegram or the network said it (no token in it). */
  problem: string | null = null;
  readonly poller: UpdatePoller;
  private commandsSet = false;
  /** What getWebhookInfo said last (webhook mode), for `/readyz` and logs. */
  webhookInfo: WebhookInfo | undefined;
  private webhookCheckFailures = 0;

  constructor(
    readonly agent: AgentDef,
    token: string,
    apiRoot: string,
    private readonly log: Logger,
    pollTimeoutSeconds: number,
    /** Set in webhook mode: updates are POSTed to us instead of polled. */
    readonly webhook: BotWebhook | undefined,
    /** Several instances (polling mode): poll only while this instance holds the bot's lease. */
    private readonly gate: ConnectionGate | undefined,
    /** Where a polled update that can never be handed over goes (webhook mode: see webhook.ts). */
    deadLetter: KeepDeadLetter,
  ) {
    this.bot = new Bot(token, { client: { apiRoot, timeoutSeconds: pollTimeoutSeconds + 30 } });
    // 429 → wait retry_after and repeat the same call; the caller sees one slow success, so
    // the per-chat queue keeps order. Network errors are left to our own code (see sender/poller).
    this.bot.api.config.use(autoRetry({ maxRetryAttempts: 10, maxDelaySeconds: 600, rethrowHttpErrors: true }));
    this.poller = new UpdatePoller(this.bot, log, {
      timeoutSeconds: pollTimeoutSeconds,
      allowedUpdates: ALLOWED_UPDATES,
      onUnauthorized: () => {
        this.status = 'unauthorized';
        this.problem = '401: Unauthorized (the token was revoked while polling)';
      },
      onHealth: (problem) => {
        this.problem = problem;
      },
      deadLetter,
    });
  }

  get token(): string {
    return this.bot.token;
  }

  /**
   * getMe, setMyCommands, then deleteWebhook and poll — or, in webhook mode, setWebhook (when not
   * already set). Resolves 'retry' when Telegram could not be reached or refused the webhook (the
   * caller tries again later), never throws.
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
    if (!this.commandsSet) {
      try {
        await this.bot.api.setMyCommands(BOT_COMMANDS);
        this.commandsSet = true;
      } catch (err) {
        this.log.warn({ agent, err: describeError(err, [this.token]) }, 'telegram: setMyCommands failed');
      }
    }
    if (this.webhook) return this.bringUpWebhook(this.webhook);
    try {
      // Polling and a webhook exclude each other (getUpdates answers 409 while one is set); keep
      // pending updates, they are real messages.
      await this.bot.api.deleteWebhook({ drop_pending_updates: false });
    } catch (err) {
      this.log.warn({ agent, err: describeError(err, [this.token]) }, 'telegram: deleteWebhook failed');
    }
    this.status = 'ready';
    this.problem = null;
    this.startPolling();
    this.log.info({ agent, bot: this.me.username, privacy: !this.me.can_read_all_group_messages }, this.gate ? 'telegram: bot is up; it polls while this instance holds its lease' : 'telegram: bot is polling');
    return 'ok';
  }

  /** Poll now, or (several instances) whenever this instance holds the bot's poll lease. */
  private gated = false;
  private startPolling(): void {
    if (!this.gate) return this.poller.start();
    if (this.gated) return; // registered once; from then on the lease starts and stops it
    this.gated = true;
    this.gate.hold(`telegram:${this.agent.id}`, { start: () => this.poller.start(), stop: () => this.poller.stop() });
  }

  private async bringUpWebhook(wh: BotWebhook): Promise<'ok' | 'fatal' | 'retry'> {
    const agent = this.agent.id;
    try {
      const done = await ensureWebhook(this.bot, wh.url, wh.secretToken);
      this.log.info({ agent, bot: this.me?.username, webhook: done }, done === 'set' ? 'telegram: webhook set; Telegram posts this bot\'s updates to us' : 'telegram: webhook already set as configured');
    } catch (err) {
      const code = apiErrorCode(err);
      this.problem = `setWebhook failed: ${describeError(err, [this.token, wh.secretToken])}`;
      if (code === 401) {
        this.status = 'unauthorized';
        return 'fatal';
      }
      this.status = 'webhook_failed';
      this.log.warn({ agent, err: this.problem }, `telegram: could not set the webhook of agent "${agent}"; check channels.telegram.webhook.url; will retry`);
      return 'retry';
    }
    this.status = 'ready';
    this.problem = null;
    return 'ok';
  }

  /**
   * Webhook mode, now and then: is Telegram still posting to us? When the webhook was removed or
   * pointed elsewhere (a polling run with the same token deletes it), set it again and say so.
   * Telegram's last delivery error is kept for `/readyz` and `chorus doctor`.
   */
  async checkWebhook(): Promise<void> {
    const wh = this.webhook;
    if (!wh || this.status !== 'ready') return;
    try {
      const info = await this.bot.api.getWebhookInfo();
      this.webhookInfo = info;
      if (info.url !== wh.url) {
        this.log.warn({ agent: this.agent.id, now: info.url ? 'another URL' : 'none' }, 'telegram: the webhook was changed outside Chorus; setting it again');
        await ensureWebhook(this.bot, wh.url, wh.secretToken);
      }
      this.webhookCheckFailures = 0;
      this.problem = null;
    } catch (err) {
      // One failed check is routine (a dropped connection); two in a row make the bot not ready.
      if (++this.webhookCheckFailures >= 2) this.problem = `getWebhookInfo/setWebhook failed: ${describeError(err, [this.token, wh.secretToken])}`;
    }
  }

  async stop(): Promise<void> {
    // Webhook mode: the webhook stays set; other instances (or our next start) keep taking updates.
    await this.poller.stop();
    if (this.status === 'ready' || this.status === 'unreachable' || this.status === 'webhook_failed') this.status = 'idle';
  }

  /** For `/readyz`: working means getMe succeeded and polling is not failing (or the webhook is set). */
  health(): ChannelPartStatus {
    const name = this.me ? `@${this.me.username}` : undefined;
    const notes = [
      this.me && !this.me.can_read_all_group_messages ? 'privacy mode is on: in groups the bot sees only commands, replies and @mentions' : undefined,
      this.webhook && this.webhookInfo?.last_error_message
        ? `Telegram's last webhook delivery error${this.webhookInfo.last_error_date ? ` (${new Date(this.webhookInfo.last_error_date * 1000).toISOString()})` : ''}: ${this.webhookInfo.last_error_message}; ${this.webhookInfo.pending_update_count} update(s) pending`
        : undefined,
    ].filter((n): n is string => n !== undefined);
    const note = notes.length ? notes.join('; ') : undefined;
    switch (this.status) {
      case 'ready':
        return this.problem
          ? { ok: false, state: 'failing', name, error: `${this.webhook ? 'webhook check fails' : 'polling fails'}: ${this.problem}`, note }
          : { ok: true, state: this.webhook ? 'webhook_set' : 'ready', name, note };
      case 'webhook_failed':
        return { ok: false, state: 'webhook_not_set', name, error: `${this.problem ?? 'setWebhook failed'}; retrying` };
      case 'unauthorized':
        return { ok: false, state: 'unauthorized', name, error: `${this.problem ?? 'token rejected'} — check agents[].telegram.token of "${this.agent.id}"` };
      case 'unreachable':
        return { ok: false, state: 'unreachable', name, error: `cannot reach the Bot API: ${this.problem ?? 'no answer'}; retrying` };
      default:
        return { ok: false, state: 'starting', name };
    }
  }
}

/**
 * Bring a bot up: the first attempt is awaited; while Telegram cannot be reached, keep trying in
 * the background (2 s, doubling to a minute) until `signal` ends it. `onUp` runs once it is up.
 */
export async function bringUpRetrying(b: { bringUp(): Promise<'ok' | 'fatal' | 'retry'> }, signal: AbortSignal, onUp: () => unknown): Promise<void> {
  const result = await b.bringUp();
  if (result === 'ok') onUp();
  if (result !== 'retry') return;
  void (async () => {
    for (let delay = 2000; !signal.aborted; delay = Math.min(delay * 2, 60_000)) {
      await new Promise<void>((r) => {
        const t = setTimeout(r, delay);
        signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
      });
      if (signal.aborted) return;
      const again = await b.bringUp();
      if (again === 'ok') onUp();
      if (again !== 'retry') return;
    }
  })();
}

/** The channel's `/readyz` part: connected when every agent's bot works (`skipped`: agents left out, with why). */
export function channelStatus(list: readonly AgentBot[], skipped: ReadonlyMap<string, string>, running: boolean): ChannelStatus {
  const bots: Record<string, ChannelPartStatus> = {};
  for (const b of list) bots[b.agent.id] = b.health();
  for (const [agentId, why] of skipped) bots[agentId] = { ok: false, state: 'skipped', error: why };
  const parts = Object.values(bots);
  if (parts.length === 0) return { ok: false, state: 'no_bots', error: 'no agent has a telegram.token', bots };
  const failing = parts.filter((p) => !p.ok).length;
  if (!running) return { ok: false, state: 'stopped', bots };
  return failing === 0 ? { ok: true, state: 'ready', bots } : { ok: false, state: 'degraded', error: `${failing} of ${parts.length} bots not working`, bots };
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

/** The warning line (if any) of each participant's bot: missing, unauthorized, privacy mode on… */
export function botWarnings(agents: readonly AgentDef[], bots: readonly AgentBot[], participants: readonly string[]): string[] {
  return participants.flatMap((id) => {
    const agent = agents.find((a) => a.id === id);
    const line = agent ? botWarning(agent, bots.find((x) => x.agent.id === id)) : undefined;
    return line ? [line] : [];
  });
}

/**
 * What `/group list` should say about reactions in a group chat: Telegram sends them only to bots
 * that are chat admins, so when none of the participants' bots is one, Chorus sees none there; a
 * bot that is not one while another is sees none itself. `isAdmin` says what is known (undefined:
 * not yet; nothing is said about it).
 */
export function reactionWarnings(agents: readonly AgentDef[], bots: readonly AgentBot[], participants: readonly string[], isAdmin: (b: AgentBot) => boolean | undefined): string[] {
  const known = participants
    .map((id) => bots.find((b) => b.agent.id === id && b.me !== undefined && b.status !== 'unauthorized'))
    .filter((b): b is AgentBot => b !== undefined)
    .map((b) => ({ b, admin: isAdmin(b) }));
  const handle = (b: AgentBot) => `@${b.me!.username}`;
  const admins = known.filter((k) => k.admin === true).map((k) => handle(k.b));
  const others = known.filter((k) => k.admin === false).map((k) => k.b);
  if (others.length === 0) return [];
  if (admins.length === 0) {
    const list = others.map(handle).join(', ');
    return [`${list} ${others.length > 1 ? 'are not admins' : 'is not an admin'} of this chat, and Telegram sends people's reactions only to admin bots: make ${handle(others[0]!)} an admin to see reactions.`];
  }
  return others.map((b) => {
    const name = agents.find((a) => a.id === b.agent.id)?.name ?? b.agent.id;
    return `${name}'s bot ${handle(b)} is not an admin of this chat, so Telegram sends it no reactions (Chorus sees them through ${admins.join(', ')}); make ${handle(b)} an admin to see reactions through it too.`;
  });
}
