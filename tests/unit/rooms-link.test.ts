/**
 * Chats joining and leaving a group's room: `/group link` codes (admins on both sides, one use,
 * ten minutes), the joining chat's own group archived with its history kept, the chat index
 * finding a group by any chat of its room (the web too), `/group unlink`, the GatewayApi side,
 * and all of it kept across a restart exactly as it was live.
 */
import { describe, expect, it } from 'vitest';
import { makeRouter, type HarnessOptions } from '../helpers/router-harness.js';
import { FakeChannel } from '../helpers/fake-channel.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { headOf } from '../../src/core/groups/evolve.js';
import { LINK_CODE_TTL_MS } from '../../src/core/roomTypes.js';
import { UserError } from '../../src/core/errors.js';
import { noPeers } from '../../src/core/peers.js';
import { normalizeLinkCode } from '../../src/core/groups/linkCodes.js';
import type { GatewayEvent } from '../../src/core/readModels.js';
import type { ChannelKind, InboundMessage } from '../../src/core/types.js';

async function rig(opts: HarnessOptions = {}) {
  const h = await makeRouter({ participants: ['analyst', 'writer'], ...opts });
  const tg = new FakeChannel('telegram');
  const dc = new FakeChannel('discord');
  for (const c of [tg, dc]) {
    h.router.addChannel(c);
    await c.start(h.router);
  }
  let n = 0;
  const send = async (channel: ChannelKind, chatId: string, text: string, extra: Partial<InboundMessage> = {}) => {
    const res = await h.router.handle({ kind: 'message', message: { channel, chatId, messageId: `x${++n}`, author: { id: 'boss', name: 'Boss' }, text, ts: h.clock.now(), ...extra } });
    await h.router.idle();
    return res;
  };
  // Every command answer, by the chat it answers (a linked chat's answer is posted there by the
  // room's delivery, which is not what these tests are about).
  const answers: Array<{ chat: string; text: string }> = [];
  const ctx = (h.router as unknown as { commands: { reply(msg: InboundMessage, g: unknown, text: string): Promise<void> } }).commands;
  const reply = ctx.reply.bind(ctx);
  ctx.reply = (msg, g, text) => {
    answers.push({ chat: `${msg.channel}:${msg.chatId}`, text });
    return reply(msg, g, text);
  };
  const said = (c: FakeChannel, chatId: string) => answers.filter((a) => a.chat === `${c.kind}:${chatId}`).map((a) => a.text);
  /** A code from `/group link` typed in a chat (the answer holds it). */
  const codeFrom = async (c: FakeChannel, chatId: string, extra: Partial<InboundMessage> = {}) => {
    await send(c.kind, chatId, '/group link', extra);
    const m = /Link code: ([A-Z0-9]{3}-[A-Z0-9]{3})/.exec(said(c, chatId).at(-1) ?? '');
    expect(m, said(c, chatId).join('\n')).not.toBeNull();
    return m![1]!;
  };
  // A Telegram group: the room's home.
  await send('telegram', '-100', '/group create analyst writer', { chatTitle: 'Team chat' });
  const team = h.router.groups.find('telegram', '-100')!;
  expect(team).toBeDefined();
  return { ...h, tg, dc, send, said, codeFrom, team };
}

