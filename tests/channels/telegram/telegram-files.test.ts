/**
 * Photos and documents through grammY against the fake Bot API: a photo (with or without a
 * caption) is fetched with `getFile` and the download path by one bot, kept, and handed over with
 * its attachment — the bytes the fake served; every bot's copy shares one fetch; a photo over the
 * limit or a program sent as a document gets one notice and nothing is downloaded or kept; an
 * agent's image goes out through its own bot with `sendPhoto`, the text as its caption. A failed
 * download leaves the update unconfirmed (polling: fetched again; webhook: answered 503); a file
 * Telegram will not hand over for good is told, not retried forever; the photos of an album in a
 * basic group stay apart; a malformed photo or document is a dead letter.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Files } from '../../../src/core/fileTypes.js';
import type { AgentDef, ChatRef } from '../../../src/core/types.js';
import { FileKeeper } from '../../../src/files/FileKeeper.js';
import { MalformedUpdateError, checkUpdateShape } from '../../../src/channels/telegram/deadLetters.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { samplePdf, samplePng, sha256, windowsExe } from '../../helpers/sample-files.js';
import { agentDef, CountingHost, makeWorld, MAYA, TOKENS, USERNAMES, waitUntil, type World } from './harness.js';
import { roundRobin, webhookInstance } from './webhook-harness.js';

/** A host whose `limits.max_file_bytes` is `maxBytes`. */
class LimitedHost extends CountingHost {
  override readonly files: Files;
  constructor(agents: AgentDef[], maxBytes: number) {
    super(agents);
    this.files = new FileKeeper(this.fileStore, { max_file_bytes: maxBytes });
  }
}

