/**
 * Reactions on Discord, end to end: the real app with the Discord channel built from the config,
 * talking to the fake Discord through the real discord.js.
 *
 * In: a person's reaction (MESSAGE_REACTION_ADD / _REMOVE, which the gateway sends only with the
 * GuildMessageReactions intent) is recorded on the entry the message is, and taken back; custom
 * emoji, the gateway bot's own reactions and other bots' are not. Out: webhooks cannot react, so
 * with `agent_reactions: bot` the gateway bot adds and takes back its own reaction for the agents
 * (one per message and emoji however many agents hold it); with `off` Discord is not asked.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { Channel } from '../../../src/core/ports.js';
import type { AgentDef, ChatRef, TranscriptEntry } from '../../../src/core/types.js';
import { FakeDiscord } from '../../fakes/discord/FakeDiscord.js';
import { Perm, snowflake, type FakeUser, type StoredMessage } from '../../fakes/discord/model.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { CapturingLogger } from '../../helpers/logger.js';
import { until } from './harness.js';

describe('discord: reactions (real app)', () => {
  let fake: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let logger: CapturingLogger;
  let general = '';
  let groupId = '';
  let maya: FakeUser;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  function yaml(agentReactions: 'off' | 'bot'): string {
    return `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: writer, name: Writer, persona: You are the writer. }
  - { id: analyst, name: Analyst, persona: You are the analyst. }
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20, reply_strategy: mention_only }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake!.token}", api_base: "${fake!.apiBase}", agent_reactions: ${agentReactions} }
groups:
  - { channel: discord, chat_id: "${general}", title: General, participants: [writer, analyst] }
`;
  }

  async function startApp(agentReactions: 'off' | 'bot'): Promise<void> {
    logger = new CapturingLogger();
    const { config } = parseConfigText(yaml(agentReactions), 'test', {});
    app = await createApp({ config, llm: new FakeLlm({ replies: { writer: 'A first draft.' } }), logger });
    await app.start();
    groupId = app.gateway.listGroups().find((g) => g.chatId === general)!.id;
  }

  async function boot(agentReactions: 'off' | 'bot' = 'off', beforeStart?: (f: FakeDiscord) => void): Promise<void> {
    fake = await new FakeDiscord().start();
    general = fake.addChannel('general');
    maya = fake.addUser('Maya');
    beforeStart?.(fake);
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-dc-react-'));
    await startApp(agentReactions);
  }

  /** Maya asks the writer; resolves with the writer's webhook post once the round is over. */
  async function writerPost(): Promise<StoredMessage> {
    fake!.humanSays(general, maya, '@writer draft it');
    const post = await until(() => fake!.posts(general).find((m) => m.webhook_id !== null && m.content === 'A first draft.'), 'the writer\'s post');
    await app!.router.idle();
    return post;
  }

  const entries = () => app!.gateway.messages(groupId, { limit: 100 });
  const entryOf = async (platformId: string): Promise<TranscriptEntry> =>
    (await entries()).find((e) => e.platformMessageId === platformId || e.postedIds?.includes(platformId))!;
  /** Polls until the entry of `platformId` carries `n` reactions (the app handles them in the background). */
  async function reactionsWhen(platformId: string, check: (r: Array<[string, string]>) => boolean): Promise<Array<[string, string]>> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = ((await entryOf(platformId)).reactions ?? []).map((x) => [x.emoji, x.byKey] as [string, string]);
      if (check(r)) return r;
      if (Date.now() > deadline) throw new Error(`timed out; reactions: ${JSON.stringify(r)}`);
      await new Promise((res) => setTimeout(res, 20));
    }
  }
  const key = (u: FakeUser) => `discord:${u.id}`;
  const discord = () => app!.channels.find((c) => c.kind === 'discord') as Channel;
  const agentDef = (id: string) => app!.gateway.listAgents().find((a) => a.id === id) as AgentDef;
  const chat = (): ChatRef => ({ channel: 'discord', chatId: general });
  const reactionRequests = (method: string) => fake!.requestsTo(method, /\/reactions\//);

  it("a person's 👍 on an agent's webhook post is recorded on that entry, under their name, and taken back", async () => {
    await boot();
    const post = await writerPost();
    fake!.humanReacts(general, maya, post.id, '👍');
    await reactionsWhen(post.id, (r) => r.length === 1);
    const entry = await entryOf(post.id);
    expect(entry.agentId).toBe('writer');
    expect(entry.reactions).toEqual([expect.objectContaining({ emoji: '👍', by: 'Maya', byKey: key(maya) })]);
    // The agents hear of it in a note; no round starts.
    expect((await entries()).some((e) => e.reactionOf?.id === entry.id)).toBe(true);

    fake!.humanReacts(general, maya, post.id, '👍', false);
    expect(await reactionsWhen(post.id, (r) => r.length === 0)).toEqual([]);
  });

  it("a reaction on a person's message is recorded on theirs; a custom emoji and other bots' reactions are not", async () => {
    await boot();
    const post = await writerPost();
    const asked = fake!.messages.find((m) => m.content === '@writer draft it')!;
    const sam = fake!.addUser('Sam');
    const otherBot = fake!.addUser('OtherBot', { bot: true });
    fake!.humanReacts(general, maya, post.id, { name: 'party_blob', id: snowflake() });
    fake!.humanReacts(general, otherBot, post.id, '🤖');
    fake!.humanReacts(general, sam, asked.id, '🎉');
    // In order with the chat's messages: by the time Sam's is kept, the ones before it were seen.
    expect(await reactionsWhen(asked.id, (r) => r.length === 1)).toEqual([['🎉', key(sam)]]);
    fake!.humanReacts(general, sam, post.id, '✅');
    expect(await reactionsWhen(post.id, (r) => r.length > 0)).toEqual([['✅', key(sam)]]);
    expect(logger.text()).toContain('custom emoji :party_blob:');
  });

  it('the Message, Reaction and User partials: a reaction on a post from before a restart (not in discord.js\'s cache) is still recorded', async () => {
    await boot();
    const post = await writerPost();
    await app!.stop();
    await startApp('off');
    fake!.humanReacts(general, maya, post.id, '❤️');
    expect(await reactionsWhen(post.id, (r) => r.length === 1)).toEqual([['❤️', key(maya)]]);
  });

  it('a moderator clearing all reactions (or one emoji) takes back the ones seen since start', async () => {
    await boot();
    const post = await writerPost();
    const sam = fake!.addUser('Sam');
    fake!.humanReacts(general, maya, post.id, '👍');
    fake!.humanReacts(general, sam, post.id, '👍');
    fake!.humanReacts(general, maya, post.id, '🎉');
    await reactionsWhen(post.id, (r) => r.length === 3);
    fake!.removeReactionEmoji(general, post.id, '👍');
    expect(await reactionsWhen(post.id, (r) => r.length === 1)).toEqual([['🎉', key(maya)]]);
    fake!.removeAllReactions(general, post.id);
    expect(await reactionsWhen(post.id, (r) => r.length === 0)).toEqual([]);
    expect(logger.text()).toContain('earlier ones stay recorded');
  });

  it('agent_reactions: bot — the gateway bot adds its reaction with the first agent and takes it back with the last; its own reactions are not recorded as people\'s', async () => {
    await boot('bot');
    const post = await writerPost();
    expect(await discord().react(chat(), agentDef('writer'), post.id, '👍', true)).toBe(true);
    expect(fake!.reactionsOn(post.id)).toEqual([['👍', fake!.bot.id]]);
    expect(reactionRequests('PUT').map((r) => [r.path, r.status])).toEqual([[`/channels/${general}/messages/${post.id}/reactions/%F0%9F%91%8D/@me`, 204]]);
    // A second agent with the same emoji: still one bot reaction, no second PUT.
    expect(await discord().react(chat(), agentDef('analyst'), post.id, '👍', true)).toBe(true);
    expect(reactionRequests('PUT')).toHaveLength(1);
    // The first takes it back: the analyst still holds it.
    expect(await discord().react(chat(), agentDef('writer'), post.id, '👍', false)).toBe(true);
    expect(reactionRequests('DELETE')).toHaveLength(0);
    expect(fake!.reactionsOn(post.id)).toEqual([['👍', fake!.bot.id]]);
    // The last: gone.
    expect(await discord().react(chat(), agentDef('analyst'), post.id, '👍', false)).toBe(true);
    expect(reactionRequests('DELETE').map((r) => r.status)).toEqual([204]);
    expect(fake!.reactionsOn(post.id)).toEqual([]);

    // The gateway echoes the bot's reactions (this one stays); none is a person's. Maya's is the sync point.
    expect(await discord().react(chat(), agentDef('writer'), post.id, '🔥', true)).toBe(true);
    fake!.humanReacts(general, maya, post.id, '👀');
    expect(await reactionsWhen(post.id, (r) => r.length > 0)).toEqual([['👀', key(maya)]]);
    expect(logger.text()).toContain("the gateway bot's own reaction");

    // Refusals are answered false, never thrown: not an emoji (400 10014), an unknown message (404 10008).
    expect(await discord().react(chat(), agentDef('writer'), post.id, 'yes', true)).toBe(false);
    expect(await discord().react(chat(), agentDef('writer'), snowflake(), '👍', true)).toBe(false);
    expect(reactionRequests('PUT').map((r) => r.status)).toEqual([204, 204, 400, 404]);
    expect(logger.text()).toContain('Discord does not know that emoji');
    expect(logger.text()).toContain('the message is gone');
  });

  it('agent_reactions: off — react answers false and Discord is not asked', async () => {
    await boot('off');
    const post = await writerPost();
    expect(await discord().react(chat(), agentDef('writer'), post.id, '👍', true)).toBe(false);
    expect(await discord().react(chat(), agentDef('writer'), post.id, '👍', false)).toBe(false);
    expect(reactionRequests('PUT')).toHaveLength(0);
    expect(reactionRequests('DELETE')).toHaveLength(0);
    expect(fake!.reactionsOn(post.id)).toEqual([]);
  });

  it('agent_reactions: bot without Add Reactions: named at start, shown in the group\'s warnings, and a 403 answers false', async () => {
    await boot('bot', (f) => f.denyBot(general, Perm.AddReactions));
    const warning = logger.lines.find((l) => l.level === 'warn' && typeof l.obj === 'string' && l.obj.includes('lacks Add Reactions in #general'));
    expect(warning?.obj).toMatch(/agent_reactions: off/);
    expect(discord().warnings(chat(), [])).toEqual([expect.stringContaining('lacks Add Reactions in #general')]);

    const post = await writerPost();
    expect(await discord().react(chat(), agentDef('writer'), post.id, '👍', true)).toBe(false);
    expect(reactionRequests('PUT').map((r) => r.status)).toEqual([403]);
    expect(fake!.reactionsOn(post.id)).toEqual([]);
    expect(logger.text()).toContain('the bot lacks Add Reactions or Read Message History');
    // Not kept as shown: once someone else has reacted 👍, Read Message History is enough and it goes through.
    fake!.humanReacts(general, maya, post.id, '👍');
    await reactionsWhen(post.id, (r) => r.length === 1);
    expect(await discord().react(chat(), agentDef('writer'), post.id, '👍', true)).toBe(true);
    expect(fake!.reactionsOn(post.id)).toEqual([['👍', maya.id], ['👍', fake!.bot.id]]);
  });
});
