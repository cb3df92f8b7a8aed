/**
 * Answers given on request, in real Chromium against the real app: a regenerated reply shares
 * the first answer's bubble (‹ 1/2 › switches, after a reload and in a second browser too, and
 * nothing leaves the log); the answer of "Ask again" names the question it answers and jumps to
 * it, loading it when it is far back; a notice that an agent could not reply has a Retry button
 * that asks that agent again about the same question, and the retry API refuses misuse with
 * 4xx JSON errors.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS } from './browser.js';

const suite = browserSuite('web-answers');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's critical and serious violations on the page as it is now. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.filter((v) => v.impact === 'critical' || v.impact === 'serious').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
  - { id: writer, name: Writer, persona: "You are Writer.", avatar: "✍️", color: "#16a34a" }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: 1000 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: regen, title: Regen, participants: [analyst, writer] }
  - { channel: web, chat_id: again, title: Again, participants: [analyst, writer] }
  - { channel: web, chat_id: retry, title: Retry, participants: [analyst, writer] }
  - { channel: web, chat_id: misuse, title: Misuse, participants: [analyst, writer] }
`;
}

/** What the turn asked the agent (the part of the prompt after "## Your turn"). */
function askedIn(req: LlmRequest): string {
  const user = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  return user.split('## Your turn')[1] ?? '';
}

