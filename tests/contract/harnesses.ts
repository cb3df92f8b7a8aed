/**
 * How the channel conformance suite drives each channel: the real adapter against its fake
 * platform (Telegram Bot API, Discord REST + gateway, the web API over HTTP), a host in place of
 * the core, and the platform-side actions a person takes there. A channel says which events its
 * platform reports at all; the suite holds every channel to the same checks for the rest.
 */
import { DiscordChannel } from '../../src/channels/discord/DiscordChannel.js';
import { TelegramChannel } from '../../src/channels/telegram/TelegramChannel.js';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import type { Channel, ChannelHost, PlatformEvent } from '../../src/core/ports.js';
import type { AgentDef, ChatRef } from '../../src/core/types.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { discordConfig, WRITER, ANALYST } from '../channels/discord/harness.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import { agentDef, MAYA, RELAY, TOKENS, TOM, USERNAMES } from '../channels/telegram/harness.js';
import { FakeGateway, TEST_AGENTS } from '../channels/web/fake-gateway.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { RecordingHost } from '../helpers/recording-host.js';

export type EventKind = 'message' | 'edit' | 'delete' | 'reaction' | 'membership' | 'rekey';

export interface ConformanceHarness {
  channel: Channel;
  host: ChannelHost;
  /** A chat where `agent` posts and people talk. */
  chat: ChatRef;
  agent: AgentDef;
  /** A person who may run admin commands in `chat`, and one who may not (null: everyone may). */
  admin: string;
  notAdmin: string | null;
  /** A person says `text` in the chat; the platform's id of the message. */
  humanSays(text: string): Promise<string>;
  /** What the platform shows in the chat, oldest first; null where the page shows the transcript itself. */
  shown(): Array<{ id: string; author: string; text: string }> | null;
  /** Typing signals the platform has seen (null: the platform has none to see). */
  typingSignals(): number | null;
  /** Emoji the platform shows on a message for the agents (null: the page shows them from the transcript). */
  agentReactions(platformMessageId: string): string[] | null;
  /** What a person does on the platform; only the events the platform reports. */
  edit?(platformMessageId: string, text: string): Promise<void>;
  remove?(platformMessageId: string): Promise<void>;
  react?(platformMessageId: string, emoji: string, on: boolean): Promise<void>;
  /** The agent's bot is taken out of the chat, or put back. */
  membership?(joined: boolean): Promise<void>;
  /** Another chat the agent is in gets a new platform id; both ids. */
  rekey?(): Promise<{ oldChatId: string; newChatId: string }>;
  close(): Promise<void>;
}

export interface ChannelUnderTest {
  name: 'telegram' | 'discord' | 'web';
  /** The events this platform reports to a bot at all. */
  reports: ReadonlySet<EventKind>;
  make(): Promise<ConformanceHarness>;
}

/**
 * Telegram: a supergroup with the analyst's and the writer's bots (the writer's is the system
 * voice, so the suite can tell the two apart), both admins, so people's reactions reach them; a
 * relay bot for people of other chats. Telegram tells bots of no deletion.
 */
const telegram: ChannelUnderTest = {
  name: 'telegram',
  reports: new Set(['message', 'edit', 'reaction', 'membership', 'rekey']),
  async make() {
    const fake = await FakeTelegram.start();
    const agent = agentDef('analyst');
    const voice = agentDef('writer');
    fake.addBot({ token: TOKENS.analyst, username: USERNAMES.analyst, firstName: agent.name });
    fake.addBot({ token: TOKENS.writer, username: USERNAMES.writer, firstName: voice.name });
    fake.addBot({ token: RELAY.token, username: RELAY.username, firstName: RELAY.firstName });
    const group = fake.createGroup('Conformance room');
    fake.setAdmins(group.id, [MAYA.id]);
    for (const token of [TOKENS.analyst, TOKENS.writer, RELAY.token]) fake.addBotToChat(group.id, token, MAYA);
    for (const token of [TOKENS.analyst, TOKENS.writer]) fake.promoteBot(group.id, token, MAYA);
    const channel = new TelegramChannel({
      config: { enabled: true, api_root: fake.apiRoot, auto_create_groups: true, admins: [], relay_token: RELAY.token },
      agents: [agent, voice],
      logger: new CapturingLogger(),
      pollTimeoutSeconds: 5,
    });
    const keys = new Map<string, number>();
    return {
      channel,
      host: new RecordingHost([agent, voice]),
      agent,
      chat: { channel: 'telegram', chatId: String(group.id), viaAgentId: 'writer' },
      admin: String(MAYA.id),
      notAdmin: String(TOM.id),
      async humanSays(text) {
        const m = fake.humanSays(group.id, MAYA, text);
        keys.set(String(m.messageId), m.key);
        return String(m.messageId);
      },
      shown: () => fake.transcript(group.id).map((m) => ({ id: String(m.id), author: m.author, text: m.text })),
      typingSignals: () => fake.callsOf('sendChatAction').length,
      agentReactions: (id) => Object.values(fake.reactions.shownBy(keys.get(id)!)).flat(),
      async edit(id, text) {
        fake.humanEdits({ key: keys.get(id)! }, text);
      },
      async react(id, emoji, on) {
        fake.humanReacts(group.id, MAYA, { key: keys.get(id)! }, on ? [] : [emoji], on ? [emoji] : []);
      },
      async membership(joined) {
        if (joined) fake.addBotToChat(group.id, TOKENS.analyst, MAYA);
        else fake.removeBotFromChat(group.id, TOKENS.analyst, MAYA);
      },
      // Telegram moves a basic group to a new id when it becomes a supergroup.
      async rekey() {
        const basic = fake.createGroup('Small team', { type: 'group' });
        fake.addBotToChat(basic.id, TOKENS.analyst, MAYA);
        return { oldChatId: String(basic.id), newChatId: String(fake.migrate(basic.id)) };
      },
      close: () => fake.close(),
    };
  },
};