describe('/group link', () => {
  it('a code made in one chat links another (typed in any case, without its dash); the room is announced in it and the code is used up', async () => {
    const r = await rig();
    const code = await r.codeFrom(r.tg, '-100');
    expect(r.said(r.tg, '-100').at(-1)).toContain(`Type /group link ${code} in the other chat within 10 minutes`);
    expect(r.team.state.linkCodes?.map((k) => k.code)).toEqual([code]);
    expect(r.team.state.linkCodes?.[0]).toMatchObject({ from: 'telegram:-100', until: r.clock.now() + LINK_CODE_TTL_MS });

    await r.send('discord', 'd1', `/group link ${code.replace('-', '').toLowerCase()}`, { chatTitle: '#general' });
    expect(r.said(r.dc, 'd1').at(-1)).toContain('This chat joined the room “Team chat”');
    expect(r.router.groups.find('discord', 'd1')).toBe(r.team);
    expect(r.team.links).toEqual([{ channel: 'discord', chatId: 'd1', title: '#general', at: r.clock.now() }]);
    expect(r.team.state.linkCodes).toBeUndefined();
    expect(r.team.transcript.map((e) => e.text)).toContain('Discord #general joined. This room is now shared by Telegram “Team chat” and Discord #general.');

    // A message in the linked chat is the room's.
    const res = await r.send('discord', 'd1', 'hello from discord', { author: { id: 'u9', name: 'Uma' } });
    expect(res).toMatchObject({ status: 'recorded', groupId: r.team.id });

    // Used once: another chat cannot use it again.
    await r.send('discord', 'd2', `/group link ${code}`, { chatTitle: '#other' });
    expect(r.said(r.dc, 'd2').at(-1)).toMatch(/no valid link code .* used already or older than 10 minutes/);
    expect(r.router.groups.find('discord', 'd2')).toBeUndefined();
  });

  it('only admins make a code, and only an admin of the joining chat uses it', async () => {
    const r = await rig();
    r.tg.admins = new Set(['boss']);
    r.dc.admins = new Set(['dboss']);
    await r.send('telegram', '-100', '/group link', { author: { id: 'maya', name: 'Maya' } });
    expect(r.said(r.tg, '-100').at(-1)).toBe('⚠ only chat admins can use /group link');
    expect(r.team.state.linkCodes).toBeUndefined();

    const code = await r.codeFrom(r.tg, '-100');
    await r.send('discord', 'd1', `/group link ${code}`, { author: { id: 'boss', name: 'Boss' } });
    expect(r.said(r.dc, 'd1').at(-1)).toBe('⚠ only chat admins can use /group link');
    expect(r.router.groups.find('discord', 'd1')).toBeUndefined();
    // The refusal did not use the code up.
    await r.send('discord', 'd1', `/group link ${code}`, { author: { id: 'dboss', name: 'D' } });
    expect(r.router.groups.find('discord', 'd1')).toBe(r.team);
  });

  it('a code is valid ten minutes', async () => {
    const r = await rig();
    const code = await r.codeFrom(r.tg, '-100');
    await r.clock.advance(LINK_CODE_TTL_MS);
    await r.send('discord', 'd1', `/group link ${code}`);
    expect(r.said(r.dc, 'd1').at(-1)).toMatch(/^⚠ no valid link code/);
    expect(r.team.links).toBeUndefined();
  });

  it("the joining chat's own group is archived with its history kept", async () => {
    const r = await rig();
    await r.send('discord', 'd1', '/group create writer', { chatTitle: '#general' });
    const own = r.router.groups.find('discord', 'd1')!;
    await r.send('discord', 'd1', 'an old message');
    const code = await r.codeFrom(r.tg, '-100');
    await r.send('discord', 'd1', `/group link ${code}`, { chatTitle: '#general' });
    expect(r.said(r.dc, 'd1').at(-1)).toContain(`This chat's own group “#general” was archived; its history is kept.`);
    expect(r.router.groups.get(own.id)!.state.archived).toBe(true);
    expect(r.router.groups.find('discord', 'd1')).toBe(r.team);
    const kept = await r.store.readEntries(own.id, { afterSeq: 0, limit: 100 });
    expect(kept.map((e) => e.text)).toContain('an old message');
  });

  it('refuses a private chat, a chat already in the room, one linked into another room, and a bad code', async () => {
    const r = await rig();
    const code = await r.codeFrom(r.tg, '-100');
    await r.send('telegram', '555', `/group link ${code}`, { isPrivate: true, viaAgentId: 'analyst' });
    expect(r.said(r.tg, '555').at(-1)).toMatch(/a private chat cannot join a room/);
    await r.send('telegram', '-100', `/group link ${code}`);
    expect(r.said(r.tg, '-100').at(-1)).toBe('⚠ this chat is already part of the room “Team chat”');
    await r.send('discord', 'd1', `/group link ${code}`, { chatTitle: '#general' });
    // Another room's code, typed in a chat linked to this one.
    await r.send('telegram', '-200', '/group create writer', { chatTitle: 'Other' });
    const other = await r.codeFrom(r.tg, '-200');
    await r.send('discord', 'd1', `/group link ${other}`);
    expect(r.said(r.dc, 'd1').at(-1)).toBe('⚠ this chat is already linked into the room “Team chat”; /group unlink it first');
    // The home of a room shared with other chats cannot join another room.
    await r.send('telegram', '-100', `/group link ${other}`);
    expect(r.said(r.tg, '-100').at(-1)).toMatch(/is a room shared with Discord #general; unlink those first/);
    await r.send('discord', 'd3', '/group link NOT-ACODE!');
    expect(r.said(r.dc, 'd3').at(-1)).toMatch(/^⚠ no valid link code "NOT-ACODE!"/);
  });

  it('a code of a group another instance runs is refused, naming that instance', async () => {
    const r = await rig({ peers: { ...noPeers, ownerOf: () => 'other-1' } });
    const code = await r.codeFrom(r.tg, '-100');
    // The group's lease went to another instance; the copy here still holds the code.
    (r.router as unknown as { running: { release(id: string): void } }).running.release(r.team.id);
    await r.send('discord', 'd1', `/group link ${code}`);
    expect(r.said(r.dc, 'd1').at(-1)).toMatch(/is run by instance "other-1"/);
    expect(r.team.links).toBeUndefined();
  });
});

describe('/group unlink', () => {
  it('a linked chat leaves (the room is told); the home chat cannot', async () => {
    const r = await rig();
    const code = await r.codeFrom(r.tg, '-100');
    await r.send('discord', 'd1', `/group link ${code}`, { chatTitle: '#general' });
    await r.send('telegram', '-100', '/group list');
    expect(r.said(r.tg, '-100').at(-1)).toContain('Chats: Telegram “Team chat” (home), Discord #general');

    await r.send('telegram', '-100', '/group unlink');
    expect(r.said(r.tg, '-100').at(-1)).toBe("⚠ this is the room's home chat; unlink the other chats from them, or /group dissolve");
    expect(r.team.links).toHaveLength(1);

    r.dc.admins = new Set(['dboss']);
    await r.send('discord', 'd1', '/group unlink');
    expect(r.said(r.dc, 'd1').at(-1)).toBe('⚠ only chat admins can use /group unlink');
    await r.send('discord', 'd1', '/group unlink', { author: { id: 'dboss', name: 'D' } });
    expect(r.said(r.dc, 'd1').at(-1)).toBe('This chat left the room “Team chat”; what was said here stays in the room\'s history. An admin can link it again with a new code.');
    expect(r.team.links).toBeUndefined();
    expect(r.router.groups.find('discord', 'd1')).toBeUndefined();
    expect(r.team.transcript.at(-1)!.text).toBe('Discord #general left this room.');
    // The chat is free again.
    expect((await r.send('discord', 'd1', 'anyone?')).status).toBe('no_group');
  });

  it('/help lists the link commands', async () => {
    const r = await rig();
    await r.send('telegram', '-100', '/help');
    const help = r.said(r.tg, '-100').at(-1)!;
    expect(help).toContain('/group link <code>');
    expect(help).toContain('/group unlink');
  });
});

describe('the chat index', () => {
  it('finds a group by its home chat and by every linked chat, the web included; a linked chat that moves to a new id is re-keyed', async () => {
    const r = await rig();
    const code = await r.codeFrom(r.tg, '-100');
    await r.router.gateway.linkWeb(code, 'token holder');
    expect(r.router.groups.find('web', r.team.id)).toBe(r.team);
    const res = await r.send('web', r.team.id, 'from the page');
    expect(res).toMatchObject({ status: 'recorded', groupId: r.team.id });

    const code2 = await r.codeFrom(r.tg, '-100');
    await r.send('telegram', '-300', `/group link ${code2}`, { chatTitle: 'Ops' });
    expect(r.router.groups.find('telegram', '-300')).toBe(r.team);
    await r.router.handle({ kind: 'rekey', channel: 'telegram', oldChatId: '-300', newChatId: '-100300' });
    expect(r.router.groups.find('telegram', '-300')).toBeUndefined();
    expect(r.router.groups.find('telegram', '-100300')).toBe(r.team);
    expect(r.team.chatId).toBe('-100');
    expect(r.team.links!.map((l) => `${l.channel}:${l.chatId}`)).toEqual(['web:' + r.team.id, 'telegram:-100300']);

    // Archived: none of its chats finds it.
    await r.router.gateway.dissolveGroup(r.team.id);
    expect(r.router.groups.find('telegram', '-100')).toBeUndefined();
    expect(r.router.groups.find('telegram', '-100300')).toBeUndefined();
    expect(r.router.groups.find('web', r.team.id)).toBeUndefined();
  });

  it('after a restart: links, re-keys and unused codes are as they were live, and the index is rebuilt', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const r = await rig({ store, clock });
    const code = await r.codeFrom(r.tg, '-100');
    await r.send('discord', 'd1', `/group link ${code}`, { chatTitle: '#general' });
    const code2 = await r.codeFrom(r.tg, '-100');
    await r.send('telegram', '-300', `/group link ${code2}`, { chatTitle: 'Ops' });
    await r.router.handle({ kind: 'rekey', channel: 'telegram', oldChatId: '-300', newChatId: '-100300' });
    const unused = await r.codeFrom(r.dc, 'd1');
    await r.router.groups.settle();
    const live = structuredClone(headOf(r.team));
    await r.router.stop();

    const again = await rig({ store, clock });
    const g = again.router.groups.get(r.team.id)!;
    expect(headOf(g)).toEqual(live);
    expect(g.state.linkCodes).toEqual([{ code: unused, until: expect.any(Number), from: 'discord:d1' }]);
    expect(again.router.groups.find('discord', 'd1')).toBe(g);
    expect(again.router.groups.find('telegram', '-100300')).toBe(g);
    expect(again.router.groups.find('telegram', '-300')).toBeUndefined();
    // The code made before the restart still works.
    await again.send('discord', 'd7', `/group link ${unused}`, { chatTitle: '#seven' });
    expect(again.router.groups.find('discord', 'd7')).toBe(g);
    await again.router.stop();
  });
});

