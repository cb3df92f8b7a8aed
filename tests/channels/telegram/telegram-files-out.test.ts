/**
 * An agent's files out through its own bot, grammY against the fake Bot API: the caption rendered
 * as HTML, a long text first and then a PDF as a document and a GIF as an animation (in the topic,
 * replying to the person); every file post through the text sender's recoveries (a 429 waited out,
 * rejected markup resent plain, a migrated chat, a vanished topic, a dropped connection); an image
 * Telegram will not take as a photo sent as a document; a caption it finds too long sent as a
 * message first; approval buttons under the last file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Attachment } from '../../../src/core/fileTypes.js';
import type { ChatRef } from '../../../src/core/types.js';
import { SAMPLE_GIF, samplePdf, samplePng } from '../../helpers/sample-files.js';
import { makeWorld, MAYA, TOKENS, USERNAMES, type World } from './harness.js';

describe('telegram adapter: files out', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function setup(o: { type?: 'group' | 'supergroup'; forum?: boolean } = {}) {
    w = await makeWorld();
    const chat = w.fake.createGroup('Market team', { type: o.type ?? 'supergroup', forum: o.forum ?? false });
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    return { world: w, chat, ref: { channel: 'telegram', chatId: String(chat.id) } as ChatRef };
  }

  async function keep(world: World, name: string, bytes: Uint8Array): Promise<Attachment> {
    const kept = await world.host.files.keep({ name, bytes });
    if (!kept.ok) throw new Error(kept.reason);
    return kept.attachment;
  }

  it("an agent's image goes out with sendPhoto, its markdown caption rendered as HTML", async () => {
    const { world, chat, ref } = await setup();
    const chart = await keep(world, 'chart.png', samplePng(40, 30, 5));
    const res = await world.channel.postAsAgent(ref, world.agents[0]!, 'Revenue is **up** 8%', { attachments: [chart] });
    expect(world.fake.files.uploads).toEqual([expect.objectContaining({ bot: USERNAMES.analyst, method: 'sendPhoto', chatId: chat.id, sha256: chart.sha256, caption: 'Revenue is up 8%', parseMode: 'HTML' })]);
    expect(res.ids).toEqual([String(world.fake.files.uploads[0]!.messageId)]);
    expect(world.fake.callsOf('sendMessage')).toHaveLength(0);
  });

  it('a long text goes first, then a PDF as a document and a GIF as an animation, in the topic and replying to the person', async () => {
    const { world, chat } = await setup({ forum: true });
    const topic = world.fake.createTopic(chat.id, 'Reports');
    const human = world.fake.humanSays(chat.id, MAYA, 'send me the report', { threadId: topic });
    const [msg] = await world.host.waitForReceived(1);
    const pdf = await keep(world, 'report.pdf', samplePdf(500));
    const gif = await keep(world, 'done.gif', SAMPLE_GIF);
    const text = `Here it is. ${'The quarter went well. '.repeat(60)}`.trim();
    expect(text.length).toBeGreaterThan(1024);
    const ref: ChatRef = { channel: 'telegram', chatId: msg!.chatId, threadId: msg!.threadId };
    const res = await world.channel.postAsAgent(ref, world.agents[1]!, text, { replyToMessageId: msg!.messageId, attachments: [pdf, gif] });
    const [post] = world.fake.postsIn(chat.id).filter((p) => p.bot === USERNAMES.writer);
    expect(post).toMatchObject({ text, threadId: topic, replyToMessageId: human.messageId });
    const up = world.fake.files.uploads;
    expect(up.map((u) => [u.method, u.sha256, u.name, u.caption, u.threadId, u.replyToMessageId])).toEqual([
      ['sendDocument', pdf.sha256, 'report.pdf', undefined, topic, undefined],
      ['sendAnimation', gif.sha256, 'done.gif', undefined, topic, undefined],
    ]);
    expect(res.ids).toEqual([post!.messageId, ...up.map((u) => u.messageId)].map(String));
  });

  it('file posts get the sender recoveries: a 429 waited out, rejected markup resent plain, a dropped connection sent again', async () => {
    const { world, ref } = await setup();
    const png = await keep(world, 'a.png', samplePng(20, 20, 1));
    const pdf = await keep(world, 'b.pdf', samplePdf(100));
    world.fake.rateLimit('sendPhoto', 1, 1);
    world.fake.failNext('sendPhoto', 1, { error_code: 400, description: "Bad Request: can't parse entities: Unsupported start tag" });
    world.fake.faultNext('sendDocument', 'drop');
    const res = await world.channel.postAsAgent(ref, world.agents[0]!, 'Two **files**', { attachments: [png, pdf] });
    const up = world.fake.files.uploads;
    expect(up.map((u) => [u.method, u.caption, u.parseMode])).toEqual([
      ['sendPhoto', 'Two **files**', undefined],
      ['sendDocument', undefined, undefined],
    ]);
    expect(res.ids).toEqual(up.map((u) => String(u.messageId)));
    expect(world.fake.callsOf('sendPhoto')).toHaveLength(3);
    expect(world.fake.callsOf('sendDocument')).toHaveLength(2);
  }, 30_000);

  it('a photo into a group that became a supergroup re-keys and goes to the new chat; a vanished topic sends it to the main chat', async () => {
    const { world, chat, ref } = await setup({ type: 'group' });
    const newId = world.fake.migrate(chat.id, { notify: false });
    const png = await keep(world, 'a.png', samplePng(20, 20, 2));
    await world.channel.postAsAgent(ref, world.agents[1]!, 'after the upgrade', { attachments: [png] });
    expect(world.host.rekeys).toEqual([{ from: String(chat.id), to: String(newId) }]);
    expect(world.fake.files.uploads.map((u) => [u.chatId, u.caption])).toEqual([[newId, 'after the upgrade']]);

    const forum = world.fake.createGroup('Forum', { forum: true });
    world.fake.addBotToChat(forum.id, TOKENS.writer, MAYA);
    await world.channel.postAsAgent({ channel: 'telegram', chatId: String(forum.id), threadId: '999' }, world.agents[1]!, 'topic gone', { attachments: [png] });
    expect(world.fake.files.uploads.at(-1)).toMatchObject({ chatId: forum.id, threadId: undefined, caption: 'topic gone' });
  });

  it('an image Telegram will not take as a photo goes as a document; a caption it finds too long goes as a message first', async () => {
    const { world, chat, ref } = await setup();
    const png = await keep(world, 'odd.png', samplePng(20, 20, 8));
    world.fake.failNext('sendPhoto', 1, { error_code: 400, description: 'Bad Request: IMAGE_PROCESS_FAILED' });
    const first = await world.channel.postAsAgent(ref, world.agents[0]!, 'As a file', { attachments: [png] });
    world.fake.failNext('sendPhoto', 1, { error_code: 400, description: 'Bad Request: message caption is too long' });
    const second = await world.channel.postAsAgent(ref, world.agents[0]!, 'A caption Telegram counts longer', { attachments: [png] });
    expect(world.fake.files.uploads.map((u) => [u.method, u.caption, u.sha256])).toEqual([
      ['sendDocument', 'As a file', png.sha256],
      ['sendPhoto', undefined, png.sha256],
    ]);
    expect(world.fake.postsIn(chat.id).map((p) => p.text)).toEqual(['A caption Telegram counts longer']);
    const [doc, photo] = world.fake.files.uploads;
    expect(first.ids).toEqual([String(doc!.messageId)]);
    expect(second.ids).toEqual([String(world.fake.postsIn(chat.id)[0]!.messageId), String(photo!.messageId)]);
  });

  it('an image too wide to be a photo goes as a document from the start', async () => {
    const { world, ref } = await setup();
    const strip = await keep(world, 'strip.png', samplePng(2100, 100, 3));
    await world.channel.postAsAgent(ref, world.agents[0]!, 'a long strip', { attachments: [strip] });
    expect(world.fake.callsOf('sendPhoto')).toHaveLength(0);
    expect(world.fake.files.uploads.map((u) => u.method)).toEqual(['sendDocument']);
  });

  it('a request for approval with files carries its buttons under the last file', async () => {
    const { world, ref } = await setup();
    const a = await keep(world, 'a.png', samplePng(20, 20, 4));
    const b = await keep(world, 'b.pdf', samplePdf(10));
    await world.channel.postAsAgent(ref, world.agents[0]!, 'May I send these?', { attachments: [a, b], approval: { id: 't7', head: '🔧 Analyst wants to use files.send', args: '{}', how: 'Approve with /approve t7 or refuse with /deny t7' } });
    const up = world.fake.files.uploads;
    expect(up.map((u) => u.keyboard !== undefined)).toEqual([false, true]);
    expect(JSON.stringify(up[1]!.keyboard)).toContain('t7');
  });
});
