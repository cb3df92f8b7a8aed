/**
 * The whole app (src/app.ts, in-process) serving one room across three chats at once: a Telegram
 * supergroup on the fake Bot API (each agent its own bot, plus the relay bot), a Discord channel on
 * the fake Discord (agents and relayed people through the channel webhook), and the web (HTTP API
 * and the room's live event stream). Beside the room, two groups of one chat each (one Telegram
 * group, one Discord channel) for linking with a code. The model is the scripted FakeLlm.
 *
 * Everything is observed where a person would see it: what each fake platform shows, and what
 * the web's event stream sends. Waits poll on conditions.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import type { Clock } from '../../src/core/ports.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import type { FakeUser as DiscordUser, StoredMessage } from '../fakes/discord/model.js';
import { FakeTelegram, type FakeUser, type Posted } from '../fakes/telegram/FakeTelegram.js';
import { FakeLlm, type FakeLlmOptions } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { openSse, type SseConnection } from '../channels/web/sse-client.js';
import { MAYA, RELAY, TOKENS, TOM, USERNAMES } from '../channels/telegram/harness.js';

export { MAYA, RELAY, TOKENS, TOM, USERNAMES };

/** A bot that is not an agent, talking in the Telegram group (bot-to-bot mode). */
export const HELPER: FakeUser = { id: 8800001, first_name: 'Helper', username: 'helper_bot' };

/** Generous: two shared cores, several real clients polling. */
export const WAIT_MS = 30_000;