describe('GatewayApi: linkCode, linkWeb, unlinkChat', () => {
  it('the web joins a room by code and leaves it; errors carry their codes; each change is a live "updated" event', async () => {
    const r = await rig();
    const events: GatewayEvent[] = [];
    r.router.gateway.subscribe((e) => events.push(e));
    const { code, until } = await r.router.gateway.linkCode(r.team.id, 'token holder');
    expect(normalizeLinkCode(code)).toBe(code);
    expect(until).toBe(r.clock.now() + LINK_CODE_TTL_MS);
    expect(r.team.state.linkCodes?.[0]?.from).toBe(`web:${r.team.id}`);

    const view = await r.router.gateway.linkWeb(code.toLowerCase(), 'token holder');
    expect(view.links).toEqual([{ channel: 'web', chatId: r.team.id, title: 'Team chat', at: r.clock.now() }]);
    expect(events).toContainEqual({ type: 'group', groupId: r.team.id, action: 'updated' });
    await expect(r.router.gateway.linkWeb(code, 'x')).rejects.toMatchObject({ code: 'unknown_code', status: 404 });

    // A web room's own code: the web is there already.
    const own = await r.router.gateway.linkCode('room', 'x');
    await expect(r.router.gateway.linkWeb(own.code, 'x')).rejects.toMatchObject({ code: 'already_linked', status: 409 });
    const again = await r.router.gateway.linkCode(r.team.id, 'x');
    await expect(r.router.gateway.linkWeb(again.code, 'x')).rejects.toMatchObject({ code: 'already_linked', status: 409 });

    await expect(r.router.gateway.unlinkChat(r.team.id, { channel: 'telegram', chatId: '-100' }, 'x')).rejects.toMatchObject({ code: 'home_chat', status: 409 });
    await expect(r.router.gateway.unlinkChat(r.team.id, { channel: 'discord', chatId: 'nope' }, 'x')).rejects.toMatchObject({ code: 'not_linked', status: 404 });
    await expect(r.router.gateway.unlinkChat('ghost', { channel: 'web', chatId: 'ghost' }, 'x')).rejects.toMatchObject({ code: 'not_found', status: 404 });
    events.length = 0;
    const left = await r.router.gateway.unlinkChat(r.team.id, { channel: 'web', chatId: r.team.id }, 'x');
    expect(left.links).toBeUndefined();
    expect(events).toContainEqual({ type: 'group', groupId: r.team.id, action: 'updated' });
    expect(r.router.groups.find('web', r.team.id)).toBeUndefined();
    await expect(r.router.gateway.linkCode('ghost', 'x')).rejects.toBeInstanceOf(UserError);
  });

  it("a private chat's group has no code", async () => {
    const r = await rig();
    await r.send('telegram', '555', 'hi', { isPrivate: true, viaAgentId: 'analyst' });
    const dm = r.router.groups.find('telegram', '555', 'analyst')!;
    await expect(r.router.gateway.linkCode(dm.id, 'x')).rejects.toMatchObject({ code: 'private_chat', status: 409 });
  });
});
