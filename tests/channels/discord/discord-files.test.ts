/**
 * Files through discord.js against the fake Discord: a person's attachment is fetched from its URL,
 * kept and handed over with the message (the bytes the fake served); one over the limit is not
 * fetched and a program named .png is refused, each told in the chat; an agent's file goes through
 * the channel webhook as a multipart upload under the agent's name, with its text.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../../src/core/types.js';
import { samplePng, sha256, windowsExe } from '../../helpers/sample-files.js';
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
});
