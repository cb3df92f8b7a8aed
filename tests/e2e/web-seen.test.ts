/**
 * "What did <Agent> see?" in real Chromium against the real app: an agent reply's details open a
 * section listing the messages its model was shown (as text: markup typed by a person stays
 * visible as typed), its earlier turns collapsed, all reachable by accessible name.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS, withName } from './browser.js';

const suite = browserSuite('web-seen');

suite('web page: what did the agent see?', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  const llm = new FakeLlm({ replies: { writer: 'Writer says the plan is fine.', analyst: 'Analyst has looked at it.' } });

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-seen-'));
    const yaml = `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
  - { id: writer, name: Writer, persona: "You are Writer." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer] }
`;
    const { config } = parseConfigText(yaml, 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const stored = async (): Promise<TranscriptEntry[]> => ((await (await fetch(`${base}/api/groups/lobby/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;
  const post = (text: string) => fetch(`${base}/api/groups/lobby/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya' }) });

  it('an agent reply\'s details show the messages its model was shown, as text', async () => {
    expect((await post('@writer is the plan <b>fine</b>?')).status).toBe(202);
    await expect.poll(async () => (await stored()).filter((e) => e.kind === 'agent').length, POLL).toBe(1);
    expect((await post('@analyst your view?')).status).toBe(202);
    await expect.poll(async () => (await stored()).filter((e) => e.kind === 'agent').length, POLL).toBe(2);

    // The route itself: unknown entries and a person's message are refused.
    const human = (await stored()).find((e) => e.kind === 'human')!;
    expect((await fetch(`${base}/api/groups/lobby/messages/lobby.9999/context`)).status).toBe(404);
    const notReply = await fetch(`${base}/api/groups/lobby/messages/${human.id}/context`);
    expect(notReply.status).toBe(400);
    expect(((await notReply.json()) as { error: { code: string } }).error.code).toBe('not_agent_reply');

    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 900 } }));
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/#/g/lobby`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    const reply = page.locator('.msg.agent[data-agent-id="analyst"]').last();
    await reply.locator('.details-btn').click();
    const seeBtn = reply.getByRole('button', { name: 'What did Analyst see?' });
    await expect.poll(() => seeBtn.getAttribute('aria-expanded'), POLL).toBe('false');
    await seeBtn.click();
    const region = reply.getByRole('region', { name: 'What Analyst saw' });
    const items = region.locator('.seen-list').first().locator('.seen-msg');
    await expect.poll(() => items.count(), POLL).toBe(3);
    expect(await items.locator('.seen-text').allTextContents()).toEqual(['@writer is the plan <b>fine</b>?', 'Writer says the plan is fine.', '@analyst your view?']);
    expect(await items.locator('.seen-author').allTextContents()).toEqual(['Maya', 'Writer', 'Maya']);
    // Typed markup is never markup on the page.
    expect(await region.locator('b').count()).toBe(0);
    // The earlier turns and the persona are collapsed until asked for.
    const turns = region.locator('details.seen-part', { hasText: "Analyst's earlier turns" });
    expect(await turns.getAttribute('open')).toBeNull();
    expect(await seeBtn.getAttribute('aria-expanded')).toBe('true');
    await page.screenshot({ path: join(SHOTS, 'seen-details.png') });
    expect(errors).toEqual([]);
    await context.close();
  });
});