suite('web page: regenerated answers, ask again and retry', () => {
  let browser: Browser;
  let app: App;
  let base: string;
  let dataDir: string;
  let writerN = 0;
  /** Questions containing one of these fail once for Writer (then it answers). */
  const failOnce = new Set<string>(['a question that fails first', 'misuse question']);
  const contexts: BrowserContext[] = [];
  const llm = new FakeLlm({
    latencyMs: 100,
    replies: {
      writer: (req) => {
        if (!req.mustReply) return '[PASS]';
        // The newest observation (what was just said), and what a forced turn quotes.
        const asked = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
        for (const q of failOnce) {
          if (asked.includes(q)) {
            failOnce.delete(q);
            throw new Error('the provider fell over');
          }
        }
        return `Writer answer number ${++writerN}.`;
      },
      analyst: (req) => (req.mustReply ? 'Analyst here.' : '[PASS]'),
    },
  });

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-answers-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
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

  async function openPage(group: string, dark = false): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, colorScheme: dark ? 'dark' : 'light' });
    contexts.push(context);
    await context.addInitScript(() => localStorage.setItem('chorus.name', 'Maya'));
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), POLL).toBe('live');
    return { page, errors };
  }

  async function send(page: Page, text: string): Promise<void> {
    const input = page.locator('#input');
    await input.fill(text);
    await input.press('Enter');
    await expect.poll(() => input.inputValue(), POLL).toBe('');
  }

  const post = (group: string, text: string) =>
    fetch(`${base}/api/groups/${group}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya' }) });
  const retryApi = (group: string, entryId: string) => fetch(`${base}/api/groups/${group}/messages/${encodeURIComponent(entryId)}/retry`, { method: 'POST' });
  const stored = async (group: string): Promise<TranscriptEntry[]> =>
    ((await (await fetch(`${base}/api/groups/${group}/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;
  const writerMsgs = (page: Page) => page.locator('.msg.agent[data-agent-id="writer"]:not(.streaming)');

  async function openMenu(msg: ReturnType<Page['locator']>): Promise<void> {
    await msg.hover();
    await msg.locator('.actions-btn').click();
    await msg.locator('.msg-menu').waitFor();
  }

  it('regenerate: the answers share one bubble with ‹ n/N ›, after a reload and in a second browser; the log keeps both', async () => {
    const { page, errors } = await openPage('regen');
    const other = await openPage('regen');
    await send(page, '@writer tell me about lighthouses');
    await expect.poll(() => writerMsgs(page).count(), POLL).toBe(1);
    const firstText = (await writerMsgs(page).locator('.text').textContent())!;
    expect(await writerMsgs(page).locator('.alt-nav').count()).toBe(0);
    await openMenu(writerMsgs(page));
    await writerMsgs(page).locator('[data-action="regenerate"]').click();
    // One bubble, now showing the newest answer as 2/2.
    const count = page.locator('.msg.agent[data-agent-id="writer"] .alt-count');
    await expect.poll(() => count.textContent(), POLL).toBe('2/2');
    expect(await writerMsgs(page).count()).toBe(1);
    const secondText = (await writerMsgs(page).locator('.text').textContent())!;
    expect(secondText).not.toBe(firstText);
    expect(await writerMsgs(page).locator('.regen-tag').count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'answers-regenerated.png') });
    // ‹ shows the first answer in the same place; › goes back.
    await page.locator('.alt-prev').click();
    expect(await count.textContent()).toBe('1/2');
    expect(await writerMsgs(page).locator('.text').textContent()).toBe(firstText);
    expect(await page.locator('.alt-prev').isDisabled()).toBe(true);
    // Focus stays on the switch, so the keyboard can go on.
    expect(await page.evaluate(() => document.activeElement?.className)).toBe('alt-next');
    await page.keyboard.press('Enter');
    expect(await count.textContent()).toBe('2/2');
    expect(await writerMsgs(page).locator('.text').textContent()).toBe(secondText);
    // The question stays right above the bubble.
    const order = await page.locator('#messages > li.msg').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.kind));
    expect(order).toEqual(['human', 'agent']);
    // The second browser saw it arrive the same way.
    await expect.poll(() => other.page.locator('.alt-count').textContent(), POLL).toBe('2/2');
    expect(await writerMsgs(other.page).count()).toBe(1);
    // Both answers are in the log; the second names the first.
    const log = (await stored('regen')).filter((e) => e.agentId === 'writer');
    expect(log.map((e) => e.text)).toEqual([firstText, secondText]);
    expect(log[1]!.meta?.regenerates).toBe(log[0]!.id);
    // Regenerating from the first answer shown asks for another after the newest: 3/3.
    await page.locator('.alt-prev').click();
    await openMenu(writerMsgs(page));
    await writerMsgs(page).locator('[data-action="regenerate"]').click();
    await expect.poll(() => count.textContent(), POLL).toBe('3/3');
    expect((await stored('regen')).filter((e) => e.agentId === 'writer')[2]!.meta?.regenerates).toBe(log[1]!.id);
    // After a reload the bubble is rebuilt from the entries: one bubble, the newest shown.
    await page.reload();
    await page.locator('body[data-ready="true"]').waitFor();
    await expect.poll(() => count.textContent(), POLL).toBe('3/3');
    expect(await writerMsgs(page).count()).toBe(1);
    await page.locator('.alt-prev').click();
    await page.locator('.alt-prev').click();
    expect(await writerMsgs(page).locator('.text').textContent()).toBe(firstText);
    expect(errors).toEqual([]);
    expect(other.errors).toEqual([]);
  });

  it('ask again: the new answer names its question; a click jumps to it, loading it when it is far back', async () => {
    const { page, errors } = await openPage('again');
    await send(page, '@writer what is the tallest lighthouse');
    await expect.poll(() => writerMsgs(page).count(), POLL).toBe(1);
    // A plain answer right under its question has no reference.
    expect(await writerMsgs(page).locator('.question-ref').count()).toBe(0);
    await send(page, '@analyst something else entirely');
    await expect.poll(() => page.locator('.msg.agent[data-agent-id="analyst"]').count(), POLL).toBe(1);
    await openMenu(writerMsgs(page).first());
    await writerMsgs(page).first().locator('[data-action="ask-again"]').click();
    await expect.poll(() => writerMsgs(page).count(), POLL).toBe(2);
    const ref = writerMsgs(page).nth(1).locator('.question-ref');
    expect(await ref.textContent()).toBe('↪ Answers Maya: @writer what is the tallest lighthouse');
    await page.screenshot({ path: join(SHOTS, 'answers-ask-again.png') });
    const question = page.locator('.msg.human', { hasText: 'what is the tallest lighthouse' });
    await ref.click();
    await expect.poll(() => question.evaluate((el) => el.classList.contains('flash') || el.classList.contains('jumped')), POLL).toBe(true);
    // Far back: sixty messages later and a reload, the question is not loaded; the reference still jumps.
    for (let i = 1; i <= 60; i++) expect((await post('again', `filler ${i}`)).status).toBe(202);
    await openMenu(writerMsgs(page).nth(1));
    await writerMsgs(page).nth(1).locator('[data-action="ask-again"]').click();
    await expect.poll(() => writerMsgs(page).count(), POLL).toBe(3);
    await page.reload();
    await page.locator('body[data-ready="true"]').waitFor();
    const newest = writerMsgs(page).last();
    await expect.poll(() => newest.locator('.question-ref').count(), POLL).toBe(1);
    expect(await page.locator('.msg.human', { hasText: 'what is the tallest lighthouse' }).count()).toBe(0);
    expect(await newest.locator('.question-ref').textContent()).toBe('↪ Answers an earlier message');
    await newest.locator('.question-ref').click();
    const far = page.locator('.msg.human', { hasText: 'what is the tallest lighthouse' });
    await expect.poll(() => far.count(), POLL).toBe(1);
    await expect.poll(() => far.evaluate((el) => el.classList.contains('jumped')), POLL).toBe(true);
    expect(errors).toEqual([]);
  });

  it('Retry on a failure notice asks the agent again about the same question', async () => {
    const { page, errors } = await openPage('retry');
    await send(page, '@writer a question that fails first');
    const notice = page.locator('.msg.decision-error', { hasText: 'Writer could not reply' });
    await expect.poll(() => notice.count(), POLL).toBe(1);
    const retry = notice.locator('.retry-btn');
    expect(await retry.isVisible()).toBe(true);
    expect(await retry.getAttribute('aria-label')).toBe('Retry: ask Writer again');
    await page.screenshot({ path: join(SHOTS, 'answers-retry-before.png') });
    // Something else happens before the retry: the retry still asks about the failed question.
    await send(page, '@analyst an unrelated message');
    await expect.poll(() => page.locator('.msg.agent[data-agent-id="analyst"]').count(), POLL).toBe(1);
    const calls = llm.callsFor('writer').length;
    await retry.click();
    await expect.poll(() => writerMsgs(page).count(), POLL).toBe(1);
    // Writer was asked (it had not seen the question: its failed turn left it in its mailbox),
    // and its answer is recorded as the answer to the failed question, not to the newer message.
    expect(llm.callsFor('writer').length).toBe(calls + 1);
    expect(llm.callsFor('writer')[calls]!.mustReply).toBe(true);
    const log = await stored('retry');
    const question = log.find((e) => e.text === '@writer a question that fails first')!;
    expect(log.filter((e) => e.agentId === 'writer').map((e) => e.meta?.answers)).toEqual([question.id]);
    expect(await retry.textContent()).toBe('Asked again');
    expect(await retry.isDisabled()).toBe(true);
    // The answer names the question it answers.
    expect(await writerMsgs(page).locator('.question-ref').textContent()).toBe('↪ Answers Maya: @writer a question that fails first');
    expect(await page.locator('.msg.local').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'answers-retry-after.png') });
    expect(errors).toEqual([]);
  });

  it('the answer switch, the question reference and Retry have no critical or serious axe-core violations, light and dark', async () => {
    for (const [group, dark] of [['regen', false], ['again', true], ['retry', false], ['retry', true]] as const) {
      const { page } = await openPage(group, dark);
      await expect.poll(() => writerMsgs(page).count(), POLL).toBeGreaterThan(0);
      expect(await page.locator('.alt-nav, .question-ref, .retry-btn').count()).toBeGreaterThan(0);
      expect(await seriousViolations(page)).toEqual([]);
    }
  });

  it('the retry API answers misuse with 4xx JSON errors', async () => {
    expect((await post('misuse', '@writer misuse question')).status).toBe(202);
    await expect.poll(async () => (await stored('misuse')).some((e) => e.decision?.type === 'error'), POLL).toBe(true);
    const log = await stored('misuse');
    const notice = log.find((e) => e.decision?.type === 'error')!;
    const human = log.find((e) => e.kind === 'human')!;
    const expectError = async (res: Response, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
    };
    await expectError(await retryApi('misuse', human.id), 400, 'not_failure');
    await expectError(await retryApi('misuse', 'misuse.9999'), 404, 'unknown_entry');
    await expectError(await retryApi('misuse', 'not-an-id'), 404, 'unknown_entry');
    await expectError(await retryApi('nowhere', notice.id), 404, 'unknown_group');
    await expectError(await fetch(`${base}/api/groups/misuse/messages/${notice.id}/retry`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1' }), 400, 'bad_json');
    // A member no longer in the group cannot be asked.
    expect((await fetch(`${base}/api/groups/misuse/members/writer`, { method: 'DELETE' })).status).toBe(200);
    await expectError(await retryApi('misuse', notice.id), 409, 'not_member');
    expect((await fetch(`${base}/api/groups/misuse/members`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent: 'writer' }) })).status).toBe(200);
    // Used right, it is queued and says which question it asks about.
    const ok = await retryApi('misuse', notice.id);
    expect(ok.status).toBe(202);
    expect(await ok.json()).toMatchObject({ status: 'queued', agentId: 'writer', retries: notice.id });
    await expect.poll(async () => (await stored('misuse')).filter((e) => e.agentId === 'writer').length, POLL).toBe(1);
  });
});
