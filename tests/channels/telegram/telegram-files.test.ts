/**
 * Photos and documents through grammY against the fake Bot API: a photo (with or without a
 * caption) is fetched with `getFile` and the download path by one bot, kept, and handed over with
 * its attachment — the bytes the fake served; every bot's copy shares one fetch; a photo over the
 * limit or a program sent as a document gets one notice and nothing is downloaded or kept; an
 * agent's image goes out through its own bot with `sendPhoto`, the text as its caption.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../../src/core/types.js';
import { FileKeeper } from '../../../src/files/FileKeeper.js';
import { samplePng, sha256, windowsExe } from '../../helpers/sample-files.js';
import { makeWorld, MAYA, TOKENS, USERNAMES, waitUntil, type World } from './harness.js';

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
});
