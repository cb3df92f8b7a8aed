/**
 * End to end: the real app (router, store, commands) with the Discord channel built from the
 * config, talking to the fake Discord through the real discord.js. Assertions are on what the
 * fake recorded and what the model was asked.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import { FakeDiscord } from '../../fakes/discord/FakeDiscord.js';
import type { FakeUser } from '../../fakes/discord/model.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';
import { until } from './harness.js';

function configYaml(dataDir: string, fake: FakeDiscord, declared: string | null): string {
  return `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - id: analyst
    name: Analyst
    persona: You are the analyst.
    avatar: "📈"
  - id: writer
    name: Writer
    persona: You are the writer.
    avatar: "https://cdn.example.test/writer.png"
  - id: critic
    name: Critic
    persona: You are the critic.
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake.token}", api_base: "${fake.apiBase}" }
${declared ? `groups:\n  - { channel: discord, chat_id: "${declared}", title: General, participants: [analyst, writer, critic] }` : ''}
`;
}

describe('discord end to end (real router)', () => {
  let fake: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let general = '';
  let maya: FakeUser;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  /** Fake Discord with #general (declared as a group of three unless `declare` is false). */
  async function boot(llm: FakeLlm, declare = true): Promise<App> {
    fake = await new FakeDiscord().start();
    general = fake.addChannel('general');
    maya = fake.addUser('Maya');
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-dc-e2e-'));
    const { config } = parseConfigText(configYaml(dataDir, fake, declare ? general : null), 'test', {});
    const a = await createApp({ config, llm, logger: silentLogger });
    await a.start();
    return a;
  }

  /** What Chorus posted in #general (webhook or bot), oldest first. */
  const posts = () => fake!.posts(general).filter((m) => m.webhook_id !== null || m.author.id === fake!.bot.id);
  const turnCalls = (llm: FakeLlm) => llm.calls.filter((c) => c.purpose === 'turn');

  it('@writer → one webhook post as "Writer" with its avatar; the echo does not start another round', async () => {
    const llm = new FakeLlm({ replies: { writer: 'Here is a tight first draft.' } });
    app = await boot(llm);
    fake!.humanSays(general, maya, '@writer draft the intro please');
    const [post] = await until(() => (posts().length >= 1 ? posts() : null), 'writer reply');
    await app.router.idle();
    expect(posts().map((p) => [p.author.username, p.content, p.avatar_url])).toEqual([
      ['Writer', 'Here is a tight first draft.', 'https://cdn.example.test/writer.png'],
    ]);
    expect(post!.webhook_id).toBeTruthy();
    expect(fake!.requestsTo('POST', /^\/webhooks\//)).toHaveLength(1);

    // The gateway echoes the webhook post; a command afterwards proves the echo was processed first.
    fake!.humanSays(general, maya, '/help');
    await until(() => posts().some((p) => p.content.startsWith('Chorus commands')), 'help reply');
    await app.router.idle();
    expect(fake!.dispatched.some((d) => d.messageId === post!.id)).toBe(true);
    expect(turnCalls(llm).map((c) => c.agent?.id)).toEqual(['writer']);
    const g = app.gateway.listGroups().find((x) => x.chatId === general)!;
    const humans = (await app.gateway.messages(g.id, { limit: 100 })).filter((e) => e.kind === 'human');
    expect(humans.map((e) => e.text)).toEqual(['@writer draft the intro please', '/help']);
  });

  it('a plain message → voluntary replies as the router decides; passes never reach Discord', async () => {
    const llm = new FakeLlm({ replies: { analyst: 'Margins improved.', writer: '[PASS]', critic: 'The guidance is vague.' } });
    app = await boot(llm);
    fake!.humanSays(general, maya, 'Thoughts on the quarter, anyone?');
    await until(() => posts().length >= 2, 'two voluntary replies');
    await app.router.idle();
    expect(posts().map((p) => [p.author.username, p.content])).toEqual([
      ['Analyst', 'Margins improved.'],
      ['Critic', 'The guidance is vague.'],
    ]);
    expect(turnCalls(llm).map((c) => [c.agent?.id, c.mustReply ?? false])).toEqual([
      ['analyst', false],
      ['writer', false],
      ['critic', false],
    ]);
  });

  it('/group create analyst writer in a channel: admins may, others are told why not', async () => {
    const llm = new FakeLlm();
    app = await boot(llm, false);
    const mod = fake!.addUser('Moderator', { roles: [fake!.modRoleId] });
    fake!.humanSays(general, maya, '/group create analyst writer');
    await until(() => posts().some((p) => /admin/i.test(p.content)), 'refusal');
    expect(app.gateway.listGroups().filter((g) => g.chatId === general)).toEqual([]);

    fake!.humanSays(general, mod, '/group create analyst writer');
    const g = await until(() => app!.gateway.listGroups().find((x) => x.channel === 'discord' && x.chatId === general), 'group created');
    expect(g.participants).toEqual(['analyst', 'writer']);
    expect(g.title).toBe('#general');
    await until(() => posts().length >= 2, 'confirmation');
    expect(posts()[1]!.content).toMatch(/Analyst.*Writer/);
    // Command replies come from the system voice (the webhook under its own name), never an agent.
    expect(posts().every((p) => p.author.username === 'Chorus')).toBe(true);
    expect(turnCalls(llm)).toEqual([]);
  });

  it("a reply to Writer's message addresses Writer", async () => {
    const llm = new FakeLlm({ replies: { writer: ['Draft one.', 'Shorter draft.'] } });
    app = await boot(llm);
    fake!.humanSays(general, maya, '@writer a draft please');
    const [first] = await until(() => (posts().length >= 1 ? posts() : null), 'first draft');
    await app.router.idle();

    fake!.humanSays(general, maya, 'make it shorter', { replyTo: first!.id });
    await until(() => posts().length >= 2, 'second draft');
    await app.router.idle();
    expect(posts().map((p) => [p.author.username, p.content])).toEqual([
      ['Writer', 'Draft one.'],
      ['Writer', 'Shorter draft.'],
    ]);
    // Only Writer was asked, and as an addressed turn (no voluntary round for the others).
    expect(turnCalls(llm).map((c) => [c.agent?.id, c.mustReply])).toEqual([
      ['writer', true],
      ['writer', true],
    ]);
  });
});