describe('telegram adapter: files', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function setup() {
    w = await makeWorld();
    const chat = w.fake.createGroup('Charts', { type: 'supergroup' });
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    return { chat, ref: { channel: 'telegram', chatId: String(chat.id) } as ChatRef };
  }

  it('a photo without a caption is a message with its file; the largest size is fetched once for all bots', async () => {
    const { chat } = await setup();
    const small = samplePng(90, 60, 1);
    const large = samplePng(900, 600, 2, true);
    w!.fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: small }, { bytes: large }] });
    const msg = await waitUntil(() => w!.host.received[0], 'the photo to be handed over');
    expect(msg.text).toBe('');
    expect(msg.attachments).toHaveLength(1);
    expect(msg.attachments![0]).toMatchObject({ sha256: sha256(large), type: 'image/png', width: 900, height: 600 });
    expect(sha256(w!.host.fileStore.files.get(msg.attachments![0]!.id)!.bytes)).toBe(sha256(large));
    // Three bots got the update; the copies shared one getFile and one download.
    await waitUntil(() => w!.host.attempts.length >= 3 && true, 'every copy');
    expect(w!.fake.callsOf('getFile')).toHaveLength(1);
    expect(w!.fake.files.downloads).toHaveLength(1);
  });

  it('a document with a caption keeps the caption as text and mentions in it', async () => {
    const { chat } = await setup();
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');
    w!.fake.humanSendsFile(chat.id, MAYA, { document: pdf, name: 'report.pdf', mime: 'application/pdf' }, `@${USERNAMES.analyst} read this`);
    const msg = await waitUntil(() => w!.host.received[0], 'the document');
    expect(msg.text).toBe(`@${USERNAMES.analyst} read this`);
    expect(msg.mentionedAgentIds).toEqual(['analyst']);
    expect(msg.attachments![0]).toMatchObject({ name: 'report.pdf', type: 'application/pdf', sha256: sha256(pdf) });
  });

  it('a photo over the limit is not downloaded; the chat is told once and the caption still goes through', async () => {
    const { chat } = await setup();
    const max = w!.host.files.maxBytes;
    w!.fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: samplePng(4, 4), claimed: max + 1 }] }, 'huge one');
    const msg = await waitUntil(() => w!.host.received[0], 'the caption');
    expect(msg.text).toBe('huge one');
    expect(msg.attachments).toBeUndefined();
    expect(w!.fake.callsOf('getFile')).toHaveLength(0);
    const notices = await waitUntil(() => w!.fake.postsIn(chat.id).filter((p) => p.text.includes('the limit is')).length > 0 && w!.fake.postsIn(chat.id), 'the notice');
    await new Promise((r) => setTimeout(r, 200));
    expect(w!.fake.postsIn(chat.id).filter((p) => p.text.includes('the limit is'))).toHaveLength(1);
    expect(notices[0]!.text).toMatch(/^⚠ Maya: the photo is/);
  });

  it('a Windows program sent as cat.png is refused with a notice and nothing is handed over', async () => {
    const { chat } = await setup();
    w!.fake.humanSendsFile(chat.id, MAYA, { document: windowsExe(), name: 'cat.png', mime: 'image/png' });
    const notice = await waitUntil(() => w!.fake.postsIn(chat.id).find((p) => p.text.includes('Windows executable')), 'the notice');
    expect(notice.text).toMatch(/cat\.png is a Windows executable/);
    await new Promise((r) => setTimeout(r, 200));
    expect(w!.host.received).toHaveLength(0);
    expect(w!.host.fileStore.files.size).toBe(0);
  });

  it('a getFile that fails leaves the update unconfirmed: it is delivered again and the photo then arrives', async () => {
    w = await makeWorld({ ids: ['analyst'] });
    const chat = w.fake.createGroup('Charts', { type: 'supergroup' });
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    // getFile's connection drops (more times than the client retries): the hand-over fails.
    w.fake.faultNext('getFile', 'drop', 4);
    await w.channel.start(w.host);
    const png = samplePng(30, 20, 9);
    w.fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: png }] }, 'retry me');
    const msg = await waitUntil(() => w!.host.received[0], 'the photo, after the retry', 60_000);
    expect(msg.attachments![0]!.sha256).toBe(sha256(png));
    expect(w.fake.callsOf('getFile').length).toBeGreaterThan(1);
  }, 90_000);

  it("an agent's image goes out through its own bot with sendPhoto, the text as the caption", async () => {
    const { chat, ref } = await setup();
    const png = samplePng(64, 48, 5);
    const kept = await (w!.host.files as FileKeeper).keep({ name: 'chart.png', bytes: png });
    if (!kept.ok) throw new Error(kept.reason);
    const res = await w!.channel.postAsAgent(ref, w!.agents[0]!, 'Here is the chart.', { attachments: [kept.attachment] });
    const up = w!.fake.files.uploads;
    expect(up).toHaveLength(1);
    expect(up[0]).toMatchObject({ bot: USERNAMES.analyst, method: 'sendPhoto', chatId: chat.id, sha256: sha256(png), caption: 'Here is the chart.' });
    expect(res.ids).toEqual([String(up[0]!.messageId)]);
    expect(w!.fake.callsOf('sendMessage')).toHaveLength(0);

    // A text past the caption limit goes first on its own, then the file without a caption.
    const long = 'x'.repeat(1500);
    const res2 = await w!.channel.postAsAgent(ref, w!.agents[1]!, long, { attachments: [kept.attachment] });
    expect(res2.ids).toHaveLength(2);
    expect(up[1]).toMatchObject({ bot: USERNAMES.writer, method: 'sendPhoto', caption: undefined });
  });

  it('a failed download leaves the update unconfirmed: it comes again and is recorded once, with its file', async () => {
    w = await makeWorld({ ids: ['analyst'] });
    const chat = w.fake.createGroup('Charts', { type: 'supergroup' });
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    await w.channel.start(w.host);
    w.fake.files.failDownloads(502, 'drop');
    const png = samplePng(30, 20, 11);
    w.fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: png }] }, 'second try');
    const [msg] = await w.host.waitForReceived(1, 30_000);
    expect(msg!.attachments?.map((a) => a.sha256)).toEqual([sha256(png)]);
    expect(w.fake.files.failedDownloads.map((d) => d.status)).toEqual([502, 0]);
    expect(w.fake.files.downloads).toHaveLength(1);
    expect(w.host.attempts).toHaveLength(1);
  }, 40_000);

  it('webhook mode: a failed download is answered 503, and the update delivered again is recorded with its file', async () => {
    const fake = await FakeTelegram.start();
    fake.addBot({ token: TOKENS.analyst, username: USERNAMES.analyst, firstName: 'Analyst' });
    const agents = [agentDef('analyst')];
    const inst = await webhookInstance(fake, agents);
    try {
      roundRobin(fake, [inst]);
      const host = new CountingHost(agents);
      await inst.channel.start(host);
      const chat = fake.createGroup('Charts', { type: 'supergroup' });
      fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
      await waitUntil(() => fake.pendingWebhook().get(USERNAMES.analyst) === 0 || undefined, 'set-up updates confirmed');
      const before = fake.deliveries.length;
      fake.files.failDownloads(500);
      const png = samplePng(30, 30, 4);
      fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: png }] }, 'via webhook');
      const [msg] = await host.waitForReceived(1, 30_000);
      expect(msg!.attachments?.map((a) => a.sha256)).toEqual([sha256(png)]);
      await waitUntil(() => fake.pendingWebhook().get(USERNAMES.analyst) === 0 || undefined, 'confirmed', 30_000);
      expect(fake.deliveries.slice(before).map((d) => d.status)).toEqual([503, 200]);
      expect(fake.files.failedDownloads.map((d) => d.status)).toEqual([500]);
      expect(host.attempts).toHaveLength(1);
    } finally {
      await inst.close();
      await fake.close();
    }
  }, 40_000);

  it('a file over the 20 MB Telegram lets bots download is told and the caption recorded; the update is not held up', async () => {
    w = await makeWorld({ ids: ['analyst'] });
    const host = new LimitedHost(w.agents, 30 * 1024 * 1024);
    const chat = w.fake.createGroup('Charts', { type: 'supergroup' });
    w.fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    await w.channel.start(host);
    w.fake.humanSendsFile(chat.id, MAYA, { document: samplePdf(), name: 'scan.pdf', mime: 'application/pdf', claimed: 25 * 1024 * 1024 }, 'the scan');
    const [msg] = await host.waitForReceived(1);
    expect(msg).toMatchObject({ text: 'the scan' });
    expect(msg!.attachments).toBeUndefined();
    const notice = await waitUntil(() => w!.fake.postsIn(chat.id).find((p) => p.text.startsWith('⚠')), 'the notice');
    expect(notice.text).toMatch(/^⚠ Maya: scan\.pdf is over the 20 MB Telegram lets bots download\./);
    await waitUntil(() => w!.fake.unconfirmed().get(USERNAMES.analyst) === 0 || undefined, 'the update confirmed');
    // The next message is not held up behind it.
    w.fake.humanSays(chat.id, MAYA, 'and this');
    await host.waitForReceived(2);
    expect(w.fake.callsOf('getFile')).toHaveLength(1);
    expect(w.fake.files.downloads).toHaveLength(0);
  });

  it('a file Telegram no longer has (404 on download) is told, not fetched again and again', async () => {
    const { chat } = await setup();
    w!.fake.files.failDownloads(404);
    w!.fake.humanSendsFile(chat.id, MAYA, { document: samplePdf(50), name: 'gone.pdf', mime: 'application/pdf' }, 'here');
    const [msg] = await w!.host.waitForReceived(1);
    expect(msg!.attachments).toBeUndefined();
    const notice = await waitUntil(() => w!.fake.postsIn(chat.id).find((p) => p.text.startsWith('⚠')), 'the notice');
    expect(notice.text).toMatch(/Telegram would not hand gone\.pdf over \(HTTP 404\)/);
    await waitUntil(() => [...w!.fake.unconfirmed().values()].every((n) => n === 0) || undefined, 'every copy confirmed');
    expect(w!.fake.files.failedDownloads).toHaveLength(1);
    expect(w!.fake.callsOf('getFile')).toHaveLength(1);
  });

  it('in a basic group the photos of an album (one person, one second, no captions) are separate messages', async () => {
    w = await makeWorld({ ids: ['analyst', 'writer'] });
    const chat = w.fake.createGroup('Basic', { type: 'group' });
    for (const id of ['analyst', 'writer'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    const a = samplePng(20, 20, 21);
    const b = samplePng(20, 20, 22);
    w.fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: a }] });
    w.fake.humanSendsFile(chat.id, MAYA, { photo: [{ bytes: b }] });
    const got = await w.host.waitForReceived(2);
    expect(got.map((m) => m.attachments?.[0]?.sha256)).toEqual([sha256(a), sha256(b)]);
    expect(got[0]!.messageId).not.toBe(got[1]!.messageId);
    // Each photo reached both bots; the copies of one photo are still one message.
    await waitUntil(() => w!.host.attempts.length >= 4 || undefined, 'every copy');
    await waitUntil(() => [...w!.fake.unconfirmed().values()].every((n) => n === 0) || undefined, 'every copy confirmed');
    expect(w.host.received).toHaveLength(2);
  });

  it('an update whose photo or document is not what the Bot API describes is malformed (a dead letter, not retried forever)', () => {
    const base = { message_id: 1, date: 1, chat: { id: -100, type: 'supergroup' }, from: { id: 5, is_bot: false, first_name: 'M' } };
    const bad = [
      { photo: 'x' },
      { photo: [{ file_id: 'a', file_unique_id: 'b', width: '1', height: 1 }] },
      { document: { file_id: 1, file_unique_id: 'b' } },
      { document: { file_id: 'a', file_unique_id: 'b', file_name: 7 } },
      { document: { file_id: 'a', file_unique_id: 'b', file_size: 'big' } },
    ];
    for (const extra of bad) expect(() => checkUpdateShape({ update_id: 1, message: { ...base, ...extra } } as never)).toThrow(MalformedUpdateError);
    expect(() => checkUpdateShape({ update_id: 1, message: { ...base, photo: [{ file_id: 'a', file_unique_id: 'b', width: 1, height: 1, file_size: 3 }] } } as never)).not.toThrow();
    expect(() => checkUpdateShape({ update_id: 1, message: { ...base, document: { file_id: 'a', file_unique_id: 'b', file_name: 'x.pdf' } } } as never)).not.toThrow();
  });
});
