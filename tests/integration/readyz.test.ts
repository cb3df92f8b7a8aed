/**
 * Health you can trust: `/healthz` says the process is alive, `/readyz` says whether
 * Chorus can do its job — the store takes writes and every enabled channel is connected, with the
 * state of each Telegram bot. A rejected token makes it 503; `chorus status` prints the same.
 * Everything runs against the fake Bot API through the real grammY client and the real HTTP server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { runStatus } from '../../src/ops/status.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { silentLogger } from '../helpers/logger.js';
import { DISALLOWED_INTENTS_MESSAGE } from '../../src/channels/discord/startupChecks.js';
import { Perm } from '../fakes/discord/model.js';
import { setup as setupDiscord } from '../channels/discord/harness.js';

const GOOD = '111111:AAA-analyst-test-token';
const WRITER = '222222:BBB-writer-test-token';

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function world(opts: { registerWriter: boolean; authToken?: string }) {
  const fake = await FakeTelegram.start();
  cleanup.push(() => fake.close());
  fake.addBot({ token: GOOD, username: 'chorus_analyst_bot', firstName: 'Analyst' });
  // An unregistered token is what Telegram answers for a wrong or revoked one: 401 Unauthorized.
  if (opts.registerWriter) fake.addBot({ token: WRITER, username: 'chorus_writer_bot', firstName: 'Writer', canReadAll: false });
  const dir = mkdtempSync(join(tmpdir(), 'chorus-readyz-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const yaml = `
data_dir: ${JSON.stringify(dir)}
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: You analyse., telegram: { token: "${GOOD}" } }
  - { id: writer, name: Writer, persona: You write., telegram: { token: "${WRITER}" } }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0${opts.authToken ? `, auth_token: ${opts.authToken}` : ''} }
  telegram: { enabled: true, api_root: "${fake.apiRoot}" }
`;
  const { config } = parseConfigText(yaml, 'readyz-test');
  const app: App = await createApp({ config, logger: silentLogger });
  cleanup.push(() => app.stop());
  await app.start();
  return { fake, app, config, url: app.webUrl! };
}

type Body = {
  status: string;
  ready: boolean;
  store?: { ok: boolean };
  channels?: Record<string, { ok: boolean; bots?: Record<string, { ok: boolean; state?: string; error?: string; name?: string; note?: string }> }>;
};

describe('/readyz', () => {
  it('is 503 with per-bot detail when Telegram rejects one token, while /healthz stays alive', async () => {
    const { url } = await world({ registerWriter: false });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as Body;
    expect(body.ready).toBe(false);
    expect(body.store?.ok).toBe(true);
    expect(body.channels?.web?.ok).toBe(true);
    const tg = body.channels?.telegram;
    expect(tg?.ok).toBe(false);
    expect(tg?.bots?.analyst).toMatchObject({ ok: true, state: 'ready', name: '@chorus_analyst_bot' });
    expect(tg?.bots?.writer).toMatchObject({ ok: false, state: 'unauthorized' });
    expect(tg?.bots?.writer?.error).toMatch(/401: Unauthorized/);
    expect(tg?.bots?.writer?.error).toContain('agents[].telegram.token');
    // No token ever appears in the body.
    expect(JSON.stringify(body)).not.toContain('BBB-writer');
  });

  it('is 200 when every bot works, and notes privacy mode without failing on it', async () => {
    const { url } = await world({ registerWriter: true });
    const res = await fetch(`${url}/readyz`);
    const body = (await res.json()) as Body;
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ status: 'ready', ready: true, store: { ok: true }, channels: { web: { ok: true }, telegram: { ok: true } } });
    expect(body.channels?.telegram?.bots?.writer?.note).toMatch(/privacy mode/);
  });

  it('turns not ready when a token is revoked while polling', async () => {
    const { url, fake } = await world({ registerWriter: true });
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    fake.revoke(WRITER);
    // The bot's long poll is answered at once with the 401 once it asks again.
    fake.state.answerPoll(fake.state.bots.get(WRITER)!, []);
    const deadline = Date.now() + 10_000;
    let res = await fetch(`${url}/readyz`);
    while (res.status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      res = await fetch(`${url}/readyz`);
    }
    expect(res.status).toBe(503);
    expect(((await res.json()) as Body).channels?.telegram?.bots?.writer).toMatchObject({ ok: false, state: 'unauthorized' });
  });

  it('shows the detail only to requests with the token when one is set; probes still get the status code', async () => {
    const { url } = await world({ registerWriter: false, authToken: 's3cret-token' });
    const anon = await fetch(`${url}/readyz`);
    expect(anon.status).toBe(503);
    expect(await anon.json()).toEqual({ status: 'not_ready', ready: false });
    const authed = await fetch(`${url}/readyz`, { headers: { authorization: 'Bearer s3cret-token' } });
    expect(authed.status).toBe(503);
    expect(((await authed.json()) as Body).channels?.telegram?.bots?.writer?.ok).toBe(false);
  });
});

describe('chorus status', () => {
  it('prints the same per-bot state and exits 1 when not ready, 0 when ready', async () => {
    const bad = await world({ registerWriter: false, authToken: 's3cret-token' });
    const port = Number(new URL(bad.url).port);
    const lines: string[] = [];
    // The config as the operator has it (port 8787 in the file); the daemon listens on a test port.
    const code = await runStatus(bad.config, (l) => lines.push(l), { url: `http://127.0.0.1:${port}` });
    const text = lines.join('\n');
    expect(code).toBe(1);
    expect(text).toContain('NOT READY');
    expect(text).toMatch(/✔ store: writable/);
    expect(text).toMatch(/✘ telegram/);
    expect(text).toMatch(/✔ analyst @chorus_analyst_bot/);
    expect(text).toMatch(/✘ writer: 401: Unauthorized/);
    expect(text).not.toContain('s3cret-token');

    const good = await world({ registerWriter: true });
    const goodLines: string[] = [];
    expect(await runStatus(good.config, (l) => goodLines.push(l), { url: good.url })).toBe(0);
    expect(goodLines[0]).toContain('READY');
    expect(goodLines.join('\n')).not.toContain('✘');
  });

  it('says plainly when no daemon answers, and exits 1', async () => {
    const { config } = parseConfigText('agents: [{ id: a, name: A, persona: p }]\nllm: { provider: scripted }\n', 'x');
    const lines: string[] = [];
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    expect(await runStatus(config, (l) => lines.push(l), { url: `http://127.0.0.1:${port}`, timeoutMs: 2000 })).toBe(1);
    expect(lines.join('\n')).toContain(`no Chorus answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
  });
});

describe('Discord channel status (what /readyz shows for it)', () => {
  it('names the failed login (missing intent) and, once connected, each channel that cannot take posts', async () => {
    const refused = await setupDiscord({ fake: { messageContentAllowed: false } });
    cleanup.push(() => refused.close());
    await refused.channel.start(refused.host).catch(() => undefined);
    expect(refused.channel.status()).toMatchObject({ ok: false, state: 'failed', error: DISALLOWED_INTENTS_MESSAGE });

    let locked = '';
    const s = await setupDiscord({
      beforeStart: (fake) => {
        locked = fake.addChannel('locked');
        fake.denyBot(locked, Perm.ManageWebhooks);
      },
      config: (_fake, chatId) => ({ channels: [chatId, locked] }),
    });
    cleanup.push(() => s.close());
    expect(s.channel.status()).toMatchObject({ ok: false, state: 'stopped' });
    await s.channel.start(s.host);
    const status = s.channel.status();
    expect(status.ok).toBe(false);
    expect(status.channels?.[s.chatId]).toMatchObject({ ok: true, name: '#general' });
    expect(status.channels?.[locked]).toMatchObject({ ok: false, name: '#locked' });
    expect(status.channels?.[locked]?.error).toMatch(/Manage Webhooks/);

    const fine = await setupDiscord({ config: (_fake, chatId) => ({ channels: [chatId] }) });
    cleanup.push(() => fine.close());
    await fine.channel.start(fine.host);
    expect(fine.channel.status()).toMatchObject({ ok: true, state: 'ready' });
  });
});
