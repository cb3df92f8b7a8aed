/**
 * People never look like agents on the page, in real Chromium: a Telegram
 * person called "Analyst" is shown as a person ("person" tag, no avatar or @handle) next to the
 * agent Analyst; a name with a right-to-left override shows its real letters; and the composer
 * refuses an agent's name with the reason while keeping the text. (Which side a person's message
 * sits on depends on who is reading: web-people.test.ts.)
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see web-page.test.ts).
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import { silentLogger } from '../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from '../channels/web/fake-gateway.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL } from './browser.js';

const suite = browserSuite('web-identity');

suite('web page: people and agents', () => {
  let browser: Browser;
  let web: WebChannel;
  let gw: FakeGateway;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    gw = new FakeGateway();
    gw.addGroup({ id: 'lobby', title: 'Lobby', channel: 'web', chatId: 'lobby', participants: ['analyst', 'writer'] });
    gw.addGroup({ id: 'tg-team', title: 'Team chat', channel: 'telegram', chatId: '-100200', participants: ['analyst', 'writer'] });
    gw.append('tg-team', { kind: 'human', authorId: 'telegram:1', authorName: 'Analyst', text: 'As the analyst I now recommend selling everything' });
    gw.append('tg-team', { kind: 'agent', authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst', text: 'Revenue +8% year over year.' });
    // Written before names were cleaned: the page must not let the override reorder it.
    gw.append('tg-team', { kind: 'human', authorId: 'telegram:2', authorName: '\u202Etsylan\u202CA', text: 'hello' });
    web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS, aliases: {} });
    await web.start(gw);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.stop();
  });

  it('shows a person called "Analyst" as a person, distinct from the agent', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(web.url + '/#/g/tg-team');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('.msg').count(), POLL).toBe(3);

    const person = page.locator('.msg.human', { hasText: 'selling everything' });
    const agent = page.locator('.msg.agent', { hasText: 'Revenue' });
    expect(await person.locator('.author').textContent()).toBe('Analyst');
    expect(await person.locator('.role-tag').textContent()).toBe('person');
    expect(await person.locator('.handle').count()).toBe(0);
    expect(await person.locator('.avatar').count()).toBe(0);
    expect(await agent.locator('.handle').textContent()).toBe('@analyst');
    expect(await agent.locator('.role-tag').count()).toBe(0);
    // Someone else's message: on the left like the agents', but drawn as a person's.
    expect(await person.evaluate((el) => el.classList.contains('other'))).toBe(true);
    const side = (sel: typeof person) => sel.evaluate((el) => getComputedStyle(el).justifyContent);
    expect(await side(person)).not.toBe('flex-end');
    expect(await person.locator('.bubble').evaluate((el) => getComputedStyle(el).borderLeftWidth)).not.toBe(
      await agent.locator('.bubble').evaluate((el) => getComputedStyle(el).borderLeftWidth),
    );

    const rtl = page.locator('.msg.human', { hasText: 'hello' }).locator('.author');
    expect(await rtl.textContent()).toBe('tsylanA');
    expect(await rtl.evaluate((el) => el.tagName)).toBe('BDI');
    await context.close();
  });

  it("refuses to post under an agent's name, says why, and keeps the text", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(web.url + '/#/g/lobby');
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await page.locator('#input').fill('As the analyst I now recommend selling everything');
    await page.locator('#send').click();
    // A newcomer is asked for a name first.
    await page.locator('#name-dialog[open]').waitFor();
    await page.locator('#author-name').fill('Analyst (bot)');
    await page.locator('#name-save').click();
    await expect.poll(() => page.locator('#composer-error').textContent(), POLL).toContain('agent Analyst');
    expect(await page.locator('#input').inputValue()).toBe('As the analyst I now recommend selling everything');
    expect(gw.received).toHaveLength(0);

    // The error offers to change the name right there.
    await page.locator('#composer-error button', { hasText: 'Change your name' }).click();
    await page.locator('#name-dialog[open]').waitFor();
    expect(await page.locator('#name-error').textContent()).toContain('agent Analyst');
    await page.locator('#author-name').fill('Maya');
    await page.locator('#name-save').click();
    await page.locator('#send').click();
    await expect.poll(() => gw.received.length, POLL).toBe(1);
    expect(gw.received[0]!.author.name).toBe('Maya');
    await context.close();
  });
});
