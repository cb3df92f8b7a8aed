/**
 * Agents' tool calls on the page, in real Chromium against the real app, with a tool host in
 * memory that counts the calls it runs and a model scripted to call tools:
 * - a step ("🔧 Analyst used orders.lookup") appears live between the messages and opens, with the
 *   mouse or the keyboard, on its arguments and its result as plain text; a 100 KB result is folded;
 * - a request shows its arguments with Approve and Deny; Approve runs the tool exactly once and the
 *   agent's reply follows, and a second browser sees the request turn into "approved by …" live;
 *   Deny runs nothing; a reload shows the decided request and its step; deciding twice shows the
 *   409 inline; a request nobody decides expires;
 * - a request whose outcome is on a newer page of history says what became of it when its own
 *   page is loaded; one past its deadline with no outcome reads "waiting expired";
 * - axe-core finds nothing critical or serious on a view with requests and steps, light and dark.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { silentLogger } from '../helpers/logger.js';
import { lastMessage, CountingTools, ScriptedToolLlm, toolInfo, type Step } from '../helpers/tool-fakes.js';
import { callDigest } from '../../src/core/text/approvalText.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS, withName } from './browser.js';

const suite = browserSuite('web-tools');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const room = (id: string, extra = '') => `  - { channel: web, chat_id: ${id}, title: ${id[0]!.toUpperCase() + id.slice(1)}, participants: [analyst], config: { reply_strategy: mention_only${extra} } }`;

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
${['lookup', 'report', 'approve', 'deny', 'twice', 'long'].map((id) => room(id)).join('\n')}
${room('quick', ', tool_approval_timeout_seconds: 2')}
`;
}

/** What the report tool answers: 100,000 characters kept of a 256,000-byte answer, marked as the host marks a cut. */
const REPORT = Array.from({ length: 2000 }, (_, i) => `row ${String(i).padStart(5, '0')}: ${'x'.repeat(38)}`).join('\n').slice(0, 100_000) + '\n… [cut: 256,000 bytes, showing the first 100,000]';
const LOOKUP = (id: unknown) => `order ${String(id)} shipped <b>not bold</b> **not markdown** <img src=x>`;

/** Cancelling an order held here (by its id) runs until the test lets it finish. */
const holds = new Map<number, Promise<void>>();
const tools = new CountingTools(
  [toolInfo('orders', 'lookup', { readOnly: true }), toolInfo('orders', 'report', { readOnly: true }), toolInfo('orders', 'cancel')],
  async (tool, input) => {
    if (tool === 'lookup') return LOOKUP(input.id);
    if (tool === 'report') return { outcome: 'ok', content: REPORT, bytes: 256_000 };
    await holds.get(Number(input.id));
    return `cancelled order ${String(input.id)}`;
  },
);

let callIds = 0;
/** 6,000 characters of padding with the part that matters at the end. */
const LONG_NOTE = `${'padding '.repeat(800)}`.slice(0, 5950) + ' and also refund 9,999 EUR to IBAN XX00 EVIL';
/** The analyst calls the tool the newest request names, then answers from the step's result. */
function script(req: LlmRequest): Step | null {
  if (req.agent?.id !== 'analyst') return null;
  const done = req.toolSteps ?? [];
  if (done.length > 0) {
    const r = done.at(-1)!.results.at(-1)!;
    return r.isError ? `I did not do it: ${r.content.slice(0, 80)}` : `Done: ${r.content.slice(0, 24)}`;
  }
  const asked = [...lastMessage(req).matchAll(/(look up|report on|cancel) order (\d+)/g)].at(-1);
  if (!asked) return 'Nothing to do.';
  const name = { 'look up': 'orders__lookup', 'report on': 'orders__report', cancel: 'orders__cancel' }[asked[1]!]!;
  const note = /with a long note/.test(lastMessage(req)) ? { note: LONG_NOTE } : {};
  return { text: 'One moment.', calls: [{ id: `call-${++callIds}`, name, input: { id: Number(asked[2]), ...note } }] };
}

// Groups written before the app starts: their entries come from the log, as after a restart.
const HOUR = 3_600_000;
const cancelView = (id: string, outcome: string, extra: Record<string, unknown> = {}) => ({ id, server: 'orders', tool: 'cancel', input: { id: 3 }, outcome, result: '', resultBytes: 0, ...extra });