/**
 * Discord: one channel; agents post through its webhook, the gateway bot shows their reactions
 * (`agent_reactions: bot`). Bots are not members of a channel there, and ids never change.
 */
const discord: ChannelUnderTest = {
  name: 'discord',
  reports: new Set(['message', 'edit', 'delete', 'reaction']),
  async make() {
    const fake = await new FakeDiscord().start();
    const chatId = fake.addChannel('general');
    const maya = fake.addUser('Maya');
    const agents = [WRITER, ANALYST];
    const channel = new DiscordChannel({ config: discordConfig(fake, { agent_reactions: 'bot' }), agents, logger: new CapturingLogger() });
    return {
      channel,
      host: new RecordingHost(agents),
      agent: WRITER,
      chat: { channel: 'discord', chatId },
      admin: fake.owner.id,
      notAdmin: maya.id,
      humanSays: async (text) => fake.humanSays(chatId, maya, text),
      shown: () => fake.posts(chatId).map((m) => ({ id: m.id, author: m.author.username, text: m.content })),
      typingSignals: () => fake.typing.length,
      agentReactions: (id) => fake.reactionsOn(id).filter(([, by]) => by === fake.bot.id).map(([emoji]) => emoji),
      edit: async (id, text) => fake.humanEdits(id, text),
      remove: async (id) => fake.humanDeletes(chatId, id),
      react: async (id, emoji, on) => fake.humanReacts(chatId, maya, id, emoji, on),
      async close() {
        await channel.stop();
        await fake.close();
      },
    };
  },
};

/**
 * The web: people post over the HTTP API; the page shows the transcript itself, so the channel's
 * posts, edits and reactions change nothing there. Edits, deletions and reactions on the page are
 * calls of the gateway API, which answers the page at once, not platform events.
 */
const web: ChannelUnderTest = {
  name: 'web',
  reports: new Set(['message']),
  async make() {
    const gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
    const channel = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS });
    let n = 0;
    return {
      channel,
      host: gw,
      agent: TEST_AGENTS[0]!,
      chat: { channel: 'web', chatId: 'lobby' },
      admin: 'Maya',
      notAdmin: null,
      async humanSays(text) {
        const clientId = `conformance-${++n}`;
        const res = await fetch(`${channel.url}/api/groups/lobby/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ text, author_name: 'Maya', client_id: clientId }),
        });
        if (res.status >= 300) throw new Error(`web: POST message answered ${res.status}: ${await res.text()}`);
        return clientId;
      },
      shown: () => null,
      typingSignals: () => null,
      agentReactions: () => null,
      close: () => channel.stop(),
    };
  },
};

export const CHANNELS: readonly ChannelUnderTest[] = [telegram, discord, web];

/** Every event the channel hands its host, in order (the host still handles each). */
export function recordEvents(host: ChannelHost): PlatformEvent[] {
  const seen: PlatformEvent[] = [];
  const inner = host.handle.bind(host) as (ev: PlatformEvent) => Promise<unknown>;
  host.handle = (async (ev: PlatformEvent) => {
    seen.push(ev);
    return inner(ev);
  }) as ChannelHost['handle'];
  return seen;
}
