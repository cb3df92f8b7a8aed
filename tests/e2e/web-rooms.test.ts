/**
 * Rooms across chats on the page, in real Chromium against the FakeGateway: people from another
 * chat of the room carry their platform as a word ("Telegram", "Discord") and foreign bots a "bot"
 * tag; the panel lists the room's chats, "Link a chat" shows a code with what to type where, a
 * code from another chat joins its room and opens it with the composer enabled, and Unlink (or a
 * link made elsewhere, live) changes what the page may write to. axe-core finds nothing serious in
 * the panel.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import { silentLogger } from '../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from '../channels/web/fake-gateway.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, withName } from './browser.js';

const suite = browserSuite('web-rooms');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

suite('web page: rooms across chats', () => {
  let browser: Browser;
  let web: WebChannel;
  let gw: FakeGateway;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
    gw.link('lobby', { channel: 'telegram', chatId: '-100777', title: 'Family' });
    gw.link('lobby', { channel: 'discord', chatId: '998877', title: '#general' });
    gw.append('lobby', { kind: 'human', authorId: 'web:Omar', authorName: 'Omar', text: 'typed on the web' });
    gw.append('lobby', { kind: 'human', authorId: 'telegram:1', authorName: 'Maya', text: 'typed on telegram', origin: { channel: 'telegram', chatId: '-100777' } });
    gw.append('lobby', { kind: 'human', authorId: 'discord:2', authorName: 'Lee', text: 'typed on discord', origin: { channel: 'discord', chatId: '998877' } });
    gw.append('lobby', { kind: 'human', authorId: 'telegram:99', authorName: 'WeatherBot', authorKind: 'bot', text: 'rain at noon', origin: { channel: 'telegram', chatId: '-100777' } });
    gw.append('lobby', { kind: 'agent', authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', text: 'Noted.' });
    gw.addGroup({ id: 'tg-team', title: 'Team chat', channel: 'telegram', chatId: '-100200', participants: ['analyst'] });
    gw.append('tg-team', { kind: 'human', authorId: 'telegram:5', authorName: 'Bob', text: 'hello from the team' });
    gw.addGroup({ id: 'dc-ops', title: 'Ops', channel: 'discord', chatId: '5550', participants: ['writer'] });
    gw.append('dc-ops', { kind: 'human', authorId: 'discord:7', authorName: 'Kim', text: 'please cancel order 7' });
    gw.append('dc-ops', {
      kind: 'tool', authorId: 'agent:writer', authorName: 'Writer', agentId: 'writer', text: '',
      tool: { id: 't1', server: 'orders', tool: 'cancel', input: { order: 7 }, outcome: 'waiting', result: '', resultBytes: 0, deadline: Date.now() + 3_600_000 },
    });
    web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS, aliases: {} });
    await web.start(gw);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.stop();
  });

  async function open(group: string): Promise<Page> {
    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 800 } }), 'Tess');
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: web.url! });
    const page = await context.newPage();
    await page.goto(`${web.url}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return page;
  }

  async function openPanel(page: Page): Promise<void> {
    if (!(await page.locator('#panel').isHidden())) return;
    await page.locator('#panel-toggle').click();
    await page.locator('#panel:not([hidden])').waitFor();
  }

  it('marks people from other chats of the room with their platform, in words, and foreign bots as bots', async () => {
    const page = await open('lobby');
    await expect.poll(() => page.locator('.msg.human').count(), POLL).toBe(4);
    const msg = (text: string) => page.locator('.msg.human', { hasText: text });
    expect(await msg('typed on the web').locator('.platform-tag').count()).toBe(0);
    expect(await msg('typed on telegram').locator('.platform-tag').textContent()).toBe('Telegram');
    expect(await msg('typed on telegram').locator('.role-tag').textContent()).toBe('person');
    expect(await msg('typed on discord').locator('.platform-tag').textContent()).toBe('Discord');
    expect(await msg('rain at noon').locator('.role-tag').textContent()).toBe('bot');
    expect(await msg('rain at noon').locator('.platform-tag').textContent()).toBe('Telegram');
    // The badge is read out with the name: visible text, not a colour alone.
    expect(await msg('typed on telegram').locator('.meta').innerText()).toMatch(/Maya\s*PERSON\s*Telegram/i);
    expect(await page.locator('.msg.agent .platform-tag').count()).toBe(0);
    await page.context().close();

    // A Telegram group's own people, without an origin: its home's platform.
    const team = await open('tg-team');
    await expect.poll(() => team.locator('.msg.human .platform-tag').allTextContents(), POLL).toEqual(['Telegram']);
    await team.context().close();
  });

  it('lists the room\'s chats and shows a link code with what to type, copied with one click', async () => {
    const page = await open('lobby');
    await openPanel(page);
    const rows = page.locator('#room-chats .room-chat');
    await expect.poll(() => rows.allInnerTexts(), POLL).toEqual([
      expect.stringMatching(/Web\s+Lobby\s+home/),
      expect.stringMatching(/Telegram\s+Family\s+Unlink/),
      expect.stringMatching(/Discord\s+#general\s+Unlink/),
    ]);
    expect(await rows.nth(0).locator('button').count()).toBe(0);
    expect(await rows.nth(1).getByRole('button', { name: 'Unlink Telegram chat Family' }).isVisible()).toBe(true);

    await page.getByRole('button', { name: 'Link a chat' }).click();
    const box = page.locator('#link-code');
    await box.locator('.link-command').waitFor();
    const made = gw.linkCalls.filter((c) => c.method === 'linkCode' && c.groupId === 'lobby');
    expect(made.at(-1)).toMatchObject({ by: 'Tess' });
    const code = [...gw.linkCodes.entries()].find(([, v]) => v.groupId === 'lobby')![0];
    expect(await box.locator('.link-code-value code').textContent()).toBe(code);
    expect(await box.innerText()).toContain(`Type /group link ${code} in the Telegram group or Discord channel within 10 minutes`);
    await box.getByRole('button', { name: `Copy /group link ${code}` }).click();
    await expect.poll(() => box.locator('.link-copied').textContent(), POLL).toBe('Copied.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`/group link ${code}`);
    await page.context().close();
  }, 60_000);

  it('a code from a Telegram group joins its room and opens it, writable; Unlink makes it read-only again', async () => {
    const page = await open('lobby');
    await openPanel(page);
    // A garbled code is refused with the reason, next to the field.
    await page.getByLabel('Have a code from another chat?').fill('no such thing!');
    await page.getByRole('button', { name: 'Join its room' }).click();
    await expect.poll(() => page.locator('#link-error').textContent(), POLL).toContain('not a link code');
    expect(await page.locator('#link-join-code').getAttribute('aria-invalid')).toBe('true');

    const { code } = await gw.linkCode('tg-team', 'Bob');
    await page.getByLabel('Have a code from another chat?').fill(code);
    await page.getByRole('button', { name: 'Join its room' }).click();
    await page.waitForURL(/#\/g\/tg-team$/);
    expect(gw.linkCalls.at(-1)).toEqual({ method: 'linkWeb', code, by: 'Tess' });
    await expect.poll(() => page.locator('#input').isDisabled(), POLL).toBe(false);
    expect(await page.locator('#readonly-note').isHidden()).toBe(true);
    await expect.poll(() => page.locator('#group-sub').textContent(), POLL).toContain('also on Web');

    await page.locator('#input').fill('hello from the web');
    await page.locator('#send').click();
    await expect.poll(() => gw.received.map((m) => [m.channel, m.chatId, m.text]), POLL).toContainEqual(['web', 'tg-team', 'hello from the web']);

    await openPanel(page);
    const webRow = page.locator('#room-chats .room-chat[data-channel="web"]');
    expect(await webRow.innerText()).toMatch(/Web\s+this page/);
    await webRow.getByRole('button', { name: 'Unlink the web (this page)' }).click();
    await expect.poll(() => page.locator('#input').isDisabled(), POLL).toBe(true);
    expect(await page.locator('#readonly-note').textContent()).toContain('This group lives on Telegram');
    expect(gw.getGroup('tg-team')!.links).toBeUndefined();
    await page.context().close();
  }, 60_000);

  it('a link made elsewhere enables the composer live, without a reload', async () => {
    const page = await open('dc-ops');
    await expect.poll(() => page.locator('#input').isDisabled(), POLL).toBe(true);
    expect(await page.locator('#readonly-note').textContent()).toContain('This group lives on Discord');
    // Nothing to act with in a group the page only follows: no reactions, no tool decisions.
    const request = page.locator('.msg.tool-request');
    await request.waitFor();
    expect(await request.getByRole('button', { name: 'Approve orders.cancel' }).isVisible()).toBe(false);
    expect(await page.locator('.msg.human', { hasText: 'cancel order 7' }).locator('.react-add').isVisible()).toBe(false);
    gw.link('dc-ops', { channel: 'web', chatId: 'dc-ops' });
    await expect.poll(() => page.locator('#input').isDisabled(), POLL).toBe(false);
    await expect.poll(() => request.getByRole('button', { name: 'Approve orders.cancel' }).isVisible(), POLL).toBe(true);
    expect(await page.locator('.group-item[data-group-id="dc-ops"] .ro').count()).toBe(0);
    await page.context().close();
  }, 60_000);

  it('has no critical or serious axe-core violations with the panel and a link code open', async () => {
    const page = await open('lobby');
    await openPanel(page);
    await page.getByRole('button', { name: 'Link a chat' }).click();
    await page.locator('#link-code .link-command').waitFor();
    await page.evaluate(AXE_SOURCE);
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(ctx: Element, o: object): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }> } }).axe;
      const result = await axe.run(document.querySelector('#panel')!, { resultTypes: ['violations'] });
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
    });
    expect(violations.filter((v) => v.impact === 'critical' || v.impact === 'serious')).toEqual([]);
    // The feed with its badges too.
    const feed = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(ctx: Element, o: object): Promise<{ violations: { id: string; impact: string | null }[] }> } }).axe;
      return (await axe.run(document.querySelector('#messages')!, { resultTypes: ['violations'] })).violations.map((v) => ({ id: v.id, impact: v.impact }));
    });
    expect(feed.filter((v) => v.impact === 'critical' || v.impact === 'serious')).toEqual([]);
    await page.context().close();
  }, 60_000);
});
