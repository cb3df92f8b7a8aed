/**
 * Files on the web page, in real Chromium against the real app (files kept by the real
 * FileKeeper in an in-memory store): an image pasted into the message box (a real ClipboardEvent
 * holding a PNG File) shows as a removable chip, goes with the message, and appears in the feed as
 * a thumbnail with its size; a click opens it full size in a modal lightbox that Escape closes,
 * giving the focus back. A file the server refuses (a Windows program named .png) is said, and the
 * typed text and the chosen files stay; a file over the limit is refused as it is chosen. The
 * attach button's file chooser takes several files, a PDF among them (a download card), as does a
 * drop on the composer, and a slow upload shows its progress. A browser that sends a file over the
 * limit anyway gets its 413 while still sending. Files of a Telegram group's people render the same way.
 * axe-core finds nothing critical or serious with files in the feed, chips and the lightbox.
 *
 * Skipped without Chromium unless CHORUS_REQUIRE_BROWSER=1 (see browser.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { WebChannel } from '../../src/channels/web/WebChannel.js';
import { parseConfigText } from '../../src/config/load.js';
import { sizeText } from '../../src/core/fileTypes.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { silentLogger } from '../helpers/logger.js';
import { FakeGateway, TEST_AGENTS } from '../channels/web/fake-gateway.js';
import { EXE, GIF, PDF, png, sha256 } from '../channels/web/file-fixtures.js';
import { browserSuite, CHROMIUM, HAVE_BROWSER, LAUNCH_ARGS, POLL, SHOTS, withName } from './browser.js';

const suite = browserSuite('web-files');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const MAX_FILE_BYTES = 1024 * 1024;

function configYaml(dataDir: string): string {
  return `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst.", avatar: "📈", color: "#2563eb" }
group_defaults: { cooldown_seconds: 0 }
limits: { user_messages_per_minute: 1000, max_file_bytes: ${MAX_FILE_BYTES}, max_files_per_message: 3 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst], config: { reply_strategy: mention_only } }
  - { channel: web, chat_id: side, title: Side room, participants: [analyst], config: { reply_strategy: mention_only } }
`;
}

async function axeSerious(page: Page): Promise<Array<{ id: string; impact: string | null; where: string[] }>> {
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    type Result = { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> };
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<Result> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.map((n) => `${n.target.join(' ')} ${(n.failureSummary ?? '').slice(0, 200)}`) }));
  });
  return found.filter((v) => v.impact === 'critical' || v.impact === 'serious');
}

/** Paste `bytes` into the message box as the clipboard would: a ClipboardEvent whose DataTransfer holds a File. */
async function paste(page: Page, bytes: Buffer, type: string, name = 'image.png'): Promise<void> {
  await page.locator('#input').focus();
  await page.evaluate(({ b64, type, name }) => {
    const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([raw], name, { type }));
    const ev = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
    document.querySelector('#input')!.dispatchEvent(ev);
  }, { b64: bytes.toString('base64'), type, name });
}

