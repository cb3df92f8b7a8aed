/**
 * Discord under platform faults: the real app with the Discord channel (discord.js
 * gateway bot, agents posting through the channel webhook) against the fake Discord, whose
 * webhook executions meet 429 storms, 5xx answers and dropped connections. Every agent reply must
 * reach the channel once and in order; assertions are on what the fake channel shows.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import { Perm, type FakeUser } from '../fakes/discord/model.js';
import { until } from '../channels/discord/harness.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';

const TEAM = ['Analyst', 'Writer', 'Critic'] as const;

function configYaml(dataDir: string, fake: FakeDiscord, channels: string[]): string {
  return `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${TEAM.map((n) => `  - { id: ${n.toLowerCase()}, name: ${n}, persona: "You are the ${n.toLowerCase()}." }`).join('\n')}
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake.token}", api_base: "${fake.apiBase}" }
groups:
${channels.map((c, i) => `  - { channel: discord, chat_id: "${c}", title: Desk ${i}, participants: [analyst, writer, critic] }`).join('\n')}
`;
}

const tagOf = (req: LlmRequest) => [...(req.messages.at(-1)?.content ?? '').matchAll(/question (q\d+)/g)].at(-1)?.[1] ?? '?';
/** Two paragraphs of 1500 characters: two Discord messages. */
const longReply = (tag: string) => `${tag} critic part one ${'a'.repeat(1500)}\n\n${tag} critic part two ${'b'.repeat(1500)}`;

function teamLlm(): FakeLlm {
  return new FakeLlm({
    replies: {
      analyst: (req) => `${tagOf(req)} analyst answer`,
      writer: (req) => `${tagOf(req)} writer answer`,
      critic: (req) => (Number(tagOf(req).slice(1)) % 2 === 1 ? longReply(tagOf(req)) : `${tagOf(req)} critic answer`),
    },
  });
}

const brief = (who: string, text: string): [string, string] => {
  const t = text.trim();
  return [who, t.length > 60 ? `${t.slice(0, 30)}… (${t.length} chars)` : t];
};

function expectedPosts(from: number, to: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let k = from; k < to; k++) {
    const q = `q${k}`;
    out.push(brief('Analyst', `${q} analyst answer`), brief('Writer', `${q} writer answer`));
    if (k % 2 === 1) out.push(brief('Critic', `${q} critic part one ${'a'.repeat(1500)}`), brief('Critic', `${q} critic part two ${'b'.repeat(1500)}`));
    else out.push(brief('Critic', `${q} critic answer`));
  }
  return out;
}

const isExecute = (method: string, path: string) => method === 'POST' && /^\/webhooks\/\d+\/[^/]+$/.test(path);

