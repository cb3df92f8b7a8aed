/**
 * Telegram webhook mode end to end: the whole app (router, file store, the web channel's real
 * HTTP server) with `channels.telegram.mode: webhook`; the fake Bot API POSTs updates to the
 * endpoints on that server (reached through `fake.webhookRoute`, standing in for the reverse
 * proxy between the public URL and Chorus). Assertions are on what the fake platform shows and on
 * the group's log.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { webhookEndpoint } from '../../../src/channels/telegram/webhook.js';
import { parseConfigText } from '../../../src/config/load.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { MemoryStore } from '../../helpers/memory-store.js';
import { silentLogger } from '../../helpers/logger.js';
import { agentDef, MAYA, TOKENS, USERNAMES, waitUntil, type AgentId } from './harness.js';

const IDS: AgentId[] = ['analyst', 'writer', 'critic'];
const PUBLIC = 'https://chorus.example.com';
const SECRET = 'e2e_webhook-SECRET-9876543210';
const WEB_TOKEN = 'web-token-for-the-e2e-test';

describe('telegram webhook mode end to end (real app, real HTTP server)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(llm: FakeLlm, store?: MemoryStore): Promise<App> {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-webhook-'));
    const agents = IDS.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: You are the ${id}., telegram: { token: "${TOKENS[id]}" } }`).join('\n');
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0, auth_token: "${WEB_TOKEN}" }
  telegram:
    enabled: true
    api_root: "${fake.apiRoot}"
    mode: webhook
    webhook: { url: "${PUBLIC}", path: /hooks/telegram, secret_token: "\${TG_SECRET}" }
`;
    const { config } = parseConfigText(yaml, 'test', { TG_SECRET: SECRET });
    const a = await createApp({ config, llm, logger: silentLogger, ...(store ? { store } : {}) });
    app = a;
    // The reverse proxy: the public URL Telegram was given → the web channel's real address.
    fake.webhookRoute = (url) => (a.webUrl ? url.replace(PUBLIC, a.webUrl) : url);
    fake.webhookRetryMs = 20;
    await a.start();
    return a;
  }

  async function marketTeam(): Promise<{ chatId: number; groupId: string }> {
    const chat = fake!.createGroup('Market team');
    for (const id of IDS) fake!.addBotToChat(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === 3), 'group of three');
    await waitUntil(() => fake!.postsIn(chat.id).some((p) => p.text.includes('is ready')) || undefined, 'greeting');
    // The app answers an update only after acting on it, so the greeting can come before the fake
    // has read the 200s: a test counting deliveries from here would count these.
    await waitUntil(() => [...fake!.pendingWebhook().values()].every((x) => x === 0) || undefined, 'set-up updates confirmed');
    await app!.router.idle();
    return { chatId: chat.id, groupId: g.id };
  }

  const humans = async (groupId: string) => (await app!.gateway.messages(groupId, { limit: 200 })).filter((e) => e.kind === 'human').map((e) => e.text);

  it('a human message arrives by webhook, three bots\' copies make one round, the agent answers through its bot; /readyz shows each webhook set', async () => {
    const llm = new FakeLlm({ replies: { analyst: 'AAPL beat estimates.', writer: 'I can draft it.', critic: '[PASS]' } });
    await boot(llm);
    const { chatId, groupId } = await marketTeam();
    for (const id of IDS) {
      expect(fake!.callsOf('setWebhook', USERNAMES[id])).toHaveLength(1);
      expect(String(fake!.callsOf('setWebhook', USERNAMES[id])[0]!.payload.url)).toMatch(new RegExp(`^${PUBLIC}/hooks/telegram/${id}\\?v=`));
    }
    expect(fake!.callsOf('getUpdates')).toEqual([]);

    const before = fake!.postsIn(chatId).length;
    const human = fake!.humanSays(chatId, MAYA, '@analyst how did AAPL do?');
    await waitUntil(() => fake!.postsIn(chatId).length > before || undefined, 'analyst reply');
    await app!.router.idle();
    const posts = fake!.postsIn(chatId).slice(before);
    expect(posts.map((p) => [p.bot, p.text])).toEqual([[USERNAMES.analyst, 'AAPL beat estimates.']]);
    expect(posts[0]!.replyToMessageId).toBe(human.messageId);

    const n = fake!.postsIn(chatId).length;
    const turnsBefore = llm.calls.filter((c) => c.purpose === 'turn').length;
    fake!.humanSays(chatId, MAYA, 'Thoughts on the quarter, anyone?');
    await waitUntil(() => [...fake!.pendingWebhook().values()].every((x) => x === 0) && fake!.postsIn(chatId).length > n || undefined, 'voluntary reply');
    await app!.router.idle();
    expect(await humans(groupId)).toEqual(['@analyst how did AAPL do?', 'Thoughts on the quarter, anyone?']);
    // One round: each participant asked once, although each of the three bots delivered the message.
    const turns = llm.calls.filter((c) => c.purpose === 'turn').slice(turnsBefore);
    expect(turns.map((c) => c.agent?.id).sort()).toEqual(['analyst', 'critic', 'writer']);
    expect(fake!.deliveries.filter((d) => d.status !== 200)).toEqual([]);

    const ready = await fetch(`${app!.webUrl}/readyz`, { headers: { authorization: `Bearer ${WEB_TOKEN}` } });
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { channels: { telegram: { bots: Record<string, { ok: boolean; state: string }> } } };
    for (const id of IDS) expect(body.channels.telegram.bots[id]).toMatchObject({ ok: true, state: 'webhook_set' });
  });

  it('the real server refuses a wrong secret with 401 (nothing recorded), takes the public host name without the web token, and a redelivered update is answered once', async () => {
    const llm = new FakeLlm({ replies: { writer: 'On it.' } });
    await boot(llm);
    const { chatId, groupId } = await marketTeam();
    const path = webhookEndpoint({ url: PUBLIC, path: '/hooks/telegram', secretToken: SECRET }, 'writer', TOKENS.writer).path;
    const forged = {
      update_id: 424242,
      message: { message_id: 9001, date: 1, chat: { id: chatId, type: 'supergroup', title: 'Market team' }, from: { id: 6666, is_bot: false, first_name: 'Mallory' }, text: '@writer forged' },
    };
    const post = (secret: string | undefined, host: string) => rawPost(app!.webUrl!, path, host, JSON.stringify(forged), secret);
    expect((await post('wrong-secret', 'chorus.example.com')).status).toBe(401);
    expect((await post(undefined, 'chorus.example.com')).status).toBe(401);
    await app!.router.idle();
    expect(await humans(groupId)).not.toContain('@writer forged');
    // The API on the same server still wants the web token; the webhook path does not.
    expect((await rawGet(app!.webUrl!, '/api/groups', '127.0.0.1')).status).toBe(401);

    // Telegram's answer is lost once: it delivers the same update again; one entry, one reply.
    fake!.loseWebhookAnswers = 1;
    const before = fake!.postsIn(chatId).length;
    fake!.humanSays(chatId, MAYA, '@writer draft the memo');
    await waitUntil(() => fake!.postsIn(chatId).length > before || undefined, 'writer reply');
    await waitUntil(() => [...fake!.pendingWebhook().values()].every((x) => x === 0) || undefined, 'all confirmed');
    await app!.router.idle();
    expect(fake!.deliveries.filter((d) => d.status === 0)).toHaveLength(1);
    expect((await humans(groupId)).filter((t) => t === '@writer draft the memo')).toHaveLength(1);
    expect(fake!.postsIn(chatId).slice(before).map((p) => [p.bot, p.text])).toEqual([[USERNAMES.writer, 'On it.']]);

    // With the secret, a POST naming the public host (as through the proxy) is taken.
    const ok = await post(SECRET, 'chorus.example.com');
    expect(ok.status).toBe(200);
    await app!.router.idle();
    expect(await humans(groupId)).toContain('@writer forged');
  });

  it('a disk that cannot write: the update is answered 503 and nothing is recorded; Telegram keeps delivering it and, once the disk is back, it is recorded and answered once', async () => {
    const store = new MemoryStore();
    const llm = new FakeLlm({ replies: { critic: 'Noted.' } });
    await boot(llm, store);
    const { chatId, groupId } = await marketTeam();
    const before = fake!.postsIn(chatId).length;
    const seen = fake!.deliveries.length;
    store.failWrites = 'ENOSPC: no space left on device';
    fake!.humanSays(chatId, MAYA, '@critic is the disk full?');
    await waitUntil(() => fake!.deliveries.slice(seen).filter((d) => d.status === 503).length >= 6 || undefined, 'several refused deliveries');
    expect(fake!.deliveries.slice(seen).filter((d) => d.status === 200)).toEqual([]);
    expect(fake!.pendingWebhook().get(USERNAMES.critic)).toBe(1);

    store.failWrites = null;
    await waitUntil(() => [...fake!.pendingWebhook().values()].every((x) => x === 0) || undefined, 'delivered once the disk is back');
    await waitUntil(() => fake!.postsIn(chatId).length > before || undefined, 'critic reply');
    await app!.router.idle();
    expect((await humans(groupId)).filter((t) => t === '@critic is the disk full?')).toHaveLength(1);
    expect(fake!.postsIn(chatId).slice(before).map((p) => [p.bot, p.text])).toEqual([[USERNAMES.critic, 'Noted.']]);
  });
});

function rawPost(base: string, path: string, host: string, body: string, secret: string | undefined): Promise<{ status: number }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: 'POST',
        headers: {
          host,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(secret !== undefined ? { 'x-telegram-bot-api-secret-token': secret } : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function rawGet(base: string, path: string, host: string): Promise<{ status: number }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    http
      .get({ host: u.hostname, port: u.port, path, headers: { host } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      })
      .on('error', reject);
  });
}