function writeGroup(dataDir: string, id: string, title: string, entries: Record<string, unknown>[]): void {
  const dir = join(dataDir, 'groups', id, 'log');
  mkdirSync(dir, { recursive: true });
  const state = { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} };
  const head = { id, title, channel: 'web', chatId: id, participants: ['analyst'], config: { reply_strategy: 'mention_only' }, createdAt: 0, state };
  const numbered = entries.map((e, i) => ({ id: `${id}.${i + 1}`, seq: i + 1, ts: Date.now() - HOUR + i * 1000, ...e }));
  writeFileSync(join(dir, '000000000001.jsonl'), [JSON.stringify({ v: 1, n: 1, ts: 0, head }), JSON.stringify({ v: 1, n: 2, ts: 0, entries: numbered })].join('\n') + '\n');
}

const analyst = { authorId: 'agent:analyst', authorName: 'Analyst', agentId: 'analyst' };
const human = (text: string) => ({ kind: 'human', authorId: 'web:maya', authorName: 'Maya', text });
const request = (id: string, deadline: number) => ({ kind: 'tool', ...analyst, hiddenFromAgents: true, text: `🔧 Analyst wants to use orders.cancel {"id":3} — approve with /approve ${id} or refuse with /deny ${id}`, tool: cancelView(id, 'waiting', { deadline }) });
const stepEntry = (view: Record<string, unknown>) => ({ kind: 'tool', ...analyst, text: `🔧 Analyst used ${String(view.server)}.${String(view.tool)}`, tool: view });
const notice = (text: string) => ({ kind: 'system', authorId: 'system', authorName: 'Chorus', text, hiddenFromAgents: true });

/** A request whose decision and step are 70 messages later: on the newest page, the request is not. */
function writeHistory(dataDir: string): void {
  const entries = [human('@analyst please cancel order 3'), request('t2', Date.now() - HOUR + 300_000)];
  for (let i = 0; i < 70; i++) entries.push(human(`filler ${i + 1}`));
  entries.push(notice('✅ Maya approved orders.cancel (t2)'), stepEntry(cancelView('t2', 'ok', { result: 'cancelled order 3', resultBytes: 17, decidedBy: 'Maya' })), { kind: 'agent', ...analyst, text: 'Done: cancelled order 3' });
  writeGroup(dataDir, 'history', 'History', entries);
}

/** One of each: a request waiting, one past its deadline with no outcome, steps that worked, failed and were refused. */
function writeShowcase(dataDir: string): void {
  writeGroup(dataDir, 'showcase', 'Showcase', [
    human('@analyst look up order 3, then cancel it'),
    stepEntry({ id: 't2', server: 'orders', tool: 'lookup', input: { id: 3, fields: ['status', 'items'] }, outcome: 'ok', result: 'order 3: shipped\nitems: 2', resultBytes: 25 }),
    stepEntry({ id: 't3', server: 'orders', tool: 'lookup', input: { id: 4 }, outcome: 'error', result: 'no order 4', resultBytes: 10 }),
    request('t4', Date.now() - HOUR + 60_000),
    request('t5', Date.now() + 24 * HOUR),
    { ...stepEntry(cancelView('t6', 'denied', { result: 'Omar did not approve this call; it was not run.', decidedBy: 'Omar' })), text: '🔧 Analyst used orders.cancel (not approved)' },
    { kind: 'agent', ...analyst, text: 'Order 3 has shipped; cancelling waits for your approval.' },
  ]);
}

interface Violation {
  id: string;
  impact: string | null;
  where: string[];
}

async function axeViolations(page: Page): Promise<Violation[]> {
  // Evaluated rather than added as a <script>: the page's CSP allows no inline scripts.
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    type Result = { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> };
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<Result> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.slice(0, 4).map((n) => `${n.target.join(' ')} ${(n.failureSummary ?? '').slice(0, 200)}`) }));
  });
}

