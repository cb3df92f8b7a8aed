/**
 * Tool calls on Discord, end to end: the real app with a model scripted to call tools and tools in
 * memory, the Discord channel talking to the fake Discord. Webhook messages cannot carry buttons,
 * so a request for approval is posted as text under the agent's webhook identity (the text names
 * /approve and /deny) and people type the command; finished steps are posted under the agent's
 * identity as `show_tools` says.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { ToolCall } from '../../../src/core/toolTypes.js';
import { FakeDiscord } from '../../fakes/discord/FakeDiscord.js';
import type { FakeUser } from '../../fakes/discord/model.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryTools, StepLlm, type Step } from '../../helpers/tool-fakes.js';
import { until } from './harness.js';

const call = (id: string, name: string, input: Record<string, unknown> = { id: 42 }): ToolCall => ({ id, name, input });

describe('discord: tool calls (real app)', () => {
  let fake: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let general = '';
  let maya: FakeUser;
  let tools: MemoryTools;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(steps: Step[]): Promise<string> {
    fake = await new FakeDiscord().start();
    general = fake.addChannel('general');
    maya = fake.addUser('Maya');
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-dc-tools-'));
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: You are the analyst., avatar: "https://cdn.example.test/analyst.png" }
  - { id: writer, name: Writer, persona: You are the writer. }
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20, reply_strategy: mention_only }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake.token}", api_base: "${fake.apiBase}" }
groups:
  - { channel: discord, chat_id: "${general}", title: General, participants: [analyst, writer] }
`;
    const { config } = parseConfigText(yaml, 'test', {});
    tools = new MemoryTools();
    app = await createApp({ config, llm: new StepLlm(steps), tools, logger: silentLogger });
    await app.start();
    return app.gateway.listGroups().find((g) => g.chatId === general)!.id;
  }

  /** What Chorus posted in #general, oldest first: [webhook username, content]. */
  const posts = () => fake!.posts(general).filter((m) => m.webhook_id !== null).map((m) => [m.author.username, m.content] as [string, string]);
  const has = (text: string) => until(() => posts().some(([, c]) => c === text) || null, `"${text}"`);

  it('the request is text under the agent\'s webhook identity (no buttons); /approve typed by an admin runs the tool once, a non-admin\'s does not', async () => {
    await boot([{ text: 'Cancelling.', calls: [call('c1', 'orders__cancel')] }, 'Order 42 is cancelled.']);
    fake!.humanSays(general, maya, '@analyst cancel order 42');
    const [, request] = await until(() => posts().find(([, c]) => c.includes('wants to use')) ?? null, 'request for approval');
    const [, id, digest] = /\/approve (\S+) or refuse with \/deny \1 \(arguments #([0-9a-f]{10})\)$/.exec(request)!;
    expect(posts()).toEqual([['Analyst', `🔧 Analyst wants to use orders.cancel\n\`\`\`json\n{\n  "id": 42\n}\n\`\`\`\nApprove with /approve ${id} or refuse with /deny ${id} (arguments #${digest})`]]);
    // A plain webhook execute: content and identity, nothing interactive.
    const bodies = fake!.requestsTo('POST', /^\/webhooks\//).map((r) => r.body as Record<string, unknown>);
    expect(bodies.every((b) => b.components === undefined)).toBe(true);
    expect(bodies[0]).toMatchObject({ username: 'Analyst', avatar_url: 'https://cdn.example.test/analyst.png' });

    fake!.humanSays(general, maya, `/approve ${id}`);
    await has('⚠ only chat admins may approve or deny orders.cancel');
    expect(tools.cancelled).toBe(0);

    const mod = fake!.addUser('Moderator', { roles: [fake!.modRoleId] });
    fake!.humanSays(general, mod, `/approve ${id}`);
    await has('Order 42 is cancelled.');
    await app!.router.idle();
    expect(tools.cancelled).toBe(1);
    expect(posts().slice(1)).toEqual([
      ['Chorus', '⚠ only chat admins may approve or deny orders.cancel'],
      ['Chorus', `✅ Moderator approved orders.cancel (${id})`],
      ['Analyst', '🔧 Analyst used orders.cancel'],
      ['Analyst', 'Order 42 is cancelled.'],
    ]);
  });

  it('show_tools full posts the step with its arguments and result under the agent; none posts no step', async () => {
    const groupId = await boot([{ calls: [call('c1', 'orders__lookup')] }, 'Shipped (full).', { calls: [call('c2', 'orders__lookup')] }, 'Shipped (none).']);
    await app!.gateway.updateConfig(groupId, { show_tools: 'full' });
    fake!.humanSays(general, maya, '@analyst where is order 42?');
    await has('Shipped (full).');
    await app!.router.idle();
    await app!.gateway.updateConfig(groupId, { show_tools: 'none' });
    fake!.humanSays(general, maya, '@analyst and now?');
    await has('Shipped (none).');
    await app!.router.idle();
    expect(tools.lookups).toBe(2);
    expect(posts()).toEqual([
      ['Analyst', '🔧 Analyst used orders.lookup\n{\n "id": 42\n}\n→ order 42 shipped'],
      ['Analyst', 'Shipped (full).'],
      ['Analyst', 'Shipped (none).'],
    ]);
  });
});
