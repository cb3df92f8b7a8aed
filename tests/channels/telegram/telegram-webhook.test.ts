/**
 * Telegram webhook mode, adapter level: real grammY bots against the fake Bot API, which POSTs
 * updates to the endpoints the channel mounts. Secret token, answer-after-record, retries on
 * failure, setWebhook only when needed, updates spread over two instances, and switching back to
 * polling. The whole app in webhook mode is in telegram-webhook-e2e.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenAuth } from '../../../src/channels/web/auth.js';
import { WebMetrics } from '../../../src/channels/web/metrics.js';
import { HttpMounts } from '../../../src/channels/web/mounts.js';
import { Router } from '../../../src/channels/web/router.js';
import { createWebServer } from '../../../src/channels/web/server.js';
import { StaticFiles } from '../../../src/channels/web/static.js';
import { silentLogger } from '../../helpers/logger.js';
import { TelegramChannel } from '../../../src/channels/telegram/TelegramChannel.js';
import { webhookEndpoint } from '../../../src/channels/telegram/webhook.js';
import { parseConfigText } from '../../../src/config/load.js';
import { formatFinding } from '../../../src/ops/findings.js';
import { checkTelegram } from '../../../src/ops/checks/telegram.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { CapturingLogger } from '../../helpers/logger.js';
import { agentDef, CountingHost, MAYA, TOKENS, USERNAMES, waitUntil, type AgentId } from './harness.js';
import { PUBLIC_URL, SECRET, postUpdate, roundRobin, webhookInstance, type Instance } from './webhook-harness.js';

const IDS: AgentId[] = ['analyst', 'writer', 'critic'];

describe('telegram webhook mode (adapter)', () => {
  let fake: FakeTelegram | undefined;
  const instances: Instance[] = [];
  const extra: Array<() => Promise<void>> = [];

  afterEach(async () => {
    for (const i of instances.splice(0)) await i.close();
    for (const f of extra.splice(0)) await f();
    await fake?.close();
    fake = undefined;
  });

  async function world(opts: { instances?: number; logger?: CapturingLogger; webhookCheckMs?: number } = {}) {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    const agents = IDS.map((id) => agentDef(id));
    const host = new CountingHost(agents);
    const list: Instance[] = [];
    for (let i = 0; i < (opts.instances ?? 1); i++) {
      list.push(await webhookInstance(fake, agents, { logger: opts.logger, webhookCheckMs: opts.webhookCheckMs }));
    }
    instances.push(...list);
    roundRobin(fake, list);
    for (const inst of list) await inst.channel.start(host);
    return { fake, agents, host, instances: list };
  }

  const endpoint = (inst: Instance, id: AgentId, secret = SECRET) =>
    `${inst.url}${webhookEndpoint({ url: PUBLIC_URL, path: '/telegram', secretToken: secret }, id, TOKENS[id]).path}`;

  it('sets one webhook per bot with the secret and update types; updates arrive by POST and are answered 200 after they are recorded', async () => {
    const w = await world();
    const chat = w.fake.createGroup('Market team');
    for (const id of IDS) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await waitUntil(() => w.host.memberships.length === 3 || undefined, 'three joins by webhook');

    for (const id of IDS) {
      const sets = w.fake.callsOf('setWebhook', USERNAMES[id]);
      expect(sets).toHaveLength(1);
      expect(sets[0]!.payload).toMatchObject({ secret_token: SECRET, allowed_updates: ['message', 'edited_message', 'my_chat_member', 'callback_query', 'message_reaction'], drop_pending_updates: false });
      expect(String(sets[0]!.payload.url)).toMatch(new RegExp(`^${PUBLIC_URL}/telegram/${id}\\?v=[0-9a-f]{16}$`));
    }
    // Polling never runs in webhook mode (it would get 409).
    expect(w.fake.callsOf('getUpdates')).toEqual([]);
    expect(w.fake.callsOf('deleteWebhook')).toEqual([]);

    // Confirmed (answered 2xx) only once the host holds it.
    const confirmedBeforeRecorded: number[] = [];
    w.fake.onConfirm = (_bot, updates) => {
      for (const u of updates) {
        const m = u.message as { message_id: number } | undefined;
        if (m && !w.host.received.some((r) => r.messageId === String(m.message_id))) confirmedBeforeRecorded.push(m.message_id);
      }
    };
    const said = w.fake.humanSays(chat.id, MAYA, 'Thoughts on the quarter, anyone?');
    await waitUntil(() => w.fake.pendingWebhook().get(USERNAMES.critic) === 0 && w.host.attempts.length === 3 || undefined, 'three copies delivered');
    await waitUntil(() => [...w.fake.pendingWebhook().values()].every((n) => n === 0) || undefined, 'all confirmed');
    // Three bots, three POSTs of the same message: handed over three times, kept once.
    expect(w.host.attempts.map((m) => m.messageId)).toEqual([String(said.messageId), String(said.messageId), String(said.messageId)]);
    expect(w.host.received.map((m) => m.text)).toEqual(['Thoughts on the quarter, anyone?']);
    expect(confirmedBeforeRecorded).toEqual([]);
    expect(w.fake.deliveries.every((d) => d.status === 200)).toBe(true);

    const status = w.instances[0]!.channel.status();
    expect(status.ok).toBe(true);
    expect(status.bots?.analyst).toMatchObject({ ok: true, state: 'webhook_set', name: `@${USERNAMES.analyst}` });
  });

  it('a wrong or missing secret token is refused with 401 and nothing is handed over; so is a GET', async () => {
    const w = await world();
    const chat = w.fake.createGroup('Market team');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    await waitUntil(() => w.host.memberships.length === 1 || undefined, 'join');
    const update = {
      update_id: 999_001,
      message: { message_id: 77, date: 1, chat: { id: chat.id, type: 'supergroup', title: 'Market team' }, from: { id: 6666, is_bot: false, first_name: 'Mallory' }, text: '@analyst wire the money' },
    };
    const url = endpoint(w.instances[0]!, 'analyst');
    expect((await postUpdate(url, update, 'not-the-secret')).status).toBe(401);
    expect((await postUpdate(url, update, undefined)).status).toBe(401);
    expect((await postUpdate(url, update, `${SECRET}x`)).status).toBe(401);
    expect((await postUpdate(url, update, '')).status).toBe(401);
    expect((await fetch(url)).status).toBe(405);
    expect(w.host.attempts).toEqual([]);

    // The same update with the right secret is taken: the refusals were about the secret only.
    const ok = await postUpdate(url, update, SECRET);
    expect(ok.status).toBe(200);
    expect(w.host.received.map((m) => m.text)).toEqual(['@analyst wire the money']);
  });

  it('bad bodies get 4xx without reaching the host: not JSON, not an update, over the size limit', async () => {
    const w = await world();
    const url = endpoint(w.instances[0]!, 'writer');
    expect((await postUpdate(url, undefined, SECRET, '{not json')).status).toBe(400);
    expect((await postUpdate(url, { hello: 'world' }, SECRET)).status).toBe(400);
    const huge = { update_id: 1, message: { message_id: 1, date: 1, chat: { id: 1, type: 'private', first_name: 'A' }, text: 'x'.repeat(1_100_000) } };
    expect((await postUpdate(url, huge, SECRET)).status).toBe(413);
    expect(w.host.attempts).toEqual([]);
  });

  it('a store that cannot record answers 5xx; Telegram delivers the update again and it is recorded once', async () => {
    const w = await world();
    const chat = w.fake.createGroup('Market team');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    await waitUntil(() => w.host.memberships.length === 1 || undefined, 'join');
    w.host.failNext = 2;
    w.fake.humanSays(chat.id, MAYA, '@analyst are you there?');
    await waitUntil(() => w.host.received.length === 1 || undefined, 'recorded after retries');
    await waitUntil(() => w.fake.pendingWebhook().get(USERNAMES.analyst) === 0 || undefined, 'confirmed');
    const forMessage = w.fake.deliveries.filter((d) => d.bot === USERNAMES.analyst).slice(1);
    expect(forMessage.map((d) => d.status)).toEqual([503, 503, 200]);
    expect(w.host.attempts).toHaveLength(3);
    expect(w.host.received.map((m) => m.text)).toEqual(['@analyst are you there?']);
    // Telegram kept the reason, for getWebhookInfo / chorus doctor.
    expect(w.fake.state.bots.get(TOKENS.analyst)!.lastError?.message).toBe('Wrong response from the webhook: 503 Service Unavailable');
  });

  it('an update redelivered after its answer was lost is handed over again and kept once', async () => {
    const w = await world();
    const chat = w.fake.createGroup('Market team');
    w.fake.addBotToChat(chat.id, TOKENS.writer, MAYA);
    await waitUntil(() => w.host.memberships.length === 1 || undefined, 'join');
    // The join's own answer must be in first: the host sees the join before the fake reads the
    // 200, and on a busy machine the lost answer would otherwise be the join's, not the message's.
    await waitUntil(() => w.fake.pendingWebhook().get(USERNAMES.writer) === 0 || undefined, 'join confirmed');
    w.fake.loseWebhookAnswers = 1;
    w.fake.humanSays(chat.id, MAYA, '@writer draft it please');
    await waitUntil(() => w.host.attempts.length === 2 || undefined, 'delivered twice');
    await waitUntil(() => w.fake.pendingWebhook().get(USERNAMES.writer) === 0 || undefined, 'confirmed');
    expect(w.host.received.map((m) => m.text)).toEqual(['@writer draft it please']);
    // A replay with new update ids (a crash before confirming, on Telegram's side) is absorbed too.
    w.fake.replayMessages(TOKENS.writer);
    await waitUntil(() => w.host.attempts.length === 3 || undefined, 'replayed');
    expect(w.host.received).toHaveLength(1);
  });

  it('updates POSTed to either of two instances: every message handed over, kept once, both instances used', async () => {
    const w = await world({ instances: 2 });
    const chat = w.fake.createGroup('Market team');
    for (const id of IDS) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await waitUntil(() => w.host.memberships.length === 3 || undefined, 'three joins');
    // setWebhook once per bot, although two instances started: the second saw it already set.
    for (const id of IDS) expect(w.fake.callsOf('setWebhook', USERNAMES[id])).toHaveLength(1);
    const texts = Array.from({ length: 12 }, (_, i) => `message ${i + 1}`);
    for (const t of texts) w.fake.humanSays(chat.id, MAYA, t);
    await waitUntil(() => w.host.attempts.length === texts.length * 3 || undefined, 'all copies delivered', 15_000);
    expect(w.host.received.map((m) => m.text)).toEqual(texts);
    for (const inst of w.instances) expect(inst.answers.filter((a) => a.status === 200).length).toBeGreaterThan(5);
    // One instance stops: Telegram's retries land on the other (the fake routes round-robin).
    await w.instances[0]!.channel.stop();
    w.fake.humanSays(chat.id, MAYA, 'after the stop');
    await waitUntil(() => w.host.received.some((m) => m.text === 'after the stop') || undefined, 'taken by the other instance');
    await waitUntil(() => [...w.fake.pendingWebhook().values()].every((n) => n === 0) || undefined, 'every copy confirmed');
    // Three copies over two instances: at least one went to the stopped one first and was refused.
    expect(w.instances[0]!.answers.some((a) => a.status === 503)).toBe(true);
    expect(w.host.received.filter((m) => m.text === 'after the stop')).toHaveLength(1);
  });

  it('a restart keeps the webhook as it is; a new secret sets it again; a webhook changed outside is put back', async () => {
    const logger = new CapturingLogger();
    const w = await world({ logger, webhookCheckMs: 100 });
    const first = w.fake.callsOf('setWebhook', USERNAMES.analyst)[0]!.payload.url as string;
    await instances.pop()!.close();

    // Same config: getWebhookInfo shows it set, no second setWebhook.
    const again = await webhookInstance(w.fake, w.agents);
    instances.push(again);
    roundRobin(w.fake, [again]);
    await again.channel.start(w.host);
    expect(w.fake.callsOf('setWebhook', USERNAMES.analyst)).toHaveLength(1);
    await instances.pop()!.close();

    // A rotated secret must reach Telegram although getWebhookInfo never shows the secret.
    const rotated = await webhookInstance(w.fake, w.agents, { secret: 'rotated_SECRET_42', webhookCheckMs: 100, logger });
    instances.push(rotated);
    roundRobin(w.fake, [rotated]);
    await rotated.channel.start(w.host);
    const sets = w.fake.callsOf('setWebhook', USERNAMES.analyst);
    expect(sets).toHaveLength(2);
    expect(sets[1]!.payload.secret_token).toBe('rotated_SECRET_42');
    expect(sets[1]!.payload.url).not.toBe(first);
    const chat = w.fake.createGroup('After rotation');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    await waitUntil(() => w.host.memberships.some((m) => m.chat.chatId === String(chat.id)) || undefined, 'delivered with the new secret');

    // Someone deletes the webhook (a polling run with the same token): the check sets it again.
    w.fake.state.bots.get(TOKENS.analyst)!.webhook = undefined;
    await waitUntil(() => w.fake.callsOf('setWebhook', USERNAMES.analyst).length === 3 || undefined, 'webhook set again');
    expect(logger.text()).toContain('the webhook was changed outside Chorus');
    expect(logger.text()).not.toContain('rotated_SECRET_42');
  });

  it('Telegram\'s delivery errors show on /readyz as a note; a refused setWebhook makes the bot not ready and is retried', async () => {
    const w = await world({ webhookCheckMs: 100 });
    // Updates for a bot whose endpoint answers 503 (not started here): Telegram records the error.
    w.host.failNext = 1;
    const chat = w.fake.createGroup('Market team');
    w.fake.addBotToChat(chat.id, TOKENS.critic, MAYA);
    w.fake.humanSays(chat.id, MAYA, '@critic hello');
    await waitUntil(() => w.instances[0]!.channel.status().bots?.critic?.note?.includes('Wrong response from the webhook: 503') || undefined, 'note on readyz');
    expect(w.instances[0]!.channel.status().bots?.critic?.ok).toBe(true);

    await instances.pop()!.close();
    w.fake.state.bots.get(TOKENS.writer)!.webhook = undefined;
    w.fake.failNext('setWebhook', 1, { error_code: 400, description: 'Bad Request: bad webhook: Failed to resolve host: Name or service not known' }, { token: TOKENS.writer });
    const inst = await webhookInstance(w.fake, w.agents);
    instances.push(inst);
    roundRobin(w.fake, [inst]);
    await inst.channel.start(w.host);
    expect(inst.channel.status().bots?.writer).toMatchObject({ ok: false, state: 'webhook_not_set' });
    expect(inst.channel.status().bots?.writer?.error).toContain('Failed to resolve host');
    expect(inst.channel.status().ok).toBe(false);
    // The background retry (2 s) sets it.
    await waitUntil(() => inst.channel.status().bots?.writer?.ok || undefined, 'writer webhook set on retry', 8000);
  });

  it('switching back to polling deletes the webhook, and polling works (the fake answers getUpdates 409 while a webhook is set)', async () => {
    const w = await world();
    await instances.pop()!.close();
    const api = `${w.fake.apiRoot}/bot${TOKENS.analyst}/getUpdates`;
    const conflict = await fetch(api, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { description: string }).description).toContain("can't use getUpdates method while webhook is active");

    const polling = new TelegramChannel({
      config: { enabled: true, api_root: w.fake.apiRoot, auto_create_groups: true, admins: [] },
      agents: w.agents,
      logger: new CapturingLogger(),
      pollTimeoutSeconds: 5,
    });
    extra.push(() => polling.stop());
    await polling.start(w.host);
    for (const id of IDS) expect(w.fake.callsOf('deleteWebhook', USERNAMES[id])).toHaveLength(1);
    const chat = w.fake.createGroup('Back to polling');
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    w.fake.humanSays(chat.id, MAYA, '@analyst polling again?');
    await waitUntil(() => w.host.received.some((m) => m.text === '@analyst polling again?') || undefined, 'polled');
    expect(polling.status().ok).toBe(true);
  });

  it('chorus doctor: webhook not set yet, then set with Telegram\'s last delivery error; in polling mode a stray webhook is named', async () => {
    fake = await FakeTelegram.start();
    fake.addBot({ token: TOKENS.analyst, username: USERNAMES.analyst, firstName: 'Analyst' });
    const yaml = (mode: string) => `agents:
  - { id: analyst, name: Analyst, persona: numbers, telegram: { token: "${TOKENS.analyst}" } }
channels:
  telegram: { enabled: true, api_root: "${fake!.apiRoot}", mode: ${mode}, webhook: { url: "${PUBLIC_URL}", secret_token: "${SECRET}" } }
`;
    const webhookConfig = parseConfigText(yaml('webhook'), 'doctor.yaml', {}).config;
    const doctor = async (cfg = webhookConfig) => (await checkTelegram(cfg, [])).map(formatFinding).filter((l) => l.includes('webhook'));
    expect(await doctor()).toEqual([`! telegram analyst webhook: @${USERNAMES.analyst} has no webhook set (0 update(s) waiting) — fix: start Chorus: it sets the webhook at start`]);

    const host = new CountingHost([agentDef('analyst')]);
    const inst = await webhookInstance(fake, [agentDef('analyst')]);
    instances.push(inst);
    roundRobin(fake, [inst]);
    await inst.channel.start(host);
    const chat = fake.createGroup('Doctor room');
    fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    host.failNext = 1;
    fake.humanSays(chat.id, MAYA, '@analyst hi');
    await waitUntil(() => host.received.length === 1 || undefined, 'recorded after one failure');
    const lines = await doctor();
    expect(lines[0]).toBe(`✔ telegram analyst webhook: @${USERNAMES.analyst}'s webhook is set to ${PUBLIC_URL}/telegram/analyst (0 update(s) waiting)`);
    expect(lines[1]).toMatch(/^! telegram analyst webhook: Telegram's last delivery to @chorus_analyst_bot's webhook failed \S+: Wrong response from the webhook: 503 Service Unavailable — fix: check that the public URL reaches Chorus/);
    expect(lines.join('\n')).not.toContain(SECRET);

    // The same bot configured for polling: the webhook left set is worth a warning.
    const polling = parseConfigText(yaml('polling'), 'doctor.yaml', {}).config;
    expect((await doctor(polling))[0]).toMatch(/^! telegram analyst webhook: @chorus_analyst_bot has a webhook set \(.*\) while Chorus is configured to poll/);
  });

  it('the web server hands mounted paths to their handler before its Host check and token; every other path keeps both', async () => {
    for (const token of [null, 'web-token']) {
      const mounts = new HttpMounts();
      const hits: string[] = [];
      mounts.mount('/telegram/analyst', async (req, res) => {
        hits.push(String(req.headers.host));
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
      expect(() => mounts.mount('/telegram/analyst', async () => undefined)).toThrow(/already served/);
      const server = createWebServer({
        bindHost: '127.0.0.1',
        router: new Router(),
        auth: new TokenAuth(token),
        files: new StaticFiles(null),
        logger: silentLogger,
        webMetrics: new WebMetrics(),
        metricsText: () => '',
        readiness: () => ({ ready: true, store: { ok: true, writable: true, error: null }, channels: {} }),
        limits: { headersTimeoutMs: 5000, requestTimeoutMs: 10_000, idleTimeoutMs: 5000, maxConnectionsPerAddress: 0 },
        mounts,
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      extra.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
      const port = (server.address() as AddressInfo).port;
      const req = (method: string, path: string, host: string) =>
        new Promise<number>((resolve, reject) => {
          const r = http.request({ host: '127.0.0.1', port, path, method, headers: { host } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          r.on('error', reject);
          r.end();
        });
      // The public name a reverse proxy forwards, no Bearer token: the webhook handler decides.
      expect(await req('POST', '/telegram/analyst', 'chorus.example.com')).toBe(200);
      expect(hits).toEqual(['chorus.example.com']);
      // Not mounted: without a token, a foreign Host is refused (DNS rebinding); with one, the token is required.
      expect(await req('GET', '/api/groups', 'chorus.example.com')).toBe(token ? 401 : 403);
      expect(await req('POST', '/telegram/writer', 'chorus.example.com')).toBe(token ? 404 : 403);
    }
  });
});
