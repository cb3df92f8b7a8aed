/**
 * Discord with two instances on one database: the gateway connection is a lease
 * (`discord:gateway`), so only one instance is logged in (Discord would deliver each message to
 * every session); the other posts through the webhooks for the groups it runs; when the holder
 * goes away the other logs in within the lease time and the bot keeps answering. What the holder
 * reads for a group the other instance runs (a message, an edit, a reaction) reaches that group
 * through the shared inbox. Real discord.js against the fake Discord, two cluster members in one
 * process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { DISCORD_GATEWAY_KEY } from '../../src/channels/discord/DiscordChannel.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import type { FakeUser } from '../fakes/discord/model.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { until } from '../channels/discord/harness.js';

let db: TestDatabase | null = null;
let fake: FakeDiscord;
let general = '';
let ops = '';
let maya: FakeUser;
let dir: string;
const apps: App[] = [];

beforeAll(async () => {
  db = await testDatabase('discordgw');
  fake = await new FakeDiscord().start();
  general = fake.addChannel('general');
  ops = fake.addChannel('ops');
  maya = fake.addUser('Maya');
  dir = await mkdtemp(join(tmpdir(), 'chorus-discordgw-'));
}, 120_000);

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop().catch(() => undefined)));
  await fake?.close();
  await db?.drop().catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

async function instance(id: string): Promise<App> {
  const { config } = parseConfigText(
    `data_dir: ${JSON.stringify(join(dir, id))}
storage: { kind: postgres, url: "${db!.url}" }
cluster: { instance_id: ${id}, lease_seconds: 2 }
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are the analyst." }
  - { id: writer, name: Writer, persona: "You are the writer." }
group_defaults: { cooldown_seconds: 0 }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake.token}", api_base: "${fake.apiBase}" }
groups:
  - { channel: discord, chat_id: "${general}", title: General, participants: [analyst, writer] }
  - { channel: discord, chat_id: "${ops}", title: Ops, participants: [analyst, writer] }
`,
    `${id}.yaml`,
    {},
  );
  const llm = new FakeLlm({ fallback: (req, n) => (req.mustReply ? `${req.agent?.id} here (${id} #${n})` : '[PASS]') });
  const app = await createApp({ config, llm, logger: silentLogger });
  apps.push(app);
  await app.start();
  return app;
}

describe('the Discord gateway with two instances (PostgreSQL)', () => {
  it('one gateway session at a time, posting from the group owner, failover within the lease', async (ctx) => {
    if (!db) return ctx.skip();
    // Sample the fake's open gateway sessions all along: never two at once.
    let most = 0;
    let phase = 'start';
    const seen: string[] = [];
    const sampler = setInterval(() => {
      most = Math.max(most, fake.connectedSessions);
      if (fake.connectedSessions > 1) seen.push(phase);
    }, 5);
    try {
      const [a, b] = await Promise.all([instance('a'), instance('b')]);
      const holders = () => [a, b].filter((x) => x.cluster!.status().connections?.includes(DISCORD_GATEWAY_KEY));
      await until(() => holders().length === 1 && fake.connectedSessions === 1, 'one instance to hold the gateway');
      // Both are ready: the other one posts (for the groups it runs) without a gateway session.
      for (const x of [a, b]) await until(() => x.gateway.readiness().channels?.['discord']?.ok === true || undefined, 'discord ready on both');
      const states = [a, b].map((x) => x.gateway.readiness().channels?.['discord']?.state).sort();
      expect(states).toEqual(['posting', 'ready']);

      const replies = () => fake.posts(general).filter((m) => m.webhook_id !== null && / here \(/.test(m.content));
      fake.humanSays(general, maya, '@writer hello?');
      await until(() => replies().some((p) => p.content.startsWith('writer here')), 'writer reply');

      // The holder goes away: it renews nothing more and its channel stops (its session closes).
      const holder = holders()[0]!;
      const other = holder === a ? b : a;
      phase = 'failover';
      holder.cluster!.stopTaking();
      for (const c of holder.channels) await c.stop();
      await until(() => other.cluster!.status().connections?.includes(DISCORD_GATEWAY_KEY) && fake.connectedSessions === 1, 'the other instance to log in', 20_000);
      await until(() => other.gateway.readiness().channels?.['discord']?.state === 'ready' || undefined, 'the new holder ready');

      phase = 'after';
      fake.humanSays(general, maya, '@analyst and you?');
      await until(() => replies().some((p) => p.content.startsWith('analyst here')), 'analyst reply after failover', 20_000);

      // Each message recorded once, in order; no reply twice; never two gateway sessions.
      const humans = (await other.gateway.messages(other.gateway.listGroups().find((g) => g.chatId === general)!.id, { limit: 50 })).filter((e) => e.kind === 'human');
      expect(humans.map((e) => e.text)).toEqual(['@writer hello?', '@analyst and you?']);
      expect(new Set(replies().map((p) => p.content)).size).toBe(replies().length);
      expect(replies().filter((p) => p.content.startsWith('writer here'))).toHaveLength(1);
      expect(seen).toEqual([]);
      expect(most).toBe(1);
    } finally {
      clearInterval(sampler);
    }
  }, 90_000);

  it("what the gateway's holder reads for a group another instance runs reaches it: a message, an edit, a reaction", async (ctx) => {
    if (!db) return ctx.skip();
    // After the failover one instance holds the gateway and runs both groups; a third one joins
    // and is handed one of them. The gateway stays where it is.
    const reader = apps.find((x) => x.cluster!.status().connections?.includes(DISCORD_GATEWAY_KEY))!;
    const c = await instance('c');
    await until(() => c.cluster!.ownedCount() === 1 || undefined, 'a group handed to the new instance', 20_000);
    const theirs = c.gateway.listGroups().find((g) => c.cluster!.owns(g.id))!;
    expect(reader.cluster!.owns(theirs.id)).toBe(false);
    const said = fake.humanSays(theirs.chatId, maya, '@analyst a number?');
    await until(() => fake.posts(theirs.chatId).some((m) => m.webhook_id !== null && m.content.startsWith('analyst here (c')) || undefined, 'the reply from the new instance', 20_000);
    fake.humanEdits(said, '@analyst a number, please?');
    fake.humanReacts(theirs.chatId, maya, said, '👀');
    const entry = async () => (await c.gateway.messages(theirs.id, { limit: 50 })).find((e) => e.platformMessageId === said);
    await until(async () => {
      const e = await entry();
      return (e?.text === '@analyst a number, please?' && e.reactions?.some((r) => r.emoji === '👀')) || undefined;
    }, 'the edit and the reaction on the entry', 20_000);
  }, 90_000);
});
