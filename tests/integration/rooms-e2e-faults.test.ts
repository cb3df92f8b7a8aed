/**
 * One room across Telegram, Discord and the web in the real app (rooms-harness.ts), when things
 * go wrong or change: Discord down for a while (the others go on; it gets its backlog once, in
 * order), chats linked and unlinked in chat with a one-time code (admins only), and a bot that is
 * not an agent talking to one, until the pair's budget stops their ping-pong.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TranscriptEntry } from '../../src/core/types.js';
import { bootRoom, HELPER, MAYA, RELAY, TOM, until, USERNAMES, type RoomWorld } from './rooms-harness.js';

let w: RoomWorld | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const humanOn = (w: RoomWorld, text: string) => w.streamed().find((e) => e.kind === 'human' && e.text === text);

describe('one room across Telegram, Discord and the web: faults, links, foreign bots (real app)', () => {
  it('Discord down for a while: Telegram and the web go on; then Discord gets the backlog once, in order', async () => {
    w = await bootRoom({ replies: { analyst: ['First answer.', 'Second answer.'], writer: 'Writer here.' } });
    const { tg, dc } = w;
    tg.humanSays(w.tgRoom, MAYA, 'before the outage');
    await until(() => w!.dcPosts().find((p) => p.content === 'before the outage'), 'the first message on Discord');
    const before = w.dcPosts().length;

    dc.outage = true;
    const failedAt = dc.requests.length;
    tg.humanSays(w.tgRoom, MAYA, '@analyst during the outage?');
    const first = await until(() => w!.tgPosts().find((p) => p.text === 'First answer.'), 'the first answer on Telegram');
    expect((await w.webSays('@writer are you there?')).status).toBe(202);
    await until(() => w!.tgPosts().find((p) => p.text === 'Omar (Web): @writer are you there?'), 'Omar on Telegram');
    await until(() => w!.tgPosts().find((p) => p.text === 'Writer here.' && p.bot === USERNAMES.writer), 'the writer on Telegram');
    tg.humanSays(w.tgRoom, MAYA, 'go on', { replyTo: first });
    await until(() => w!.tgPosts().find((p) => p.text === 'Second answer.'), 'the second answer on Telegram');
    await until(() => w!.streamed().filter((e) => e.kind === 'agent').length === 3, 'the three answers on the web');
    // Discord was tried meanwhile and answered 500; nothing reached it.
    await until(() => dc.requests.slice(failedAt).filter((r) => r.status === 500 && /^\/webhooks\//.test(r.path)).length >= 2, 'Discord to be tried during the outage');
    expect(w.dcPosts()).toHaveLength(before);

    dc.outage = false;
    // The backlog: three people's messages (Maya twice, Omar) and three answers.
    const backlog = ['@analyst during the outage?', 'First answer.', '@writer are you there?', 'Writer here.', 'go on', 'Second answer.'];
    await until(() => w!.dcPosts().length >= before + backlog.length, 'the backlog on Discord', 90_000);
    const marker = await w.drain();
    const posted = w.dcPosts().slice(before);
    // Once each, in transcript order, each under its author.
    expect(posted.map((p) => [p.author.username, p.content])).toEqual([
      ['Maya · Telegram', '@analyst during the outage?'],
      ['Analyst', 'First answer.'],
      ['Omar · Web', '@writer are you there?'],
      ['Writer', 'Writer here.'],
      ['Maya · Telegram', 'go on'],
      ['Analyst', 'Second answer.'],
    ]);
    expect(new Set(posted.map((p) => p.id)).size).toBe(posted.length);
    const order = (await w.webHistory()).filter((e: TranscriptEntry) => (e.kind === 'human' || e.kind === 'agent') && e.text !== 'before the outage' && e.text !== marker && !e.origin?.channel.startsWith('discord')).map((e) => e.text);
    expect(order).toEqual(backlog);
    // Telegram got its part once, undisturbed by the outage.
    expect(w.tgPosts().filter((p) => p.bot === USERNAMES.analyst).map((p) => p.text)).toEqual(['First answer.', 'Second answer.']);
    // Every copy is recorded as posted; nothing is owed.
    const g = w.app.router.groups.get(w.roomId)!;
    expect(g.undelivered).toEqual([]);
    for (const e of g.transcript.filter((x) => x.kind === 'agent')) expect(e.copies?.[`discord:${w.dcRoom}`]?.delivery).toBe('posted');
  }, 120_000);

  it('linking with a code needs an admin on the joining side; unlinking leaves the room', async () => {
    w = await bootRoom();
    const { tg, dc } = w;
    const ops = w.app.gateway.listGroups().find((g) => g.chatId === w!.dcSolo)!;
    const team = w.app.gateway.listGroups().find((g) => g.chatId === String(w!.tgSolo))!;

    // A Discord admin asks for a code in #ops.
    dc.humanSays(w.dcSolo, w.mod, '/group link');
    const answer = await until(() => w!.dcPosts(w!.dcSolo).find((p) => p.content.startsWith('Link code: ')), 'the code on Discord');
    const code = /^Link code: (\S+) /.exec(answer.content)![1]!;
    expect(answer.author.username).toBe('Chorus');

    // Tom is not an admin of the Telegram group: refused, nothing links.
    tg.humanSays(w.tgSolo, TOM, `/group link ${code}`);
    const refused = await until(() => w!.tgPosts(w!.tgSolo).find((p) => p.text.includes('only chat admins')), 'the refusal on Telegram');
    expect(refused.text).toContain('/group link');
    await w.idle();
    expect(w.app.gateway.getGroup(ops.id)!.links).toBeUndefined();
    expect(w.app.gateway.getGroup(team.id)!.archived).toBe(false);

    // Maya is: the Telegram group joins the room of #ops; both sides are told.
    tg.humanSays(w.tgSolo, MAYA, `/group link ${code}`);
    await until(() => w!.tgPosts(w!.tgSolo).find((p) => p.text.startsWith('This chat joined the room “Ops”')), 'the answer on Telegram');
    const joinedDc = await until(() => w!.dcPosts(w!.dcSolo).find((p) => / joined\. This room is now shared by /.test(p.content)), 'the announcement on Discord');
    await until(() => w!.tgPosts(w!.tgSolo).find((p) => p.text === joinedDc.content), 'the announcement on Telegram');
    expect(w.app.gateway.getGroup(ops.id)!.links).toEqual([expect.objectContaining({ channel: 'telegram', chatId: String(w.tgSolo) })]);
    // The Telegram group's own group is archived (its history kept).
    expect(w.app.gateway.getGroup(team.id)).toBeUndefined();
    expect(w.app.router.groups.get(team.id)!.state.archived).toBeTruthy();

    // Linked: people reach the other side.
    tg.humanSays(w.tgSolo, MAYA, 'hello Ops');
    const hello = await until(() => w!.dcPosts(w!.dcSolo).find((p) => p.content === 'hello Ops'), 'Maya in #ops');
    expect(hello.author.username).toBe('Maya · Telegram');
    dc.humanSays(w.dcSolo, w.lee, 'hello Team');
    await until(() => w!.tgPosts(w!.tgSolo).find((p) => p.text === 'Lee (Discord): hello Team'), 'Lee in the Telegram group');
    // Ops' one agent answers everyone; its bot was never added to the Telegram group, so Telegram
    // refuses its posts there: recorded as failed, holding back nothing after them.
    const tgKey = `telegram:${w.tgSolo}`;
    const writerCopies = () => w!.app.router.groups.get(ops.id)!.transcript.filter((e) => e.agentId === 'writer').map((e) => e.copies?.[tgKey]?.delivery);
    await until(() => writerCopies().length >= 2 && writerCopies().every((d) => d === 'failed'), "the writer's posts refused in the Telegram group");
    expect(w.tgPosts(w.tgSolo).filter((p) => p.bot === USERNAMES.writer)).toEqual([]);

    // The code was used once: typed again, it is refused.
    dc.humanSays(w.dcRoom, w.mod, `/group link ${code}`);
    await until(() => w!.dcPosts(w!.dcRoom).find((p) => p.content.includes(`no valid link code "${code}"`)), 'the used code refused');

    // Maya unlinks the Telegram group: it leaves; #ops is told.
    tg.humanSays(w.tgSolo, MAYA, '/group unlink');
    await until(() => w!.tgPosts(w!.tgSolo).find((p) => p.text.startsWith('This chat left the room “Ops”')), 'the answer to unlink');
    await until(() => w!.dcPosts(w!.dcSolo).find((p) => / left this room\.$/.test(p.content)), 'the notice on Discord');
    expect(w.app.gateway.getGroup(ops.id)!.links ?? []).toEqual([]);
    // Unlinked: #ops no longer reaches the Telegram group.
    const n = w.tgPosts(w.tgSolo).length;
    dc.humanSays(w.dcSolo, w.lee, 'anyone on Telegram?');
    const anyone = await until(() => w!.app.router.groups.get(ops.id)!.transcript.find((e) => e.text === 'anyone on Telegram?'), 'the message recorded in Ops');
    expect(anyone.copies).toBeUndefined();
    await until(() => w!.dcPosts(w!.dcSolo).filter((p) => p.author.username === 'Writer').length >= 3, "the writer's answer in #ops");
    await w.idle();
    expect(w.tgPosts(w.tgSolo).slice(n)).toEqual([]);
  }, 60_000);

  it('a bot that is not an agent is answered and recorded as a bot, until the pair uses its budget', async () => {
    let n = 0;
    w = await bootRoom({ replies: { analyst: () => `pong ${++n}` } });
    const { tg } = w;
    // Addressed with a mention (the analyst's bot is an admin in bot-to-bot mode: it hears every bot).
    const ping0 = tg.foreignBotSays(w.tgRoom, HELPER, `@${USERNAMES.analyst} ping 0`);
    const pong1 = await until(() => w!.tgPosts().find((p) => p.text === 'pong 1'), 'the first answer');
    expect(pong1).toMatchObject({ bot: USERNAMES.analyst, replyToMessageId: ping0.messageId });
    const entry = await until(() => humanOn(w!, `@${USERNAMES.analyst} ping 0`), 'the bot on the web');
    expect(entry).toMatchObject({ authorName: 'Helper', authorKind: 'bot' });
    const onDc = await until(() => w!.dcPosts().find((p) => p.content === `@${USERNAMES.analyst} ping 0`), 'the bot on Discord');
    expect(onDc.author.username).toBe('Helper (bot) · Telegram');

    // The helper answers every pong: a ping-pong, stopped after 3 answers (bot_pair_events_per_minute).
    let last = pong1;
    for (let i = 1; i <= 3; i++) {
      tg.foreignBotSays(w.tgRoom, HELPER, `ping ${i}`, { replyTo: last });
      if (i === 3) break;
      last = await until(() => w!.tgPosts().find((p) => p.text === `pong ${i + 1}`), `answer ${i + 1}`);
    }
    const g = () => w!.app.router.groups.get(w!.roomId)!;
    const cap = await until(
      () => g().transcript.find((e) => e.kind === 'decision' && e.decision?.agentId === 'analyst'),
      'the pair budget to stop the analyst',
    );
    expect(cap.text).toContain('Helper');
    await w.drain();
    // Every ping is kept and shown (as a bot's), only three were answered.
    expect(w.streamed().filter((e) => e.authorKind === 'bot').map((e) => e.text)).toEqual([`@${USERNAMES.analyst} ping 0`, 'ping 1', 'ping 2', 'ping 3']);
    expect(w.tgPosts().filter((p) => p.bot === USERNAMES.analyst).map((p) => p.text)).toEqual(['pong 1', 'pong 2', 'pong 3']);
    expect(w.dcPosts().filter((p) => p.author.username === 'Analyst').map((p) => p.content)).toEqual(['pong 1', 'pong 2', 'pong 3']);
    // Its copies on Discord have the same budget: the fourth ping stays on Telegram and the web.
    expect(w.dcPosts().filter((p) => p.author.username === 'Helper (bot) · Telegram')).toHaveLength(3);
    expect(w.llm.callsFor('analyst')).toHaveLength(3);
    // The relay bot's posts never made it in as a bot's (they are Chorus's own).
    expect(w.streamed().some((e) => e.authorName === RELAY.firstName)).toBe(false);
  });
});