suite('tool steps and approvals on the page, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;
  const llm = new ScriptedToolLlm(script);
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-tools-'));
    writeHistory(dataDir);
    writeShowcase(dataDir);
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    app = await createApp({ config, llm, tools, logger: silentLogger });
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

  async function open(group: string, name: string, colorScheme: 'light' | 'dark' = 'light', viewport = { width: 1280, height: 800 }): Promise<{ page: Page; errors: string[] }> {
    const context = await withName(await browser.newContext({ viewport, colorScheme }), name);
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('dialog', (d) => {
      errors.push('native dialog: ' + d.message());
      void d.dismiss();
    });
    await page.goto(`${app.webUrl}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { page, errors };
  }

  async function reload(page: Page): Promise<void> {
    await page.reload();
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
  }

  async function post(group: string, text: string): Promise<void> {
    const res = await fetch(`${app.webUrl}/api/groups/${group}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya' }) });
    expect(res.status).toBe(202);
  }

  const status = (page: Page) => page.locator('.msg.tool-request .tool-status').textContent();
  // The recorded reply, not the bubble its text streams into first (that one is replaced once the
  // reply is durable; on a busy machine a test could catch it in between).
  const reply = (page: Page, text: string) => page.locator('.msg.agent:not(.streaming)', { hasText: text });

  it('shows a read-only step live between the messages; it opens with the mouse or the keyboard on its arguments and its result as plain text', async () => {
    const { page, errors } = await open('lookup', 'Maya');
    await post('lookup', '@analyst please look up order 42');
    const step = page.locator('.msg.tool-step');
    await step.waitFor();
    expect(await step.locator('summary').textContent()).toContain('Analyst used orders.lookup');
    expect(await step.locator('.tool-outcome').count()).toBe(0);
    expect(await step.locator('summary time').getAttribute('datetime')).toMatch(/^\d{4}-/);
    await reply(page, 'Done: order 42 shipped').waitFor();
    expect(tools.count('orders.lookup:42')).toBe(1);
    // In the transcript's order: the question, the step, the answer.
    expect(await page.locator('#messages > .msg').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.kind))).toEqual(['human', 'tool', 'agent']);
    // The agent's avatar and colour, as on its messages.
    expect(await step.locator('.avatar').textContent()).toBe('📈');
    expect(await step.locator('.author').evaluate((el) => getComputedStyle(el).color)).toBe('rgb(37, 99, 235)');

    // Closed until asked; opened by a click.
    expect(await step.locator('.tool-result').count()).toBe(0);
    await step.locator('summary').click();
    expect(await step.locator('.tool-args').textContent()).toBe('{\n  "id": 42\n}');
    const result = step.locator('.tool-result');
    // Never markup: the tags and the Markdown show as typed.
    expect(await result.textContent()).toBe(LOOKUP(42));
    expect(await result.evaluate((el) => el.childElementCount)).toBe(0);
    expect(await page.locator('#messages img, #messages .tool-body b').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'tools-step-open-light.png') });

    // The keyboard: Enter closes and opens it again, Space too.
    const details = step.locator('details');
    await step.locator('summary').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => details.evaluate((el) => (el as HTMLDetailsElement).open), POLL).toBe(false);
    await page.keyboard.press('Space');
    await expect.poll(() => details.evaluate((el) => (el as HTMLDetailsElement).open), POLL).toBe(true);
    expect(await step.locator('.tool-result').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('folds a 100 KB result to its first 2,000 characters with "show all", and says it was cut', async () => {
    const { page, errors } = await open('report', 'Maya');
    await post('report', '@analyst report on order 7');
    const step = page.locator('.msg.tool-step');
    await step.waitFor();
    await reply(page, 'Done: row 00000').waitFor();
    await step.locator('summary').click();
    const result = step.locator('.tool-result');
    const folded = (await result.textContent())!;
    expect(folded.length).toBeLessThanOrEqual(2001);
    expect(REPORT.startsWith(folded.slice(0, -1))).toBe(true);
    const more = step.locator('.tool-more');
    expect(await more.textContent()).toBe('show all (98 KB)');
    expect(await step.locator('.tool-cut').textContent()).toBe('Cut: the tool answered 250 KB; this is the first 98 KB, as the agent got it.');
    await page.screenshot({ path: join(SHOTS, 'tools-step-folded-light.png') });
    await more.click();
    await expect.poll(async () => (await result.textContent())!.length, POLL).toBe(REPORT.length);
    expect(await more.count()).toBe(0);
    // Focus stays in the step, on the text now shown in full.
    expect(await page.evaluate(() => document.activeElement?.classList.contains('tool-result'))).toBe(true);
    expect(errors).toEqual([]);
  });

  it('Approve runs the tool once and the reply follows; a second browser sees "approved by" live; a reload keeps it', async () => {
    const maya = await open('approve', 'Maya');
    const omar = await open('approve', 'Omar');
    await post('approve', '@analyst please cancel order 42');
    for (const { page } of [maya, omar]) {
      const req = page.locator('.msg.tool-request');
      await req.waitFor();
      // What the model streamed before calling the tool ("One moment.") went with the request.
      expect(await page.locator('.msg.streaming').count()).toBe(0);
      expect(await req.locator('.tool-head').textContent()).toContain('Analyst wants to use orders.cancel');
      expect(await req.locator('.tool-args').textContent()).toBe('{\n  "id": 42\n}');
      // A deadline on another day (a request made just before midnight) names the day too.
      expect(await req.locator('.tool-until').textContent()).toMatch(/^until ([A-Z][a-z]{2} \d{1,2} )?\d/);
      expect(await page.getByRole('button', { name: 'Approve orders.cancel' }).isEnabled()).toBe(true);
      expect(await page.getByRole('button', { name: 'Deny orders.cancel' }).isEnabled()).toBe(true);
    }
    await maya.page.screenshot({ path: join(SHOTS, 'tools-request-light.png') });
    expect(tools.count('orders.cancel:42')).toBe(0);

    await maya.page.getByRole('button', { name: 'Approve orders.cancel' }).click();
    await expect.poll(() => tools.count('orders.cancel:42'), POLL).toBe(1);
    await reply(maya.page, 'Done: cancelled order 42').waitFor();
    await expect.poll(() => status(maya.page), POLL).toBe('approved by Maya');
    // The other browser, live: the outcome instead of the buttons, then the step and the reply.
    await expect.poll(() => status(omar.page), POLL).toBe('approved by Maya');
    expect(await omar.page.locator('.msg.tool-request button:visible').count()).toBe(0);
    await omar.page.locator('.msg.tool-step', { hasText: 'Analyst used orders.cancel' }).waitFor();
    await reply(omar.page, 'Done: cancelled order 42').waitFor();
    await omar.page.screenshot({ path: join(SHOTS, 'tools-approved-light.png') });

    // A reload reads the same back from the log.
    await reload(omar.page);
    await expect.poll(() => status(omar.page), POLL).toBe('approved by Maya');
    expect(await omar.page.locator('.msg.tool-request button:visible').count()).toBe(0);
    const step = omar.page.locator('.msg.tool-step');
    await step.locator('summary').click();
    expect(await step.locator('.tool-note').first().textContent()).toBe('Approved by Maya');
    expect(await step.locator('.tool-result').textContent()).toBe('cancelled order 42');
    expect(await omar.page.locator('#messages > .msg').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.kind))).toEqual(['human', 'tool', 'system', 'tool', 'agent']);
    expect(tools.count('orders.cancel:42')).toBe(1);
    expect([...maya.errors, ...omar.errors]).toEqual([]);
  });

  it('a request with a 6,000-character argument shows all of it above its buttons (no scroll box); Approve sends its digest and runs exactly those arguments; another digest is refused', async () => {
    const { page, errors } = await open('long', 'Maya');
    await post('long', '@analyst please cancel order 77 with a long note');
    const req = page.locator('.msg.tool-request');
    await req.waitFor();
    const input = { id: 77, note: LONG_NOTE };
    const args = req.locator('.tool-args');
    expect(await args.textContent()).toBe(JSON.stringify(input, null, 2));
    // Laid out whole: the box is as tall as its text, and the buttons come after all of it.
    expect(await args.evaluate((el) => el.scrollHeight - el.clientHeight)).toBe(0);
    const approve = page.getByRole('button', { name: 'Approve orders.cancel' });
    const [argsBox, buttonBox] = [await args.boundingBox(), await approve.boundingBox()];
    expect(buttonBox!.y).toBeGreaterThanOrEqual(argsBox!.y + argsBox!.height);

    const id = await req.getAttribute('data-tool-id');
    const refused = await fetch(`${app.webUrl}/api/groups/long/tools/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve', author_name: 'Eve', digest: callDigest('orders', 'cancel', { id: 77 }) }) });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('changed_call');
    expect(tools.count('orders.cancel:77')).toBe(0);

    const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/tools/${id}`));
    await approve.click();
    expect((await sent).postDataJSON()).toEqual({ decision: 'approve', author_name: 'Maya', digest: callDigest('orders', 'cancel', input) });
    await reply(page, 'Done: cancelled order 77').waitFor();
    expect(tools.ran.filter((r) => r.input.id === 77)).toEqual([{ tool: 'cancel', input }]);
    expect(errors).toEqual([]);
  });

  it('Deny runs nothing and says who denied it, live and after a reload', async () => {
    const { page, errors } = await open('deny', 'Maya');
    await post('deny', '@analyst please cancel order 7');
    await page.getByRole('button', { name: 'Deny orders.cancel' }).click();
    await expect.poll(() => status(page), POLL).toBe('denied by Maya');
    const step = page.locator('.msg.tool-step');
    await step.waitFor();
    expect(await step.locator('summary .tool-line').textContent()).toBe('🔧 Analyst wanted to use orders.cancel');
    expect(await step.locator('.tool-outcome').textContent()).toBe('denied by Maya');
    await reply(page, 'I did not do it').waitFor();
    expect(tools.count('orders.cancel:7')).toBe(0);
    await reload(page);
    await expect.poll(() => status(page), POLL).toBe('denied by Maya');
    expect(await page.locator('.msg.tool-request button:visible').count()).toBe(0);
    expect(await page.locator('.msg.tool-step .tool-outcome').textContent()).toBe('denied by Maya');
    expect(tools.count('orders.cancel:7')).toBe(0);
    expect(errors).toEqual([]);
  });

  it('deciding a request someone already decided shows the 409 inline; both buttons are off while a decision is sent', async () => {
    const maya = await open('twice', 'Maya');
    const omar = await open('twice', 'Omar');
    // Omar's decision is held on its way until Maya's has been made, and the tool runs until
    // Omar's has been answered: the call is still the turn's (a finished turn forgets its calls,
    // and a decision on a call no longer known is a 404).
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let finish = () => {};
    holds.set(9, new Promise<void>((r) => (finish = r)));
    await omar.page.route('**/api/groups/twice/tools/**', async (route) => {
      await held;
      await route.continue();
    });
    await post('twice', '@analyst please cancel order 9');
    await omar.page.locator('.msg.tool-request').waitFor();
    await maya.page.locator('.msg.tool-request').waitFor();
    await omar.page.getByRole('button', { name: 'Deny orders.cancel' }).click();
    await expect.poll(() => omar.page.locator('.msg.tool-request button:disabled').count(), POLL).toBe(2);
    await maya.page.getByRole('button', { name: 'Approve orders.cancel' }).click();
    await expect.poll(() => status(maya.page), POLL).toBe('approved by Maya');
    await expect.poll(() => tools.count('orders.cancel:9'), POLL).toBe(1);
    release();
    const error = omar.page.locator('.msg.tool-request .tool-error');
    await expect.poll(() => error.textContent(), POLL).toMatch(/^⚠ Could not deny: tool call \S+ was already approved$/);
    expect(await error.isVisible()).toBe(true);
    await expect.poll(() => status(omar.page), POLL).toBe('approved by Maya');
    await omar.page.screenshot({ path: join(SHOTS, 'tools-409-light.png') });
    finish();
    await reply(maya.page, 'Done: cancelled order 9').waitFor();
    expect(tools.count('orders.cancel:9')).toBe(1);
    expect([...maya.errors, ...omar.errors]).toEqual([]);
  });

  it('a request nobody decides expires: no buttons, "expired", the step "not approved", nothing run', async () => {
    const { page, errors } = await open('quick', 'Maya');
    await post('quick', '@analyst please cancel order 5');
    await page.locator('.msg.tool-request').waitFor();
    await expect.poll(() => status(page), POLL).toBe('expired: nobody decided in time');
    expect(await page.locator('.msg.tool-request button:visible').count()).toBe(0);
    expect(await page.locator('.msg.tool-step .tool-outcome').textContent()).toBe('not approved');
    expect(tools.count('orders.cancel:5')).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a request on an older page than its outcome says what became of it once its page is loaded', async () => {
    // The newest page (what the page loads first) holds the decision and the step, not the request.
    const newest = (await (await fetch(`${app.webUrl}/api/groups/history/messages?limit=50`)).json()) as { messages: Array<{ kind: string; tool?: { outcome: string } }> };
    expect(newest.messages.filter((m) => m.kind === 'tool').map((m) => m.tool!.outcome)).toEqual(['ok']);
    const { page, errors } = await open('history', 'Maya');
    await reply(page, 'Done: cancelled order 3').waitFor();
    await page.locator('.msg.tool-step').waitFor();
    // Scrolling to the top loads the page before (the page may have done so on its own already).
    await page.locator('#feed').evaluate((el) => (el.scrollTop = 0));
    await page.locator('.msg.tool-request').waitFor();
    await expect.poll(() => status(page), POLL).toBe('approved by Maya');
    expect(await page.locator('.msg.tool-request button:visible').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('past its deadline with no outcome a request reads "waiting expired" with its buttons off; a call the server does not know is said inline; axe finds nothing critical or serious, light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await open('showcase', 'Maya', scheme);
      await reply(page, 'Order 3 has shipped').waitFor();
      const lapsed = page.locator('.msg.tool-request[data-tool-id="t4"]');
      expect(await lapsed.locator('.tool-status').textContent()).toBe('waiting expired');
      expect(await lapsed.locator('button:disabled').count()).toBe(2);
      const waiting = page.locator('.msg.tool-request[data-tool-id="t5"]');
      expect(await waiting.locator('button:enabled').count()).toBe(2);
      expect(await page.locator('.msg.tool-step .tool-outcome').allTextContents()).toEqual(['answered with an error', 'denied by Omar']);
      // Every step open, so their bodies are checked too.
      for (const s of await page.locator('.msg.tool-step summary').all()) await s.click();
      await expect.poll(() => page.locator('.msg.tool-step .tool-result').count(), POLL).toBe(3);
      await page.screenshot({ path: join(SHOTS, `tools-showcase-${scheme}.png`), fullPage: true });
      const bad = (await axeViolations(page)).filter((v) => v.impact === 'critical' || v.impact === 'serious');
      expect(bad, `${scheme}: ${JSON.stringify(bad, null, 2)}`).toEqual([]);
      if (scheme === 'light') {
        // This request is only in the log (no turn waits for it): the server says it no longer waits.
        await waiting.getByRole('button', { name: 'Approve orders.cancel' }).click();
        await expect.poll(() => waiting.locator('.tool-error').textContent(), POLL).toBe('⚠ Could not approve: tool call t5 no longer waits for a decision');
        expect(await waiting.locator('button:disabled').count()).toBe(2);
      }
      expect(errors).toEqual([]);
    }
  }, 60_000);

  it('at phone width the buttons and the lines that open a step are at least 40 px, and nothing is wider than the screen', async () => {
    const { page, errors } = await open('showcase', 'Maya', 'light', { width: 390, height: 844 });
    await reply(page, 'Order 3 has shipped').waitFor();
    const sizes = await page.locator('.msg.tool button, .msg.tool summary').evaluateAll((els) => els.map((el) => {
      const r = el.getBoundingClientRect();
      return { what: `${el.tagName} ${(el.textContent ?? '').trim().slice(0, 30)}`, width: Math.round(r.width), height: Math.round(r.height), right: Math.round(r.right) };
    }));
    expect(sizes.length).toBe(7);
    for (const s of sizes) {
      expect(s.height, s.what).toBeGreaterThanOrEqual(40);
      expect(s.width, s.what).toBeGreaterThanOrEqual(40);
      expect(s.right, s.what).toBeLessThanOrEqual(390);
    }
    await page.screenshot({ path: join(SHOTS, 'tools-phone-light.png') });
    expect(errors).toEqual([]);
  });
});
