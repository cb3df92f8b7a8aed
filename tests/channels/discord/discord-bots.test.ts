/**
 * Bots that are not Chorus's agents on Discord (`allow_bots: true`): another bot's messages and
 * another integration's webhook posts are marked as a bot's, never a person's; a bot's commands
 * are refused whatever its roles (told once); an agent answers a bot only within the pair's budget
 * (`limits.bot_pair_events_per_minute`). The real app and discord.js against the fake Discord.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { LlmProvider } from '../../../src/core/ports.js';
import type { ToolCall } from '../../../src/core/toolTypes.js';
import { FakeDiscord } from '../../fakes/discord/FakeDiscord.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryTools, StepLlm } from '../../helpers/tool-fakes.js';
import { setup, until, type DiscordSetup } from './harness.js';

const call = (id: string, name: string): ToolCall => ({ id, name, input: { id: 42 } });
const BOT_NOTICE = /^⚠ Robo is a bot: Chorus takes commands from people only/;

describe('discord: bots that are not agents, marked as bots', () => {
  let s: DiscordSetup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it("another bot's message and another integration's webhook post are a bot's; a person's is not", async () => {
    s = await setup({ config: { allow_bots: true } });
    const robo = s.fake.addUser('Robo', { bot: true });
    await s.channel.start(s.host);
    s.fake.humanSays(s.chatId, robo, 'beep');
    s.fake.foreignWebhookSays(s.chatId, 'Build status', 'build 7 passed');
    s.fake.humanSays(s.chatId, s.maya, 'thanks');
    const got = await s.host.waitForReceived(3);
    expect(got.map((m) => [m.text, m.authorKind])).toEqual([
      ['beep', 'bot'],
      ['build 7 passed', 'bot'],
      ['thanks', undefined],
    ]);
  });
});

describe('discord: bots that are not agents (real app, allow_bots)', () => {
  let fake: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let general = '';

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(llm: LlmProvider, tools?: MemoryTools, perMinute = 1000): Promise<string> {
    fake = await new FakeDiscord().start();
    general = fake.addChannel('general');
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-dc-bots-'));
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: You are the analyst. }
  - { id: writer, name: Writer, persona: You are the writer. }
group_defaults:
  { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20, reply_strategy: mention_only }
limits: { user_messages_per_minute: ${perMinute}, bot_pair_events_per_minute: 3 }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake.token}", api_base: "${fake.apiBase}", allow_bots: true }
groups:
  - { channel: discord, chat_id: "${general}", title: General, participants: [analyst, writer] }
`;
    const { config } = parseConfigText(yaml, 'test', {});
    app = await createApp({ config, llm, ...(tools ? { tools } : {}), logger: silentLogger });
    await app.start();
    return app.gateway.listGroups().find((g) => g.chatId === general)!.id;
  }

  /** What Chorus posted in #general: [webhook username, content]. */
  const posts = () =>
    fake!.posts(general)
      .filter((m) => m.webhook_id !== null)
      .map((m) => [m.author.username, m.content] as [string, string]);
  const group = (id: string) => app!.router.groups.get(id)!;

  it('a bot with a moderator role cannot approve a tool call or mute an agent; it is told once', async () => {
    const tools = new MemoryTools();
    const llm = new StepLlm([{ calls: [call('c1', 'orders__cancel')] }, 'Order 42 is cancelled.']);
    const groupId = await boot(llm, tools);
    const maya = fake!.addUser('Maya');
    const mod = fake!.addUser('Moderator', { roles: [fake!.modRoleId] });
    const robo = fake!.addUser('Robo', { bot: true, roles: [fake!.modRoleId] });
    fake!.humanSays(general, maya, '@analyst cancel order 42');
    const waiting = await until(() => group(groupId).state.tools?.find((c) => c.approval === 'waiting'), 'a call');

    fake!.humanSays(general, robo, `/approve ${waiting.id}`);
    fake!.humanSays(general, robo, '/group mute writer');
    fake!.humanSays(general, robo, `/deny ${waiting.id}`);
    const recorded = () => group(groupId).transcript.filter((e) => e.kind === 'human' && e.authorKind === 'bot');
    await until(() => recorded().length === 3, "the bot's three commands recorded");
    await app!.router.idle();
    // Kept (hidden from the agents, like every command line), never run.
    expect(recorded().map((e) => [e.text, e.hiddenFromAgents])).toEqual([
      [`/approve ${waiting.id}`, true],
      ['/group mute writer', true],
      [`/deny ${waiting.id}`, true],
    ]);
    expect(tools.cancelled).toBe(0);
    expect(group(groupId).state.tools?.find((c) => c.id === waiting.id)?.approval).toBe('waiting');
    expect(group(groupId).state.muted).toEqual([]);
    await until(() => posts().some(([, c]) => BOT_NOTICE.test(c)), 'the notice');
    expect(posts().filter(([, c]) => BOT_NOTICE.test(c))).toHaveLength(1);

    // A person with the same role still can: the call was waiting all along.
    fake!.humanSays(general, mod, `/approve ${waiting.id}`);
    await until(() => posts().some(([, c]) => c === 'Order 42 is cancelled.'), 'the answer after the approval');
    expect(tools.cancelled).toBe(1);
    expect(posts().filter(([, c]) => BOT_NOTICE.test(c))).toHaveLength(1);
  });

  it('a bot pinging an agent six times against a budget of three gets three answers', async () => {
    let n = 0;
    const llm = new FakeLlm({ replies: { analyst: () => `pong ${++n}` } });
    const groupId = await boot(llm);
    const robo = fake!.addUser('Robo', { bot: true });
    for (let i = 0; i < 6; i++) {
      // One at a time, as a bot answering each pong would: each ping is a round of its own.
      fake!.humanSays(general, robo, `@analyst ping ${i}`);
      await until(() => group(groupId).transcript.some((e) => e.text === `@analyst ping ${i}`), `ping ${i} recorded`);
      await app!.router.idle();
    }
    expect(posts().filter(([who]) => who === 'Analyst').map(([, c]) => c)).toEqual(['pong 1', 'pong 2', 'pong 3']);
    expect(llm.callsFor('analyst')).toHaveLength(3);
    // Every ping is kept, as a bot's.
    const pings = group(groupId).transcript.filter((e) => e.kind === 'human');
    expect(pings.map((e) => [e.authorName, e.authorKind])).toEqual(Array(6).fill(['Robo', 'bot']));
  });

  it('a bot over the rate limit is told once, not per message (a bot answering each notice would loop)', async () => {
    const groupId = await boot(new FakeLlm(), undefined, 2);
    const robo = fake!.addUser('Robo', { bot: true });
    const maya = fake!.addUser('Maya');
    for (let i = 0; i < 5; i++) fake!.humanSays(general, robo, `beep ${i}`);
    fake!.humanSays(general, maya, 'marker');
    await until(() => group(groupId).transcript.some((e) => e.text === 'marker'), 'the marker recorded');
    await app!.router.idle();
    const notice = '⚠ Robo, you are sending messages faster than 2 a minute';
    const overLimit = () => posts().filter(([, c]) => c.startsWith(notice));
    const kept = group(groupId).transcript.filter((e) => e.kind === 'human').map((e) => e.text);
    expect(kept).toEqual(['beep 0', 'beep 1', 'marker']);
    await until(() => overLimit().length > 0, 'the notice');
    expect(overLimit()).toHaveLength(1);
  });
});
