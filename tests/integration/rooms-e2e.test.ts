/**
 * One room across Telegram, Discord and the web, end to end in the real app (rooms-harness.ts):
 * people relayed under their names to the other chats, an agent's reply posted once in every chat
 * under its own identity, replies threaded to the same entry, edits and deletions carried to the
 * copies. The faults (a Discord outage), linking with a code and foreign bots are in
 * rooms-e2e-faults.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TranscriptEntry } from '../../src/core/types.js';
import { bootRoom, MAYA, RELAY, TOKENS, until, USERNAMES, type RoomWorld } from './rooms-harness.js';

let w: RoomWorld | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const humanOn = (w: RoomWorld, text: string) => w.streamed().find((e) => e.kind === 'human' && e.text === text);
/** The chat an entry was written in: its origin, or (absent) the room's home chat, here Telegram. */
const writtenIn = (w: RoomWorld, e: TranscriptEntry) => e.origin ?? { channel: 'telegram', chatId: String(w.tgRoom) };

describe('one room across Telegram, Discord and the web (real app)', () => {
  it('a person on each platform appears on the other two under their name and platform', async () => {
    w = await bootRoom();
    const { tg, dc } = w;

    // Telegram → Discord (the webhook, under her name and platform) and the web (origin telegram).
    tg.humanSays(w.tgRoom, MAYA, 'hello from Telegram');
    const onDiscord = await until(() => w!.dcPosts().find((p) => p.content === 'hello from Telegram'), 'Maya on Discord');
    expect(onDiscord.author.username).toBe('Maya · Telegram');
    expect(onDiscord.webhook_id).toBeTruthy();
    const fromTg = await until(() => humanOn(w!, 'hello from Telegram'), 'Maya on the web');
    expect(fromTg.authorName).toBe('Maya');
    expect(writtenIn(w, fromTg)).toEqual({ channel: 'telegram', chatId: String(w.tgRoom) });
    expect(w.app.gateway.getGroup(w.roomId)).toMatchObject({ channel: 'telegram', chatId: String(w.tgRoom) });

    // Discord → Telegram (the relay bot, "**Lee** (Discord): …") and the web (origin discord).
    dc.humanSays(w.dcRoom, w.lee, 'hello from Discord');
    const onTg = await until(() => w!.tgPosts().find((p) => p.text.endsWith('hello from Discord')), 'Lee on Telegram');
    expect(onTg).toMatchObject({ bot: RELAY.username, text: 'Lee (Discord): hello from Discord', parseMode: 'HTML' });
    expect(tg.callsOf('sendMessage', RELAY.username).map((c) => c.payload.text)).toContain('<b>Lee</b> (Discord): hello from Discord');
    const fromDc = await until(() => humanOn(w!, 'hello from Discord'), 'Lee on the web');
    expect(fromDc).toMatchObject({ authorName: 'Lee', origin: { channel: 'discord', chatId: w.dcRoom } });

    // The web → both.
    const sent = await w.webSays('hello from the web', { name: 'Omar' });
    expect(sent.status).toBe(202);
    await until(() => w!.tgPosts().find((p) => p.text === 'Omar (Web): hello from the web'), 'Omar on Telegram');
    const omarOnDc = await until(() => w!.dcPosts().find((p) => p.content === 'hello from the web'), 'Omar on Discord');
    expect(omarOnDc.author.username).toBe('Omar · Web');
    expect(humanOn(w, 'hello from the web')).toMatchObject({ authorName: 'Omar', origin: { channel: 'web', chatId: w.roomId } });

    const marker = await w.drain();
    // Nobody is posted back to their own chat, and nothing is posted twice.
    expect(w.tgPosts().map((p) => [p.bot, p.text])).toEqual([
      [RELAY.username, 'Lee (Discord): hello from Discord'],
      [RELAY.username, 'Omar (Web): hello from the web'],
      [RELAY.username, `Lee (Discord): ${marker}`],
    ]);
    expect(w.dcPosts().map((p) => [p.author.username, p.content])).toEqual([
      ['Maya · Telegram', 'hello from Telegram'],
      ['Omar · Web', 'hello from the web'],
    ]);
    // The relayed copies came back as echoes (Discord's gateway, the analyst's bot in bot-to-bot
    // mode) and were not taken as input: the room has the four messages people wrote, once each.
    expect(w.dc.dispatched.filter((d) => d.webhookId !== null).length).toBeGreaterThanOrEqual(2);
    const analystHeard = w.tg.state.bots.get(TOKENS.analyst)!.history.map((u) => (u as { message?: { from?: { username?: string } } }).message?.from?.username);
    expect(analystHeard.filter((u) => u === RELAY.username)).toHaveLength(3);
    expect(w.streamed().filter((e) => e.kind === 'human').map((e) => e.text)).toEqual(['hello from Telegram', 'hello from Discord', 'hello from the web', marker]);
    expect((await w.webHistory()).filter((e) => e.kind === 'human')).toHaveLength(4);
    expect(w.llm.calls.filter((c) => c.purpose === 'turn')).toEqual([]);
  });

  it("an agent's reply appears once in every chat under its own identity", async () => {
    w = await bootRoom({ replies: { analyst: 'Revenue grew 8%.', writer: 'Here is the draft.' } });
    const { tg, dc } = w;

    const asked = tg.humanSays(w.tgRoom, MAYA, '@analyst how did we do?');
    const tgReply = await until(() => w!.tgPosts().find((p) => p.text === 'Revenue grew 8%.'), "the analyst's reply on Telegram");
    // Its own bot, threaded to Maya's message.
    expect(tgReply).toMatchObject({ bot: USERNAMES.analyst, replyToMessageId: asked.messageId });
    const dcReply = await until(() => w!.dcPosts().find((p) => p.content === 'Revenue grew 8%.'), "the analyst's reply on Discord");
    expect(dcReply.author.username).toBe('Analyst');
    const webReply = await until(() => w!.streamed().find((e) => e.kind === 'agent'), "the analyst's reply on the web");
    expect(webReply).toMatchObject({ agentId: 'analyst', authorName: 'Analyst', text: 'Revenue grew 8%.' });

    // From Discord: the writer answers in every chat, on Telegram threaded to the relayed copy.
    dc.humanSays(w.dcRoom, w.lee, '@writer a draft please');
    const copy = await until(() => w!.tgPosts().find((p) => p.text === 'Lee (Discord): @writer a draft please'), "Lee's message on Telegram");
    const tgDraft = await until(() => w!.tgPosts().find((p) => p.text === 'Here is the draft.'), "the writer's reply on Telegram");
    expect(tgDraft).toMatchObject({ bot: USERNAMES.writer, replyToMessageId: copy.messageId });
    await until(() => w!.dcPosts().find((p) => p.content === 'Here is the draft.'), "the writer's reply on Discord");
    await until(() => w!.streamed().find((e) => e.kind === 'agent' && e.agentId === 'writer'), "the writer's reply on the web");

    await w.idle();
    await w.app.router.groups.settle();
    // Exactly once each, in every chat.
    const count = (xs: string[], t: string) => xs.filter((x) => x === t).length;
    for (const text of ['Revenue grew 8%.', 'Here is the draft.']) {
      expect(count(w.tgPosts().map((p) => p.text), text)).toBe(1);
      expect(count(w.dcPosts().map((p) => p.content), text)).toBe(1);
      expect(count(w.streamed().filter((e) => e.kind === 'agent').map((e) => e.text), text)).toBe(1);
    }
    expect(w.dcPosts().find((p) => p.content === 'Here is the draft.')!.author.username).toBe('Writer');
    // One model call each: three chats, one round.
    expect(w.llm.calls.filter((c) => c.purpose === 'turn').map((c) => c.agent?.id)).toEqual(['analyst', 'writer']);
    // The log keeps each copy's outcome: posted in Telegram (home) and on Discord.
    const history = await w.webHistory();
    const replies = history.filter((e: TranscriptEntry) => e.kind === 'agent');
    expect(replies.map((e) => [e.agentId, e.delivery, e.copies?.[`discord:${w!.dcRoom}`]?.delivery])).toEqual([
      ['analyst', 'posted', 'posted'],
      ['writer', 'posted', 'posted'],
    ]);
  });

  it('a reply is a reply to the same entry everywhere; an edit and a deletion reach the copies', async () => {
    w = await bootRoom({ replies: { analyst: ['Revenue grew 8%.', 'Shorter: +8%.', 'Thanks, Lee.'] } });
    const { tg, dc } = w;
    const asked = tg.humanSays(w.tgRoom, MAYA, '@analyst how did we do?');
    const answer = await until(() => w!.tgPosts().find((p) => p.text === 'Revenue grew 8%.'), "the analyst's reply on Telegram");
    const answerEntry = await until(() => w!.streamed().find((e) => e.kind === 'agent'), 'the reply on the web');
    const askedEntry = humanOn(w, '@analyst how did we do?')!;
    const askedOnDc = await until(() => w!.dcPosts().find((p) => p.content === '@analyst how did we do?'), "Maya's question on Discord");

    // On Telegram, a reply to the analyst's post: the same entry on the web, and it addresses the analyst.
    tg.humanSays(w.tgRoom, MAYA, 'shorter please', { replyTo: answer });
    const shorter = await until(() => humanOn(w!, 'shorter please'), 'the reply on the web');
    expect(shorter.replyTo).toBe(answerEntry.id);
    await until(() => w!.tgPosts().find((p) => p.text === 'Shorter: +8%.'), 'the second answer on Telegram');
    await until(() => w!.dcPosts().find((p) => p.content === 'Shorter: +8%.'), 'the second answer on Discord');
    // Discord shows the relayed reply, but cannot thread it: webhooks post no message replies.
    expect(w.dcPosts().find((p) => p.content === 'shorter please')?.author.username).toBe('Maya · Telegram');

    // On Discord, a reply (message reference) to the relayed copy of Maya's question: on Telegram the
    // relayed message replies to her original, on the web to her entry.
    const agree = dc.humanSays(w.dcRoom, w.lee, 'agreed, good question', { replyTo: askedOnDc.id });
    const agreeOnTg = await until(() => w!.tgPosts().find((p) => p.text === 'Lee (Discord): agreed, good question'), "Lee's reply on Telegram");
    expect(agreeOnTg.replyToMessageId).toBe(asked.messageId);
    const agreeEntry = await until(() => humanOn(w!, 'agreed, good question'), "Lee's reply on the web");
    expect(agreeEntry.replyTo).toBe(askedEntry.id);
    // On Discord, a reply to the analyst's webhook post: on Telegram it threads to the analyst's own
    // post, and it addresses the analyst, whose answer threads to Lee's relayed copy there.
    const dcAnswer = w.dcPosts().find((p) => p.content === 'Revenue grew 8%.')!;
    dc.humanSays(w.dcRoom, w.lee, 'nice work', { replyTo: dcAnswer.id });
    const niceOnTg = await until(() => w!.tgPosts().find((p) => p.text === 'Lee (Discord): nice work'), "Lee's second reply on Telegram");
    expect(niceOnTg.replyToMessageId).toBe(answer.messageId);
    expect((await until(() => humanOn(w!, 'nice work'), 'on the web')).replyTo).toBe(answerEntry.id);
    const thanks = await until(() => w!.tgPosts().find((p) => p.text === 'Thanks, Lee.'), 'the third answer on Telegram');
    expect(thanks).toMatchObject({ bot: USERNAMES.analyst, replyToMessageId: niceOnTg.messageId });
    // On the web, a reply to Lee's entry: on Telegram it threads to his relayed message.
    const niceEntry = humanOn(w, 'nice work')!;
    expect((await w.webSays('+1 from the web', { replyTo: niceEntry.id })).status).toBe(202);
    const plusOne = await until(() => w!.tgPosts().find((p) => p.text === 'Omar (Web): +1 from the web'), "Omar's reply on Telegram");
    expect(plusOne.replyToMessageId).toBe(niceOnTg.messageId);

    // Maya edits her message on Telegram: the copy on Discord and the web entry change.
    const plan = tg.humanSays(w.tgRoom, MAYA, 'the meeting is at 3');
    const planOnDc = await until(() => w!.dcPosts().find((p) => p.content === 'the meeting is at 3'), 'the plan on Discord');
    const planEntry = await until(() => humanOn(w!, 'the meeting is at 3'), 'the plan on the web');
    tg.humanEdits(plan, 'the meeting is at 4');
    await until(() => dc.messages.find((m) => m.id === planOnDc.id)?.content === 'the meeting is at 4', 'the edit on Discord');
    const edited = await until(() => w!.sse.events.find((e) => e.event === 'edited' && e.data.id === planEntry.id), 'the edit on the web');
    expect(edited.data).toMatchObject({ text: 'the meeting is at 4', editedAt: expect.any(Number) });
    expect((await w.webHistory()).find((e) => e.id === planEntry.id)).toMatchObject({ text: 'the meeting is at 4', editedAt: expect.any(Number) });

    // Lee deletes his message on Discord: the relay bot's copy on Telegram goes, the web entry is deleted.
    dc.humanDeletes(w.dcRoom, agree);
    await until(() => tg.changes.deletions.find((d) => d.messageId === agreeOnTg.messageId), 'the deletion on Telegram');
    expect(tg.changes.deletions).toEqual([{ bot: RELAY.username, chatId: w.tgRoom, messageId: agreeOnTg.messageId, text: 'Lee (Discord): agreed, good question' }]);
    await until(() => w!.sse.events.find((e) => e.event === 'edited' && e.data.id === agreeEntry.id && e.data.deleted === true), 'the deletion on the web');
    expect((await w.webHistory()).find((e) => e.id === agreeEntry.id)).toMatchObject({ deleted: true, text: '' });

    await w.drain();
    // The analyst answered three times (the question, then each reply to its post), once in each chat.
    const answers = ['Revenue grew 8%.', 'Shorter: +8%.', 'Thanks, Lee.'];
    expect(w.tgPosts().filter((p) => p.bot === USERNAMES.analyst).map((p) => p.text)).toEqual(answers);
    expect(w.dcPosts().filter((p) => p.author.username === 'Analyst').map((p) => p.content)).toEqual(answers);
    expect(w.streamed().filter((e) => e.kind === 'agent').map((e) => e.text)).toEqual(answers);
    // Nothing owed anywhere; no edit or deletion waits to be carried.
    const g = w.app.router.groups.get(w.roomId)!;
    expect(g.undelivered).toEqual([]);
    expect(g.state.carry ?? []).toEqual([]);
  });
});