describe('discord under platform faults (real app, fake Discord)', () => {
  let fake: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let maya: FakeUser;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(llm: FakeLlm, channelCount: number): Promise<{ app: App; channels: string[] }> {
    fake = await new FakeDiscord().start();
    const channels = Array.from({ length: channelCount }, (_, i) => fake!.addChannel(`desk-${i}`));
    maya = fake.addUser('Maya');
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-dc-faults-'));
    const { config } = parseConfigText(configYaml(dataDir, fake, channels), 'test', {});
    const a = await createApp({ config, llm, logger: silentLogger });
    await a.start();
    return { app: a, channels };
  }

  /** Agent posts in a channel, as compared. */
  const agentPosts = (channelId: string) =>
    fake!
      .posts(channelId)
      .filter((m) => m.webhook_id !== null && /^q\d+ /.test(m.content))
      .map((m) => brief(m.author.username, m.content));

  async function converse(channelId: string, from: number, to: number): Promise<void> {
    for (let k = from; k < to; k++) {
      fake!.humanSays(channelId, maya, `@analyst @writer @critic question q${k}`);
      const want = expectedPosts(from, k + 1).length;
      await until(() => agentPosts(channelId).length >= want, `replies to q${k}`, 30_000);
    }
  }

  it('429 storms, 5xx answers and connections dropped before Discord acted: every reply once, in order', async () => {
    const booted = await boot(teamLlm(), 2);
    app = booted.app;
    const { channels } = booted;
    fake!.rateLimitNext(4, isExecute, 0.3);
    fake!.failNext(2, isExecute, { status: 502, code: 0, message: 'Bad Gateway' });
    fake!.faultNext(1, isExecute, { status: 503 });
    fake!.faultNext(1, isExecute, 'drop');
    fake!.faultNext(1, isExecute, { status: 500 });
    fake!.faultNext(1, isExecute, 'drop');
    fake!.rateLimitNext(3, (m, p) => m === 'POST' && p.endsWith('/typing'), 0.3);
    await Promise.all(channels.map((c) => converse(c, 0, 3)));
    await app.router.idle();

    expect(fake!.pendingFaults()).toBe(0);
    for (const c of channels) expect(agentPosts(c)).toEqual(expectedPosts(0, 3));
    // Each failed attempt was repeated once, nothing more: attempts = posts + 4 × 429 + 6 faults.
    const executes = fake!.requests.filter((r) => isExecute(r.method, r.path.split('?')[0]!) && /^q\d+ /.test(String((r.body as { content?: unknown }).content)));
    expect(executes.length).toBe(channels.length * expectedPosts(0, 3).length + 4 + 6);
    for (const g of app.gateway.listGroups()) {
      const failed = (await app.gateway.messages(g.id, { limit: 200 })).filter((e) => e.delivery === 'failed').map((e) => brief(e.authorName, e.text));
      expect(failed).toEqual([]);
    }
  }, 90_000);

  it('a connection dropped after Discord created the message: not posted twice, nothing lost, in order', async () => {
    const booted = await boot(teamLlm(), 1);
    app = booted.app;
    const [channel] = booted.channels as [string];
    // The writer's reply to q1 is created, then its answer is lost; the same for the second
    // chunk of the critic's long reply to q1.
    const bodyStarts = (prefix: string) => (m: string, p: string, body: unknown) =>
      isExecute(m, p) && String((body as { content?: unknown } | undefined)?.content).startsWith(prefix);
    fake!.faultNext(1, bodyStarts('q1 writer'), 'drop-after');
    fake!.faultNext(1, bodyStarts('q1 critic part two'), 'drop-after');
    await converse(channel, 0, 3);
    await app.router.idle();
    expect(fake!.faultLog.filter((f) => f.fault === 'drop-after')).toHaveLength(2);
    expect(agentPosts(channel)).toEqual(expectedPosts(0, 3));
    // Not resent: one execute per post; the adapter looked in the channel instead, once per drop.
    expect(fake!.requests.filter((r) => isExecute(r.method, r.path.split('?')[0]!)).length).toBe(expectedPosts(0, 3).length);
    expect(fake!.requestsTo('GET', /^\/channels\/\d+\/messages\?/)).toHaveLength(2);
    const failed = (await app.gateway.messages(app.gateway.listGroups()[0]!.id, { limit: 200 })).filter((e) => e.delivery === 'failed').map((e) => brief(e.authorName, e.text));
    expect(failed).toEqual([]);
  }, 60_000);

  it('when the channel cannot be read to check, a post whose answer was lost is sent again: a duplicate, never a loss', async () => {
    const booted = await boot(teamLlm(), 1);
    app = booted.app;
    const [channel] = booted.channels as [string];
    fake!.denyBot(channel, Perm.ReadMessageHistory);
    fake!.faultNext(1, (m, p, body) => isExecute(m, p) && String((body as { content?: unknown })?.content).startsWith('q0 writer'), 'drop-after');
    await converse(channel, 0, 1);
    await app.router.idle();
    const expected = expectedPosts(0, 1);
    expected.splice(1, 0, expected[1]!);
    expect(agentPosts(channel)).toEqual(expected);
    expect(fake!.requestsTo('GET', /^\/channels\/\d+\/messages\?/).map((r) => r.status)).toEqual([403]);
  }, 60_000);
});
