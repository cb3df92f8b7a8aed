/**
 * The fake gateway: HELLO, IDENTIFY → READY + GUILD_CREATE, heartbeat ACKs, MESSAGE_CREATE
 * for every message the fake stores, MESSAGE_UPDATE / MESSAGE_DELETE(_BULK) when one changes or goes, and MESSAGE_REACTION_* for reactions (only to sessions that
 * asked for GuildMessageReactions, as on Discord). Speaks plain JSON (discord.js only asks for zlib-stream when
 * the optional zlib-sync package is installed, which it is not here).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { FakeDiscord } from './FakeDiscord.js';
import { Intent, channelPayload, emojiPayload, memberPayload, messagePayload, rolePayload, snowflake, type FakeEmoji, type FakeUser, type StoredMessage } from './model.js';

export type ReactionEventType = 'MESSAGE_REACTION_ADD' | 'MESSAGE_REACTION_REMOVE' | 'MESSAGE_REACTION_REMOVE_ALL' | 'MESSAGE_REACTION_REMOVE_EMOJI';

interface Session {
  ws: WebSocket;
  intents: number;
  identified: boolean;
  seq: number;
  id: string;
}

const Op = { Dispatch: 0, Heartbeat: 1, Identify: 2, Resume: 6, InvalidSession: 9, Hello: 10, HeartbeatAck: 11 } as const;

export class FakeGateway {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sessions = new Set<Session>();
  readonly identifies: Array<{ intents: number }> = [];
  /** Every MESSAGE_CREATE sent, per session, so tests can prove an echo really went out. */
  readonly dispatched: Array<{ session: string; messageId: string; webhookId: string | null; content: string }> = [];

  constructor(private readonly fake: FakeDiscord) {}

  get openSessions(): number {
    return [...this.sessions].filter((s) => s.identified).length;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!req.url?.startsWith('/gateway')) {
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws));
  }

  close(): void {
    for (const s of this.sessions) s.ws.terminate();
    this.sessions.clear();
    this.wss.close();
  }

  private onConnection(ws: WebSocket): void {
    const session: Session = { ws, intents: 0, identified: false, seq: 0, id: snowflake() };
    this.sessions.add(session);
    ws.on('close', () => this.sessions.delete(session));
    ws.on('error', () => this.sessions.delete(session));
    ws.on('message', (raw) => this.onPayload(session, raw.toString()));
    this.send(session, { op: Op.Hello, d: { heartbeat_interval: this.fake.heartbeatIntervalMs } });
  }

  private onPayload(session: Session, raw: string): void {
    let payload: { op: number; d: any };
    try {
      payload = JSON.parse(raw);
    } catch {
      session.ws.close(4002, 'Error while decoding payload.');
      return;
    }
    switch (payload.op) {
      case Op.Heartbeat:
        this.send(session, { op: Op.HeartbeatAck });
        return;
      case Op.Identify:
        this.identify(session, payload.d);
        return;
      case Op.Resume:
        // The fake keeps no sessions across connections: make the client identify afresh.
        this.send(session, { op: Op.InvalidSession, d: false });
        return;
      default:
        return;
    }
  }

  private identify(session: Session, d: { token?: string; intents?: number }): void {
    if (d.token !== this.fake.token) {
      session.ws.close(4004, 'Authentication failed.');
      return;
    }
    const intents = Number(d.intents ?? 0);
    if (intents & Intent.MessageContent && !this.fake.messageContentAllowed) {
      session.ws.close(4014, 'Disallowed intent(s).');
      return;
    }
    session.intents = intents;
    session.identified = true;
    this.identifies.push({ intents });
    const f = this.fake;
    this.dispatch(session, 'READY', {
      v: 10,
      user: { id: f.bot.id, username: f.bot.username, discriminator: '0', avatar: null, bot: true, verified: true, flags: 0 },
      guilds: [{ id: f.guildId, unavailable: true }],
      session_id: session.id,
      resume_gateway_url: f.gatewayUrl,
      shard: [0, 1],
      application: { id: f.applicationId, flags: 0 },
    });
    if (intents & Intent.Guilds) this.dispatch(session, 'GUILD_CREATE', this.guildPayload());
  }

  private guildPayload(): Record<string, unknown> {
    const f = this.fake;
    return {
      id: f.guildId,
      name: f.guildName,
      icon: null,
      splash: null,
      discovery_splash: null,
      banner: null,
      description: null,
      owner_id: f.owner.id,
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      nsfw_level: 0,
      premium_tier: 0,
      premium_subscription_count: 0,
      system_channel_id: null,
      system_channel_flags: 0,
      rules_channel_id: null,
      public_updates_channel_id: null,
      vanity_url_code: null,
      preferred_locale: 'en-US',
      features: [],
      roles: f.roles.map(rolePayload),
      emojis: [],
      stickers: [],
      joined_at: '2024-01-01T00:00:00.000Z',
      large: false,
      unavailable: false,
      member_count: f.members.size,
      voice_states: [],
      // Discord always includes the bot's own member, which is what permission checks need.
      members: [memberPayload(f.bot, f.members.get(f.bot.id) ?? [])],
      channels: f.channels.map((c, i) => channelPayload(c, f.guildId, i)),
      threads: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
    };
  }

  /** Send a stored message to every identified session, honouring each one's intents. */
  dispatchMessage(m: StoredMessage, t: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE' = 'MESSAGE_CREATE'): void {
    const f = this.fake;
    const referenced = m.reply_to ? f.messages.find((x) => x.id === m.reply_to) : undefined;
    for (const s of this.sessions) {
      if (!s.identified || !(s.intents & Intent.GuildMessages)) continue;
      // Without Message Content, Discord blanks content of messages that do not concern the bot.
      const blank = !(s.intents & Intent.MessageContent) && m.author.id !== f.bot.id;
      const memberRoles = m.webhook_id ? undefined : (f.members.get(m.author.id) ?? []);
      // Like Discord, resolve `<@id>` mentions into user objects on the message.
      const mentions = [...m.content.matchAll(/<@!?(\d+)>/g)].map((x) => f.users.get(x[1]!)).filter((u) => u !== undefined);
      const d = messagePayload(m, f.guildId, referenced, { blankContent: blank, memberRoles, mentions });
      if (t === 'MESSAGE_CREATE') this.dispatched.push({ session: s.id, messageId: m.id, webhookId: m.webhook_id, content: d.content as string });
      // Discord's MESSAGE_UPDATE carries the whole message, as MESSAGE_CREATE does.
      this.dispatch(s, t, d);
    }
  }

  /** MESSAGE_DELETE (one message) or MESSAGE_DELETE_BULK (a moderator's purge): only ids, as on Discord. */
  dispatchDelete(channelId: string, ids: string[]): void {
    const f = this.fake;
    const d = ids.length === 1 ? { id: ids[0], channel_id: channelId, guild_id: f.guildId } : { ids, channel_id: channelId, guild_id: f.guildId };
    for (const s of this.sessions) {
      if (s.identified && s.intents & Intent.GuildMessages) this.dispatch(s, ids.length === 1 ? 'MESSAGE_DELETE' : 'MESSAGE_DELETE_BULK', d);
    }
  }

  /**
   * A reaction event, shaped as Discord sends it in a guild: ADD carries the reactor's member (with
   * its user), REMOVE only `user_id`; REMOVE_ALL names only the message, REMOVE_EMOJI the emoji too.
   */
  dispatchReaction(t: ReactionEventType, ev: { channelId: string; messageId: string; user?: FakeUser; emoji?: FakeEmoji }): void {
    const f = this.fake;
    const d: Record<string, unknown> = { channel_id: ev.channelId, message_id: ev.messageId, guild_id: f.guildId };
    if (ev.emoji) d.emoji = emojiPayload(ev.emoji);
    if (ev.user) {
      d.user_id = ev.user.id;
      d.burst = false;
      d.type = 0;
    }
    if (t === 'MESSAGE_REACTION_ADD' && ev.user) {
      d.member = memberPayload(ev.user, f.members.get(ev.user.id) ?? []);
      const author = f.messages.find((m) => m.id === ev.messageId)?.author;
      if (author) d.message_author_id = author.id;
    }
    for (const s of this.sessions) {
      if (s.identified && s.intents & Intent.GuildMessageReactions) this.dispatch(s, t, d);
    }
  }

  private dispatch(session: Session, t: string, d: unknown): void {
    session.seq++;
    this.send(session, { op: Op.Dispatch, t, s: session.seq, d });
  }

  private send(session: Session, payload: unknown): void {
    if (session.ws.readyState === session.ws.OPEN) session.ws.send(JSON.stringify(payload));
  }
}