suite('files on the web page, in Chromium', () => {
  let browser: Browser;
  let app: App;
  let dataDir: string;
  let store: MemoryStore;

  beforeAll(async () => {
    if (!HAVE_BROWSER) throw new Error(`CHORUS_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-web-files-'));
    const { config } = parseConfigText(configYaml(dataDir), 'test');
    store = new MemoryStore();
    app = await createApp({ config, store, logger: silentLogger });
    await app.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
    mkdirSync(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function open(group = 'lobby', base = app.webUrl): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await withName(await browser.newContext({ viewport: { width: 1280, height: 800 } }), 'Maya');
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/#/g/${group}`);
    await page.locator('body[data-ready="true"]').waitFor({ timeout: 15_000 });
    return { context, page, errors };
  }

  it('a pasted image goes with the message, shows as a thumbnail with its size, and opens full size until Escape', async () => {
    const { context, page, errors } = await open();
    const image = png(320, 200, { rgb: [230, 120, 20] });
    await page.locator('#input').fill('look at this chart');
    await paste(page, image, 'image/png');
    const chip = page.locator('#attach-list .attach-chip');
    await expect.poll(() => chip.count(), POLL).toBe(1);
    // A pasted image gets a name that says when, a preview and its size; its words stay as typed.
    expect(await chip.locator('.attach-name').textContent()).toMatch(/^pasted-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.png$/);
    expect(await chip.locator('.attach-size').textContent()).toBe(`PNG image · ${sizeText(image.length)}`);
    expect(await chip.locator('img.attach-preview').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(320);
    expect(await page.locator('#input').inputValue()).toBe('look at this chart');
    expect(await chip.getByRole('button', { name: /^Remove pasted-/ }).count()).toBe(1);
    expect(await axeSerious(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'files-pasted-chip.png') });

    await page.locator('#send').click();
    const msg = page.locator('.msg.human.own', { hasText: 'look at this chart' });
    await msg.waitFor();
    const thumb = msg.locator('.attachments .att-thumb');
    await thumb.waitFor();
    await expect.poll(() => thumb.locator('img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth), POLL).toBe(320);
    expect(await msg.locator('.att-size').textContent()).toBe(sizeText(image.length));
    // The composer is empty again: no chip, no text.
    expect(await page.locator('#attach-list').isHidden()).toBe(true);
    expect(await page.locator('#input').inputValue()).toBe('');
    // The thumbnail is the very file sent, asked for as this message's (its name for it).
    const src = await thumb.locator('img').getAttribute('src');
    const entryId = await msg.getAttribute('data-entry-id');
    expect(src).toBe(`/api/files/${sha256(image)}?m=${encodeURIComponent(entryId!)}`);

    await thumb.click();
    const dialog = page.getByRole('dialog', { name: /^pasted-.*\.png$/ });
    await dialog.waitFor();
    expect(await dialog.getAttribute('aria-modal')).toBe('true');
    await expect.poll(() => dialog.locator('.lightbox-img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth), POLL).toBe(320);
    expect(await dialog.locator('.lightbox-meta').textContent()).toBe(`${sizeText(image.length)} · from Maya`);
    await page.screenshot({ path: join(SHOTS, 'files-lightbox.png') });
    expect(await axeSerious(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('#lightbox').evaluate((d: HTMLDialogElement) => d.open), POLL).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.classList.contains('att-thumb'))).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a refused file keeps the typed text and the chosen files; one over the limit is refused as it is chosen', async () => {
    const { context, page, errors } = await open();
    await page.locator('#input').fill('keep these words');
    await paste(page, EXE, 'image/png', 'cute-cat.png');
    const chip = page.locator('#attach-list .attach-chip');
    await expect.poll(() => chip.count(), POLL).toBe(1);
    await page.locator('#send').click();
    const error = page.locator('#composer-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^Not sent: cute-cat\.png is a Windows executable \(exe\)/);
    expect(await page.locator('#input').inputValue()).toBe('keep these words');
    expect(await chip.count()).toBe(1);
    expect(await chip.first().getAttribute('class')).toMatch(/refused/);
    await page.screenshot({ path: join(SHOTS, 'files-refused.png') });
    expect(await page.locator('.msg.human', { hasText: 'keep these words' }).count()).toBe(0);

    // Removing the refused file and choosing one too large: refused at once, nothing uploaded.
    await chip.getByRole('button', { name: 'Remove cute-cat.png' }).click();
    expect(await chip.count()).toBe(0);
    const big = png(700, 700, { noise: true });
    expect(big.length).toBeGreaterThan(MAX_FILE_BYTES);
    await page.locator('#attach-input').setInputFiles({ name: 'huge.png', mimeType: 'image/png', buffer: big });
    await error.waitFor();
    expect(await error.textContent()).toBe(`huge.png is ${sizeText(big.length)}; the limit is ${sizeText(MAX_FILE_BYTES)}.`);
    expect(await chip.count()).toBe(0);
    expect(await page.locator('#input').inputValue()).toBe('keep these words');
    // One too many: the first three are taken, the fourth is refused.
    const small = [1, 2, 3, 4].map((n) => ({ name: `p${n}.png`, mimeType: 'image/png', buffer: png(10 + n, 10) }));
    await page.locator('#attach-input').setInputFiles(small);
    await expect.poll(() => chip.count(), POLL).toBe(3);
    expect(await error.textContent()).toMatch(/p4\.png was not added: a message can carry at most 3 files/);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a browser that sends a file over the limit all the same is answered 413 while it is still sending', async () => {
    const { context, page, errors } = await open();
    const answers = await page.evaluate(async (sizes) => {
      const send = (size: number) => new Promise<{ status: number; body: string }>((resolve) => {
        const form = new FormData();
        form.append('text', 'too big');
        form.append('file', new File([new Uint8Array(size).fill(1)], 'huge.png', { type: 'image/png' }));
        const xhr = new XMLHttpRequest();
        xhr.open('POST', '/api/groups/lobby/messages');
        xhr.onload = () => resolve({ status: xhr.status, body: xhr.responseText });
        xhr.onerror = () => resolve({ status: 0, body: '' });
        xhr.send(form);
      });
      const out = [];
      for (const size of sizes) out.push(await send(size));
      return out;
    }, [3 * MAX_FILE_BYTES, 3 * MAX_FILE_BYTES, 3 * MAX_FILE_BYTES, 24 * MAX_FILE_BYTES]);
    // Within what a message may carry in all, but one file past the limit: cut at the limit.
    for (const a of answers.slice(0, 3)) {
      expect(a.status).toBe(413);
      expect(JSON.parse(a.body).error).toMatchObject({ code: 'file_too_large', file: 'huge.png', limit: MAX_FILE_BYTES });
    }
    // Announced as more than a message may carry: refused before any of it is read.
    expect(answers[3]!.status).toBe(413);
    expect(JSON.parse(answers[3]!.body).error.code).toBe('payload_too_large');
    expect(await page.locator('.msg.human', { hasText: 'too big' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('the attach button opens a file chooser; a PDF becomes a download card, an image a thumbnail, with no text at all', async () => {
    const { context, page, errors } = await open('side');
    const image = png(60, 40);
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: 'Attach files' }).click()]);
    expect(chooser.isMultiple()).toBe(true);
    await chooser.setFiles([{ name: 'report.pdf', mimeType: 'application/pdf', buffer: PDF }, { name: 'tiny.png', mimeType: 'image/png', buffer: image }]);
    await expect.poll(() => page.locator('#attach-list .attach-chip').count(), POLL).toBe(2);
    // A file dropped on the composer joins them (and is taken back with its ✕).
    await page.locator('#composer').evaluate((form, b64) => {
      const data = new DataTransfer();
      data.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'dropped.gif', { type: 'image/gif' }));
      for (const type of ['dragenter', 'dragover']) form.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
      if (!form.classList.contains('drop-target')) throw new Error('the composer does not show where files go');
      form.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, GIF.toString('base64'));
    await expect.poll(() => page.locator('#attach-list .attach-chip').count(), POLL).toBe(3);
    expect(await page.locator('#composer').getAttribute('class')).not.toMatch(/drop-target/);
    await page.getByRole('button', { name: 'Remove dropped.gif' }).click();
    await expect.poll(() => page.locator('#attach-list .attach-chip').count(), POLL).toBe(2);
    await page.locator('#send').click();
    const msg = page.locator('.msg.human.own').filter({ has: page.locator('.att-file') });
    await msg.waitFor();
    const card = msg.locator('a.att-file');
    expect(await card.locator('.att-name').textContent()).toBe('report.pdf');
    expect(await card.locator('.att-meta').textContent()).toBe(`PDF · ${sizeText(PDF.length)}`);
    const entryId = await msg.getAttribute('data-entry-id');
    expect(await card.getAttribute('href')).toBe(`/api/files/${sha256(PDF)}?m=${encodeURIComponent(entryId!)}`);
    expect(await card.getAttribute('download')).toBe('report.pdf');
    await expect.poll(() => msg.locator('.att-thumb img').evaluate((img: HTMLImageElement) => img.naturalWidth), POLL).toBe(60);
    // No empty text block for a message of files alone.
    expect(await msg.locator('.bubble > .text').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'files-in-feed.png') });
    // The file as served: a download, its type, never sniffed.
    const res = await page.request.get(`${app.webUrl}${await card.getAttribute('href')}`);
    expect(res.headers()['content-disposition']).toMatch(/^attachment; filename="report\.pdf"/);
    expect(res.headers()['x-content-type-options']).toBe('nosniff');
    expect(await axeSerious(page)).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a slow upload shows how far it got', async () => {
    const { context, page, errors } = await open('side');
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    // About 256 KB/s up: a 900 KB file takes a few seconds.
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 256 * 1024 });
    const big = png(540, 540, { noise: true });
    await page.locator('#attach-input').setInputFiles({ name: 'slow.png', mimeType: 'image/png', buffer: big });
    await page.locator('#input').fill('slowly');
    await page.locator('#send').click();
    const bar = page.locator('#upload-progress');
    await bar.waitFor({ state: 'visible' });
    await expect.poll(() => bar.evaluate((p: HTMLProgressElement) => p.value > 0 && p.value < p.max), POLL).toBe(true);
    await page.locator('#composer').screenshot({ path: join(SHOTS, 'files-uploading.png') });
    expect(await page.locator('#upload-text').textContent()).toMatch(/^Uploading… \d+ KB of \d+ KB$/);
    await page.locator('.msg.human.own', { hasText: 'slowly' }).locator('.att-thumb').waitFor({ timeout: 20_000 });
    expect(await bar.isHidden()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  }, 40_000);

  it("a Telegram group's people's files render the same way, read-only", async () => {
    const gw = new FakeGateway();
    gw.addGroup({ id: 'tg', title: 'Telegram chat', channel: 'telegram', chatId: '-100', participants: ['analyst'] });
    const photo = png(90, 60, { rgb: [20, 160, 90] });
    const kept = [await gw.files.keep({ name: 'from-phone.png', bytes: photo }), await gw.files.keep({ name: 'minutes.pdf', bytes: PDF })];
    const attachments = kept.map((k) => (k.ok ? k.attachment : null)!);
    gw.append('tg', { kind: 'human', authorId: 'telegram:42', authorName: 'Ola', text: '', attachments });
    const web = new WebChannel({ config: { enabled: true, host: '127.0.0.1', port: 0, auth_token: null }, logger: silentLogger, agents: TEST_AGENTS });
    await web.start(gw);
    try {
      const { context, page, errors } = await open('tg', web.url);
      const msg = page.locator('.msg.human', { hasText: 'Ola' });
      await msg.locator('.att-thumb').waitFor();
      await expect.poll(() => msg.locator('.att-thumb img').evaluate((img: HTMLImageElement) => img.naturalWidth), POLL).toBe(90);
      expect(await msg.locator('.att-file .att-meta').textContent()).toBe(`PDF · ${sizeText(PDF.length)}`);
      // Nothing can be attached to a group the page only shows.
      expect(await page.locator('#attach-btn').isDisabled()).toBe(true);
      await msg.locator('.att-thumb').click();
      await page.getByRole('dialog', { name: 'from-phone.png' }).waitFor();
      await page.locator('.lightbox-close').click();
      await expect.poll(() => page.locator('#lightbox').evaluate((d: HTMLDialogElement) => d.open), POLL).toBe(false);
      expect(errors).toEqual([]);
      await context.close();
    } finally {
      await web.stop();
    }
  });
});
