/**
 * Search and jumping to any message, in real Chromium against the real app and file store: a
 * word said only 1,100 messages back is found (Ctrl+K, type, choose), the feed loads the page
 * around it, scrolls it into view and highlights it; matched words are <mark> elements and a
 * message's markup stays text; "↩ an earlier message" jumps to a message not loaded; Escape
 * closes the search and gives focus back.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, LAUNCH_ARGS, POLL, SHOTS, withName } from './browser.js';

const suite = browserSuite('web-search');
const MESSAGES = 1500;
const NEEDLE = 400;
const REPLIED = 300;

/** A long history written straight into the data directory (15 records of 100 messages). */
function writeHistory(dataDir: string): void {
  const dir = join(dataDir, 'groups', 'archive', 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const lines = [JSON.stringify({ v: 1, n: 1, ts: 0, head: { id: 'archive', title: 'Archive', channel: 'web', chatId: 'archive', participants: ['analyst'], config: {}, createdAt: 0, state } })];
  for (let r = 0; r < MESSAGES / 100; r++) {
    const entries = Array.from({ length: 100 }, (_, k) => {
      const seq = r * 100 + k + 1;
      const text = seq === NEEDLE ? 'the Zèbra <img src=x onerror="window.pwned=1"> crossing' : `archived message ${seq}`;
      return {
        id: `archive.${seq}`, seq, kind: 'human', ts: Date.UTC(2025, 0, 1) + seq * 60_000, authorId: 'web:maya', authorName: 'Maya', text, platformMessageId: `a${seq}`,
        ...(seq === MESSAGES ? { replyTo: `archive.${REPLIED}` } : {}),
      };
    });
    lines.push(JSON.stringify({ v: 1, n: r + 2, ts: 0, entries }));
  }
  writeFileSync(join(dir, '000000000001.jsonl'), lines.join('\n') + '\n');
}

suite('search in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-search-e2e-'));
    writeHistory(dataDir);
    const yaml = `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
`;
    const { config } = parseConfigText(yaml, 'test');
    app = await createApp({ config, llm: new FakeLlm(), logger: silentLogger });
    await app.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close().catch(() => {});
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function openPage(): Promise<{ page: Page; errors: string[] }> {
    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 800 } }));
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(POLL.timeout);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${app.webUrl}/#/g/archive`);
    await page.locator('body[data-ready="true"]').waitFor();
    await page.locator(`li[data-entry-id="archive.${MESSAGES}"]`).waitFor();
    return { page, errors };
  }

  it('Ctrl+K opens the search, Escape closes it and gives focus back; the search button is named', async () => {
    const { page, errors } = await openPage();
    await page.locator('#input').focus();
    await page.keyboard.press('Control+k');
    const dialog = page.locator('#search-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('search-input');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    await page.getByRole('button', { name: 'Search messages' }).click();
    await dialog.waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('search-btn');
    expect(errors).toEqual([]);
  });

  it(`finds a word said only ${MESSAGES - NEEDLE} messages back, marks it, and jumps there: visible and highlighted`, async () => {
    const { page, errors } = await openPage();
    expect(await page.locator(`li[data-entry-id="archive.${NEEDLE}"]`).count()).toBe(0);
    await page.keyboard.press('Control+k');
    await page.locator('#search-input').fill('zebra');
    const hit = page.locator(`.search-hit[data-entry-id="archive.${NEEDLE}"]`);
    await hit.waitFor();
    expect(await page.locator('.search-hit').count()).toBe(1);
    // The match is a <mark>; the message's own markup is text, never an element.
    expect(await hit.locator('mark').allTextContents()).toEqual(['Zèbra']);
    expect(await hit.locator('.search-snippet').textContent()).toBe('the Zèbra <img src=x onerror="window.pwned=1"> crossing');
    expect(await page.locator('#search-results img').count()).toBe(0);
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'search-results.png') });
    await hit.click();
    await page.locator('#search-dialog').waitFor({ state: 'hidden' });
    const target = page.locator(`li.msg.jumped[data-entry-id="archive.${NEEDLE}"]`);
    await target.waitFor();
    expect(await target.isVisible()).toBe(true);
    const box = (await target.boundingBox())!;
    const feed = (await page.locator('#feed').boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(feed.y);
    expect(box.y + box.height).toBeLessThanOrEqual(feed.y + feed.height);
    await page.screenshot({ path: join(SHOTS, 'search-jumped.png') });
    // The hole between the page around it and the newest messages is marked, and fills when asked.
    const gap = page.locator('li.gap button');
    expect(await gap.count()).toBe(1);
    await gap.click();
    await page.locator(`li[data-entry-id="archive.${NEEDLE + 100}"]`).waitFor({ state: 'attached' });
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('"↩ an earlier message" jumps to the message replied to, loading the page around it', async () => {
    const { page, errors } = await openPage();
    const ref = page.locator(`li[data-entry-id="archive.${MESSAGES}"] .reply-ref`);
    expect(await ref.textContent()).toBe('↩ an earlier message');
    await ref.click();
    const target = page.locator(`li.msg.jumped[data-entry-id="archive.${REPLIED}"]`);
    await target.waitFor();
    expect(await target.isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });
});
