/**
 * Editing and deleting one's own message, in real Chromium against the real app: Edit and Delete
 * are offered on one's own messages only; an edit is made in place and shows "edited"; a second
 * browser (another client key) sees the edit and the deletion live and after a reload; the
 * agents' next prompt has the edit as an observation and never the deleted text; axe-core finds
 * nothing critical or serious on a page showing both.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import type { WebChannel } from '../../src/channels/web/WebChannel.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-edits');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst], config: { reply_strategy: mention_only } }
`;
}

/** axe-core's violations on the page as it is now, with where they are. */
async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string | null; where: string[] }>> {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    type Result = { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> };
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<Result> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.map((n) => `${n.target.join(' ')} ${(n.failureSummary ?? '').slice(0, 200)}`) }));
  });
}

const shown = (req: LlmRequest) => req.messages.map((m) => m.content).join('\n');

suite('editing and deleting a message, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;
  const llm = new FakeLlm({ replies: { analyst: (req) => (req.mustReply ? 'On it.' : '[PASS]') } });

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-edits-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function open(name: string, colorScheme: 'light' | 'dark' = 'light'): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme }), name);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(app.webUrl + '/#/g/lobby');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { context, page, errors };
  }

  async function send(page: Page, text: string): Promise<void> {
    await page.locator('#input').fill(text);
    await page.locator('#send').click();
    await page.locator('.msg.human.own', { hasText: text }).waitFor();
  }

  async function menu(page: Page, hasText: string): Promise<string[]> {
    const msg = page.locator('.msg.human', { hasText });
    await msg.hover();
    await msg.locator('.actions-btn').click();
    const items = await page.locator('.msg-menu [role="menuitem"]').allTextContents();
    return items;
  }

  it('edits and deletes live in another browser and after a reload; the agents see the edit, never the deleted text', async () => {
    const maya = await open('Maya');
    const omar = await open('Omar');

    await send(maya.page, '@analyst the plan is alpha-one');
    await omar.page.locator('.msg.human', { hasText: 'alpha-one' }).waitFor();
    await expect.poll(() => llm.callsFor('analyst').length, POLL).toBeGreaterThan(0);

    // Only the sender is offered Edit and Delete.
    expect(await menu(omar.page, 'alpha-one')).toEqual(['Reply to Maya']);
    await omar.page.keyboard.press('Escape');
    expect(await menu(maya.page, 'alpha-one')).toEqual(['Reply to Maya', 'Edit', 'Delete']);

    // Edit in place.
    await maya.page.locator('.msg-menu [role="menuitem"]', { hasText: 'Edit' }).click();
    const field = maya.page.locator('.edit-form textarea');
    expect(await field.inputValue()).toBe('@analyst the plan is alpha-one');
    await field.fill('@analyst the plan is beta-two');
    await maya.page.locator('.edit-form .edit-save').click();
    const mine = maya.page.locator('.msg.human.own', { hasText: 'beta-two' });
    await mine.locator('.edited-tag').waitFor();
    expect(await mine.locator('.edited-tag').textContent()).toMatch(/^edited \S/);
    expect(await maya.page.locator('.edit-form').count()).toBe(0);
    // The other browser sees it live, without the old text and without a line for the agents' note.
    const theirs = omar.page.locator('.msg.human', { hasText: 'beta-two' });
    await theirs.locator('.edited-tag').waitFor();
    expect(await omar.page.locator('.msg', { hasText: 'alpha-one' }).count()).toBe(0);
    expect(await omar.page.locator('.msg', { hasText: 'edited their message' }).count()).toBe(0);

    // The agents' next prompt has the edit.
    await send(maya.page, '@analyst what is the plan?');
    await expect.poll(() => llm.callsFor('analyst').some((c) => shown(c).includes('Maya edited their message: @analyst the plan is beta-two')), POLL).toBe(true);

    // Delete (after confirming).
    await send(maya.page, '@analyst the door code is zebra-42');
    await expect.poll(() => llm.callsFor('analyst').some((c) => shown(c).includes('zebra-42')), POLL).toBe(true);
    await omar.page.locator('.msg.human', { hasText: 'zebra-42' }).waitFor();
    await menu(maya.page, 'zebra-42');
    maya.page.once('dialog', (d) => void d.accept());
    await maya.page.locator('.msg-menu [role="menuitem"]', { hasText: 'Delete' }).click();
    await expect.poll(() => maya.page.locator('.msg.human.deleted .deleted-text').count(), POLL).toBe(1);
    await expect.poll(() => omar.page.locator('.msg.human.deleted .deleted-text').count(), POLL).toBe(1);
    for (const p of [maya.page, omar.page]) {
      expect(await p.locator('#feed, body').first().textContent()).not.toContain('zebra-42');
      expect(await p.locator('.msg.human.deleted .actions-btn').count()).toBe(0);
    }

    // After a reload the other browser shows the same.
    await omar.page.reload();
    await omar.page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await omar.page.locator('.msg.human', { hasText: 'beta-two' }).locator('.edited-tag').waitFor();
    expect(await omar.page.locator('.msg.human.deleted .deleted-text').textContent()).toBe('message deleted');
    expect(await omar.page.locator('body').textContent()).not.toContain('zebra-42');
    expect(await omar.page.locator('body').textContent()).not.toContain('alpha-one');

    // The next prompt never has the deleted text.
    const before = llm.calls.length;
    await send(maya.page, '@analyst what was the code?');
    await expect.poll(() => llm.calls.length, POLL).toBeGreaterThan(before);
    for (const c of llm.calls.slice(before)) expect(shown(c)).not.toContain('zebra-42');

    // Nothing critical or serious for a screen reader or the contrast checker, light and dark.
    const dark = await open('Dana', 'dark');
    await dark.page.locator('.msg.human .edited-tag').waitFor();
    for (const p of [maya.page, omar.page, dark.page]) expect((await axeViolations(p)).filter((v) => v.impact === 'critical' || v.impact === 'serious')).toEqual([]);
    await dark.context.close();
    expect([...maya.errors, ...omar.errors]).toEqual([]);
    await maya.context.close();
    await omar.context.close();
  }, 90_000);

  it('a page whose stream was down while a message was deleted draws it deleted once it is back', async () => {
    const maya = await open('Maya');
    const omar = await open('Omar');
    await send(maya.page, 'a line about quokka-77');
    await omar.page.locator('.msg.human', { hasText: 'quokka-77' }).waitFor();
    // Omar's streams drop and stay down (his page's reconnect is held) while Maya deletes.
    let reopen!: () => void;
    const held = new Promise<void>((r) => (reopen = r));
    await omar.page.route('**/events?**', async (route) => {
      await held;
      await route.continue();
    });
    (app.channels.find((c) => c.kind === 'web') as WebChannel).disconnectStreams();
    await expect.poll(() => omar.page.locator('#conn').getAttribute('data-state'), POLL).toBe('reconnecting');
    await menu(maya.page, 'quokka-77');
    maya.page.once('dialog', (d) => void d.accept());
    await maya.page.locator('.msg-menu [role="menuitem"]', { hasText: 'Delete' }).click();
    await expect.poll(() => maya.page.locator('.msg.human.deleted').count(), POLL).toBeGreaterThan(0);
    expect(await omar.page.locator('.msg.human', { hasText: 'quokka-77' }).count()).toBe(1);
    reopen();
    await expect.poll(() => omar.page.locator('.msg.human', { hasText: 'quokka-77' }).count(), { timeout: 20_000, interval: 100 }).toBe(0);
    await maya.context.close();
    await omar.context.close();
  }, 60_000);
});