export async function until<T>(probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface ConfigParts {
  dataDir: string;
  tg: FakeTelegram;
  dc: FakeDiscord;
  tgRoom: number;
  dcRoom: string;
  tgSolo: number;
  dcSolo: string;
  relayBot: boolean;
  allowBots: boolean;
}

function configYaml(o: ConfigParts): string {
  const relay = o.relayBot ? `, relay_token: "${RELAY.token}"` : '';
  const agent = (id: 'analyst' | 'writer', name: string) => `  - id: ${id}
    name: ${name}
    persona: You are the ${id}.
    telegram: { token: "${TOKENS[id]}" }`;
  return `data_dir: ${JSON.stringify(o.dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agent('analyst', 'Analyst')}
${agent('writer', 'Writer')}
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
limits: { user_messages_per_minute: 1000, bot_pair_events_per_minute: 3, max_message_chars: 12000 }
channels:
  web: { enabled: true, port: 0 }
  telegram: { enabled: true, api_root: "${o.tg.apiRoot}", auto_create_groups: false${relay} }
  discord: { enabled: true, token: "${o.dc.token}", api_base: "${o.dc.apiBase}", allow_bots: ${o.allowBots} }
groups:
  - title: Room
    participants: [analyst, writer]
    chats: [{ channel: telegram, chat_id: "${o.tgRoom}" }, { channel: discord, chat_id: "${o.dcRoom}" }, { channel: web }]
  - { channel: telegram, chat_id: "${o.tgSolo}", title: Team, participants: [analyst] }
  - { channel: discord, chat_id: "${o.dcSolo}", title: Ops, participants: [writer] }
`;
}

export interface RoomWorld {
  app: App;
  llm: FakeLlm;
  tg: FakeTelegram;
  dc: FakeDiscord;
  /** The room's Telegram supergroup and Discord channel, and the room's group id (its web chat). */
  tgRoom: number;
  dcRoom: string;
  roomId: string;
  /** The single-chat groups for linking. */
  tgSolo: number;
  dcSolo: string;
  /** Discord people: Lee writes, Mod may manage the channels (an admin). */
  lee: DiscordUser;
  mod: DiscordUser;
  /** The room's live event stream, open from the start. */
  sse: SseConnection;
  /** What Chorus posted in the room's Telegram group (every bot), oldest first. */
  tgPosts(chatId?: number): Posted[];
  /** What Chorus posted in a Discord channel (webhook or bot), oldest first. */
  dcPosts(channelId?: string): StoredMessage[];
  /** Transcript entries the web's event stream sent (`message` events), in order. */
  streamed(): TranscriptEntry[];
  /** The room's transcript as the web API answers it. */
  webHistory(): Promise<TranscriptEntry[]>;
  /** A person on the web page writes in the room. */
  webSays(text: string, opts?: { name?: string; replyTo?: string }): Promise<{ status: number; entryId: string | null }>;
  /** Every round finished and every record written (deliveries to a chat that is down may still wait). */
  idle(): Promise<void>;
  /**
   * Every echo of Chorus's own posts has been handled: a marker from Discord (after the webhook's
   * echoes on the same gateway) reached the web and Telegram, and the agents' bots confirmed all
   * their updates (the relay bot's and the writer's posts reach the analyst's bot). Returns the marker.
   */
  drain(): Promise<string>;
  close(): Promise<void>;
}

/**
 * `relayBot: false`: no `relay_token`, so people from the other chats are posted on Telegram
 * through the first participant's bot (the analyst's). `clock`: the app's (a test's fake one);
 * `allowBots`: Discord's other bots are input (`allow_bots`).
 */
export async function bootRoom(
  llmOpts: FakeLlmOptions = {},
  opts: { relayBot?: boolean; clock?: Clock; allowBots?: boolean } = {},
): Promise<RoomWorld> {
  const tg = await FakeTelegram.start();
  const dc = await new FakeDiscord().start();
  const dataDir = await mkdtemp(join(tmpdir(), 'chorus-rooms-e2e-'));
  let app: App | undefined;
  let sse: SseConnection | undefined;
  try {
    // The analyst's bot has bot-to-bot mode on and is an admin of the room's group: it hears every
    // bot there — the foreign one, and Chorus's own (the writer's bot, the relay bot), never input.
    const analystBot = tg.addBot({ token: TOKENS.analyst, username: USERNAMES.analyst, firstName: 'Analyst', botToBot: true });
    tg.addBot({ token: TOKENS.writer, username: USERNAMES.writer, firstName: 'Writer' });
    tg.addBot({ token: RELAY.token, username: RELAY.username, firstName: RELAY.firstName });
    const room = tg.createGroup('Family');
    for (const t of [TOKENS.analyst, TOKENS.writer, RELAY.token]) tg.addBotToChat(room.id, t, MAYA);
    tg.setAdmins(room.id, [analystBot.id]);
    const solo = tg.createGroup('Team');
    for (const t of [TOKENS.analyst, RELAY.token]) tg.addBotToChat(solo.id, t, MAYA);
    // Maya runs the team's group; Tom is a member.
    tg.setAdmins(solo.id, [MAYA.id]);

    const dcRoom = dc.addChannel('general');
    const dcSolo = dc.addChannel('ops');
    const lee = dc.addUser('Lee');
    const mod = dc.addUser('Mod', { roles: [dc.modRoleId] });

    const llm = new FakeLlm(llmOpts);
    const relayBot = opts.relayBot ?? true;
    const allowBots = opts.allowBots ?? false;
    const parts = { dataDir, tg, dc, tgRoom: room.id, dcRoom, tgSolo: solo.id, dcSolo, relayBot, allowBots };
    const { config } = parseConfigText(configYaml(parts), 'test', {});
    app = await createApp({ config, llm, logger: silentLogger, ...(opts.clock ? { clock: opts.clock } : {}) });
    await app.start();
    const a = app;
    const roomId = a.gateway.listGroups().find((g) => g.chatId === String(room.id))!.id;
    sse = await openSse(`${a.webUrl}/api/groups/${roomId}/events`);
    const stream = sse;
    let markers = 0;
    const mine = (p: StoredMessage) => p.webhook_id !== null || p.author.id === dc.bot.id;
    return {
      app: a, llm, tg, dc, tgRoom: room.id, dcRoom, roomId, tgSolo: solo.id, dcSolo, lee, mod, sse: stream,
      tgPosts: (chatId = room.id) => tg.postsIn(chatId),
      dcPosts: (channelId = dcRoom) => dc.posts(channelId).filter(mine),
      streamed: () => stream.events.filter((e) => e.event === 'message').map((e) => e.data.entry as TranscriptEntry),
      async webHistory() {
        const res = await fetch(`${a.webUrl}/api/groups/${roomId}/messages?limit=200`);
        return ((await res.json()) as { messages: TranscriptEntry[] }).messages;
      },
      async webSays(text, opts = {}) {
        const res = await fetch(`${a.webUrl}/api/groups/${roomId}/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ text, author_name: opts.name ?? 'Omar', ...(opts.replyTo ? { reply_to: opts.replyTo } : {}) }),
        });
        const body = (await res.json()) as { entryId?: string | null };
        return { status: res.status, entryId: body.entryId ?? null };
      },
      idle: () => a.router.idle(),
      async drain() {
        const marker = `marker ${++markers}`;
        dc.humanSays(dcRoom, lee, marker);
        await until(() => stream.events.some((e) => e.event === 'message' && e.data.entry?.text === marker), 'the marker on the web');
        await until(() => tg.postsIn(room.id).some((p) => p.text.endsWith(marker)), 'the marker on Telegram');
        await until(() => [USERNAMES.analyst, USERNAMES.writer].every((u) => tg.unconfirmed().get(u) === 0), 'the agent bots to confirm their updates');
        await a.router.idle();
        return marker;
      },
      async close() {
        stream.close();
        await a.stop();
        await tg.close();
        await dc.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    sse?.close();
    await app?.stop();
    await tg.close();
    await dc.close();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}
