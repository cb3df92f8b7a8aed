/**
 * Another web site cannot make a visitor's browser change anything in Chorus, in real Chromium.
 * Chorus (no web token, the default local setup) listens on one port of 127.0.0.1; an "attacker"
 * page is served by a tiny HTTP server on another port of the same address (a different origin,
 * but the same site). While the analyst's tool call waits for a person, the attacker page:
 * - auto-submits a form to the message route with `/approve <call>`: multipart, urlencoded and
 *   text/plain (the last one shaped as JSON);
 * - sends `fetch(..., { mode: 'no-cors' })` with a form body to the message route, and one with no
 *   body to `/stop` (which needs none).
 * Each is answered 403 and nothing changes: no message recorded, no stop notice, the tool not
 * run, the call still waiting. Chorus's own page then approves the same call, which runs once.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { silentLogger } from '../helpers/logger.js';
import { CountingTools, lastMessage, ScriptedToolLlm, toolInfo, type Step } from '../helpers/tool-fakes.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-cross-site');

type MessagePage = { messages: TranscriptEntry[] };
type Refusal = { error: { code: string; message: string } };

const configYaml = (dataDir: string) => `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: target, title: Target, participants: [analyst] }
`;

const tools = new CountingTools([toolInfo('orders', 'cancel')], (_tool, input) => `cancelled ${String(input.id)}`);

let callIds = 0;
/** The analyst cancels the order it is asked to, which waits for a person's approval. */
function script(req: LlmRequest): Step | null {
  if (req.agent?.id !== 'analyst') return null;
  if ((req.toolSteps ?? []).length > 0) return 'Done.';
  const asked = /cancel order (\d+)/.exec(lastMessage(req));
  if (!asked) return 'Nothing to do.';
  return { calls: [{ id: `call-${++callIds}`, name: 'orders__cancel', input: { id: Number(asked[1]) } }] };
}

/** One page of the attacker's site per attack, each naming the call to approve. */
function attackerPage(kind: string, chorus: string, call: string): string {
  const messages = `${chorus}/api/groups/target/messages`;
  const form = (enctype: string, fields: string) =>
    `<form method="post" enctype="${enctype}" action="${messages}">${fields}</form>` +
    '<script>document.forms[0].submit()</script>';
  const field = (name: string, value: string) => `<input type="hidden" name='${name}' value='${value}'>`;
  const approve = field('text', `/approve ${call}`) + field('author_name', 'Mallory');
  const body: Record<string, string> = {
    multipart: form('multipart/form-data', approve),
    urlencoded: form('application/x-www-form-urlencoded', approve),
    // name=value with the "=" inside a JSON string: the body reads as {"text":"/approve …","x":"="}.
    plain: form('text/plain', field(`{"text":"/approve ${call}","x":"`, '"}')),
    // Each fetch settles once Chorus has answered: a rejection is the browser hiding an answer
    // that is not for other origins (Cross-Origin-Resource-Policy), after the request was made.
    'no-cors': `<script>
      const fd = new FormData(); fd.append('text', '/approve ${call}'); fd.append('author_name', 'Mallory');
      const stop = ${JSON.stringify(`${chorus}/api/groups/target/stop`)};
      (async () => {
        await fetch(${JSON.stringify(messages)}, { method: 'POST', mode: 'no-cors', body: fd }).catch(() => {});
        await fetch(stop, { method: 'POST', mode: 'no-cors' }).catch(() => {});
        document.title = 'sent';
      })();
    </script>`,
  };
  return `<!doctype html><html><head><title>win a prize</title></head><body>${body[kind]}</body></html>`;
}

suite('pages on other sites cannot change anything, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;
  let attacker: Server;
  let evil: string;
  let call = '';
  const contexts: BrowserContext[] = [];

  const stored = async (): Promise<TranscriptEntry[]> =>
    ((await (await fetch(`${app.webUrl}/api/groups/target/messages?limit=500`)).json()) as MessagePage).messages;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-cross-site-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm: new ScriptedToolLlm(script), tools, logger: silentLogger });
    await app.start();
    attacker = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(attackerPage(url.pathname.slice(1), app.webUrl!, call));
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    evil = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });

    // A call that changes something waits for a person's approval.
    const asked = await fetch(`${app.webUrl}/api/groups/target/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: '@analyst please cancel order 42', author_name: 'Maya' }),
    });
    expect(asked.status).toBe(202);
    // expect.poll works inside tests only: the same wait, by hand.
    for (let tries = 0; call === '' && tries < POLL.timeout / POLL.interval; tries++) {
      call = (await stored()).find((e) => e.tool?.outcome === 'waiting')?.tool?.id ?? '';
      if (call === '') await new Promise((r) => setTimeout(r, POLL.interval));
    }
    if (call === '') throw new Error('the tool call never came to wait for approval');
  }, 60_000);

  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close().catch(() => {});
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function visit(kind: string): Promise<Page> {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${evil}/${kind}`);
    return page;
  }

  /** Nothing the attacker sent was carried out: the same entries, the tool not run, the call waiting. */
  async function expectUnchanged(before: TranscriptEntry[]): Promise<void> {
    const now = await stored();
    // No message, no command's notice, no stop notice.
    const line = (e: TranscriptEntry) => `${e.id} ${e.kind} ${e.text.slice(0, 40)}`;
    expect(now.map(line)).toEqual(before.map(line));
    expect(now.find((e) => e.tool?.id === call)?.tool?.outcome).toBe('waiting');
    expect(tools.count('orders.cancel')).toBe(0);
  }

  for (const kind of ['multipart', 'urlencoded', 'plain']) {
    it(`refuses a ${kind} form another site auto-submits with /approve: 403, nothing recorded or run`, async () => {
      const before = await stored();
      const page = await visit(kind);
      // The form's answer replaces the attacker's page: Chorus's refusal, saying why.
      await page.waitForURL(`${app.webUrl}/api/groups/target/messages`);
      const answer = JSON.parse((await page.locator('body').textContent())!) as Refusal;
      expect(answer.error.code).toBe('cross_site');
      // Two ports of 127.0.0.1 are one site to the browser, and still another origin to Chorus.
      expect(answer.error.message).toContain('same-site');
      await expectUnchanged(before);
    });
  }

  it('refuses no-cors fetches from another site (a form body with /approve, and /stop without a body)', async () => {
    const before = await stored();
    const page = await visit('no-cors');
    await expect.poll(() => page.title(), POLL).toBe('sent');
    await expectUnchanged(before);
  });

  it('Chorus\'s own page still approves the same call, which runs once', async () => {
    const context = await withName(await browser.newContext(), 'Maya');
    contexts.push(context);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${app.webUrl}/#/g/target`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    const input = page.locator('#input');
    await input.fill(`/approve ${call}`);
    await input.press('Enter');
    await expect.poll(() => tools.count('orders.cancel:42'), POLL).toBe(1);
    const decided = async () => (await stored()).find((e) => e.tool?.id === call && e.tool.outcome === 'ok');
    await expect.poll(async () => (await decided())?.tool?.decidedBy, POLL).toBe('Maya');
    expect(errors).toEqual([]);
  });
});
