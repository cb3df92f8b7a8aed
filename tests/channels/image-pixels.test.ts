/**
 * An image over `limits.max_image_pixels` sent on Telegram (as a document: Telegram itself shrinks
 * photos) or Discord is not kept: the message is handed over with what the person wrote and no
 * attachment, the chat is told in one line that the image has too many pixels, and nothing is in
 * the file store. Through grammY and discord.js against their fakes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { blankPng } from '../files/images.js';
import { setup as discordSetup, until, type DiscordSetup } from './discord/harness.js';
import { MAYA, TOKENS, USERNAMES, makeWorld, waitUntil, type World } from './telegram/harness.js';

const REASON = 'huge.png is 30000×30000 pixels (900 MP); the limit is 40 MP';
const bomb = blankPng(30000, 30000);

let w: World | undefined;
let d: DiscordSetup | undefined;
afterEach(async () => {
  await w?.close();
  await d?.close();
  w = undefined;
  d = undefined;
});

describe('an image of too many pixels from a chat platform', () => {
  it('Telegram: the caption is handed over without the image, and the chat is told once', async () => {
    w = await makeWorld({ ids: ['analyst', 'writer'] });
    const chat = w.fake.createGroup('Charts', { type: 'supergroup' });
    for (const id of ['analyst', 'writer'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    const caption = `@${USERNAMES.analyst} what is this?`;
    w.fake.humanSendsFile(chat.id, MAYA, { document: bomb, name: 'huge.png', mime: 'image/png' }, caption);
    const msg = await waitUntil(() => w!.host.received[0], 'the caption');
    expect(msg.text).toBe(caption);
    expect(msg.attachments).toBeUndefined();
    const noticeOf = () => w!.fake.postsIn(chat.id).find((p) => p.text.startsWith('⚠ Maya:'));
    const notice = await waitUntil(noticeOf, 'the notice');
    expect(notice.text).toContain(REASON);
    expect(w.fake.postsIn(chat.id).filter((p) => p.text.startsWith('⚠'))).toHaveLength(1);
    expect(w.host.fileStore.files.size).toBe(0);
  });

  it('Discord: the text is handed over without the image, and the chat is told', async () => {
    d = await discordSetup();
    await d.channel.start(d.host);
    const file = { name: 'huge.png', bytes: bomb, contentType: 'image/png' };
    d.fake.humanSendsFiles(d.chatId, d.maya, 'what is this?', [file]);
    const [msg] = await d.host.waitForReceived(1);
    expect(msg!.text).toBe('what is this?');
    expect(msg!.attachments).toBeUndefined();
    const noticeOf = () => d!.fake.posts(d!.chatId).find((p) => p.content.startsWith('⚠ Maya:'));
    const notice = await until(noticeOf, 'the notice');
    expect(notice.content).toContain(REASON);
    expect(d.host.fileStore.files.size).toBe(0);
  });
});
