/**
 * Files through discord.js against the fake Discord: a person's attachment is fetched from its URL,
 * kept and handed over with the message (the bytes the fake served); one over the limit is not
 * fetched and a program named .png is refused, each told in the chat; an agent's file goes through
 * the channel webhook as a multipart upload under the agent's name, with its text. A fetch that
 * fails for the moment is tried again; over the server's upload limit (413, code 40005) the files
 * are split into smaller messages and one too large alone is named; the lookup after a lost answer
 * counts the files, so a text-only message with the same words is not taken for the file post.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Attachment } from '../../../src/core/fileTypes.js';
import type { ChatRef } from '../../../src/core/types.js';
import { snowflake } from '../../fakes/discord/model.js';
import { samplePdf, samplePng, sha256, windowsExe } from '../../helpers/sample-files.js';
import { ANALYST, setup, until, type DiscordSetup } from './harness.js';

let s: DiscordSetup | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('discord files', () => {
  it("a person's image with no text is handed over with its file, fetched from its URL", async () => {
    s = await setup();
    await s.channel.start(s.host);
    const png = samplePng(300, 200, 7, true);
    s.fake.humanSendsFiles(s.chatId, s.maya, '', [{ name: 'chart.png', bytes: png, contentType: 'image/png' }]);
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.text).toBe('');
    expect(msg!.attachments).toHaveLength(1);
    expect(msg!.attachments![0]).toMatchObject({ name: 'chart.png', type: 'image/png', sha256: sha256(png), width: 300, height: 200 });
    expect(sha256(s.host.fileStore.files.get(msg!.attachments![0]!.id)!.bytes)).toBe(sha256(png));
    expect(s.fake.cdnFetches).toHaveLength(1);
  });

  it('a file over the limit is not fetched and a program named .png is refused; the text still goes through', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const max = s.host.files.maxBytes;
    s.fake.humanSendsFiles(s.chatId, s.maya, 'two files', [
      { name: 'huge.png', bytes: samplePng(4, 4), claimedSize: max + 1 },
      { name: 'cat.png', bytes: windowsExe() },
    ]);
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.text).toBe('two files');
    expect(msg!.attachments).toBeUndefined();
    expect(s.fake.cdnFetches).toHaveLength(1); // only cat.png, whose stated size is within the limit
    const notice = await until(() => s!.fake.posts(s!.chatId).find((p) => p.content.startsWith('⚠ Maya:')), 'the notice');
    expect(notice.content).toMatch(/huge\.png is .*the limit is/);
    expect(notice.content).toMatch(/cat\.png is a Windows executable/);
    expect(s.host.fileStore.files.size).toBe(0);
  });

  it("an agent's image goes out through the webhook under its name, with its text", async () => {
    s = await setup();
    await s.channel.start(s.host);
    const png = samplePng(50, 40, 8);
    const kept = await s.host.files.keep({ name: 'orders.png', bytes: png });
    if (!kept.ok) throw new Error(kept.reason);
    const chat: ChatRef = { channel: 'discord', chatId: s.chatId };
    const res = await s.channel.postAsAgent(chat, ANALYST, 'Orders this week.', { attachments: [kept.attachment] });
    const post = s.fake.posts(s.chatId).find((p) => p.id === res.ids[0])!;
    expect(post.author.username).toBe('Analyst');
    expect(post.content).toBe('Orders this week.');
    expect(post.attachments).toEqual([expect.objectContaining({ filename: 'orders.png', sha256: sha256(png) })]);

    // Files alone (no text) are a post too.
    const res2 = await s.channel.postAsAgent(chat, ANALYST, '', { attachments: [kept.attachment] });
    expect(res2.ids).toHaveLength(1);
  });

  it('an attachment fetch that fails for the moment (a 503, a dropped connection) is tried again', async () => {
    s = await setup();
    await s.channel.start(s.host);
    s.fake.cdnFaults.push(503, 'drop');
    const png = samplePng(20, 20, 5);
    s.fake.humanSendsFiles(s.chatId, s.maya, 'retry me', [{ name: 'x.png', bytes: png }]);
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.attachments?.map((a) => a.sha256)).toEqual([sha256(png)]);
    expect(s.fake.cdnAnswers).toEqual([503, 0, 200]);
    expect(s.fake.posts(s.chatId).filter((p) => p.content.startsWith('⚠'))).toHaveLength(0);
  });

  it('an attachment Discord will not hand over (404) is not tried again; the chat is told', async () => {
    s = await setup();
    await s.channel.start(s.host);
    s.fake.cdnFaults.push(404);
    s.fake.humanSendsFiles(s.chatId, s.maya, 'gone', [{ name: 'x.png', bytes: samplePng(20, 20, 6) }]);
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.attachments).toBeUndefined();
    await until(() => s!.fake.posts(s!.chatId).find((p) => p.content.startsWith('⚠ Maya:')), 'the notice');
    expect(s.fake.cdnAnswers).toEqual([404]);
  });

  async function keep(x: DiscordSetup, name: string, bytes: Uint8Array): Promise<Attachment> {
    const kept = await x.host.files.keep({ name, bytes });
    if (!kept.ok) throw new Error(kept.reason);
    return kept.attachment;
  }

  it("over the server's upload limit (413, code 40005) the files are split, and one too large alone is named instead", async () => {
    s = await setup();
    await s.channel.start(s.host);
    s.fake.uploadLimitBytes = 50 * 1024;
    const a = await keep(s, 'a.png', samplePng(100, 100, 1, true));
    const b = await keep(s, 'b.pdf', samplePdf(28 * 1024));
    const c = await keep(s, 'c.png', samplePng(170, 170, 3, true));
    expect([a.size, b.size, c.size].map((n) => n > 25 * 1024 && n < 90 * 1024)).toEqual([true, true, true]);
    const chat: ChatRef = { channel: 'discord', chatId: s.chatId };
    const res = await s.channel.postAsAgent(chat, ANALYST, 'Three files.', { attachments: [a, b, c] });
    const posts = s.fake.posts(s.chatId);
    expect(posts.map((p) => [p.content, (p.attachments ?? []).map((x) => x.sha256)])).toEqual([
      ['Three files.', [a.sha256]],
      ['', [b.sha256]],
      [`[c.png (${Math.round(c.size / 1024)} KB) is over this server's upload limit and was not posted]`, []],
    ]);
    expect(posts.every((p) => p.author.username === 'Analyst')).toBe(true);
    expect(res.ids).toEqual(posts.map((p) => p.id));
    expect(s.fake.requestsTo('POST', /^\/webhooks\//).filter((r) => r.status === 413)).toHaveLength(3);
  });

  it('after a lost answer, a text-only message with the same words is not taken for the file post', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const chat: ChatRef = { channel: 'discord', chatId: s.chatId };
    await s.channel.postAsAgent(chat, ANALYST, 'warming up');
    const hook = s.fake.webhooks.find((h) => h.channel_id === s!.chatId)!;
    // "Here." without a file, from this webhook and name, that this process did not post (an earlier run did).
    const earlier = { id: snowflake(), channel_id: s.chatId, author: { id: hook.id, username: 'Analyst', global_name: null, bot: true }, content: 'Here.', webhook_id: hook.id, application_id: hook.application_id, avatar_url: null, reply_to: null, ts: Date.now() };
    s.fake.recordPost(earlier);
    const png = await keep(s, 'here.png', samplePng(30, 30, 9));
    // The upload's connection drops before Discord acts on it: the lookup must not find the text-only one.
    s.fake.faultNext(1, (m, p, body) => m === 'POST' && p.startsWith('/webhooks/') && ((body as { __files?: unknown[] })?.__files?.length ?? 0) > 0, 'drop');
    const res = await s.channel.postAsAgent(chat, ANALYST, 'Here.', { attachments: [png] });
    expect(res.ids).toHaveLength(1);
    expect(res.ids[0]).not.toBe(earlier.id);
    const post = s.fake.posts(s.chatId).find((p) => p.id === res.ids[0])!;
    expect(post.attachments?.map((x) => x.sha256)).toEqual([png.sha256]);

    // Answer lost after Discord posted it: found by its text and its one file, not sent twice.
    s.fake.faultNext(1, (m, p, body) => m === 'POST' && p.startsWith('/webhooks/') && ((body as { __files?: unknown[] })?.__files?.length ?? 0) > 0, 'drop-after');
    const again = await s.channel.postAsAgent(chat, ANALYST, 'Here.', { attachments: [png] });
    expect(s.fake.posts(s.chatId).filter((p) => p.content === 'Here.' && p.attachments?.length)).toHaveLength(2);
    expect(again.ids[0]).toBe(s.fake.posts(s.chatId).at(-1)!.id);
  });
});
