/** Commands, admin checks through the channel, and their effects. */
import { describe, expect, it } from 'vitest';
import { parseCommand, parseValue } from '../../src/core/commands/commands.js';
import { makeRouter } from '../helpers/router-harness.js';

describe('parsing', () => {
  it('recognises commands with and without a bot suffix', () => {
    expect(parseCommand('/group list')).toMatchObject({ name: 'group', args: ['list'] });
    expect(parseCommand('/group@analyst_bot  add  writer')).toMatchObject({ name: 'group', target: 'analyst_bot', args: ['add', 'writer'] });
    expect(parseCommand('/ask writer critic what now?')).toMatchObject({ name: 'ask', rest: 'writer critic what now?' });
    expect(parseCommand('/start')).toMatchObject({ name: 'help' });
    expect(parseCommand('/groupies')).toBeNull();
    expect(parseCommand('hello /group list')).toBeNull();
  });
  it('turns words into typed values', () => {
    expect([parseValue('3'), parseValue('0.5'), parseValue('true'), parseValue('off'), parseValue('none'), parseValue('hybrid')]).toEqual([3, 0.5, true, false, null, 'hybrid']);
  });
});

describe('commands in a chat', () => {
  const last = (h: Awaited<ReturnType<typeof makeRouter>>) => h.channel.texts(null).at(-1) ?? '';

  it('/group create makes a group for a chat; errors for unknown agents and existing groups', async () => {
    const h = await makeRouter();
    const chat = { chatId: 'tg-chat', channel: 'web' as const, chatTitle: 'Finance' };
    await h.say('/group create analyst nobody', chat);
    expect(last(h)).toBe('⚠ unknown agent "nobody"; known agents: analyst, writer, critic');
    await h.say('/group create analyst @writer', chat);
    expect(last(h)).toContain('Group "Finance" is ready with Analyst (@analyst), Writer (@writer)');
    expect(h.router.findGroup('web', 'tg-chat')?.participants).toEqual(['analyst', 'writer']);
    await h.say('/group create critic', chat);
    expect(last(h)).toContain('this chat already has a group');
  });

  it('refuses admin commands to non-admins and says why; anyone may list', async () => {
    const h = await makeRouter();
    h.channel.admins = new Set(['boss']);
    await h.say('/group remove writer');
    expect(last(h)).toBe('⚠ only chat admins can use /group remove');
    expect(h.router.gateway.getGroup('room')!.participants).toContain('writer');
    await h.say('/group list');
    expect(last(h)).toContain('Group “Test room”');
    await h.say('/group remove writer', { author: { id: 'boss', name: 'Boss' } });
    expect(h.router.gateway.getGroup('room')!.participants).toEqual(['analyst', 'critic']);
  });

  it('/group add gives the newcomer the last 20 messages', async () => {
    const h = await makeRouter({ participants: ['analyst', 'writer'], group: { reply_strategy: 'mention_only' } });
    for (let i = 0; i < 25; i++) await h.say(`note ${i}`);
    await h.say('/group add critic');
    await h.say('@critic catch up');
    const seen = h.llm.callsFor('critic')[0]!.messages.at(-1)!.content;
    expect(seen).not.toContain('>note 4<');
    expect(seen).toContain('>note 5<');
    expect(seen).toContain('note 24');
    expect(seen).toContain('@critic catch up');
  });

  it('/group list shows members, status, strategy and settings', async () => {
    const h = await makeRouter({ group: { cooldown_seconds: 30 } });
    await h.say('@analyst hi');
    await h.say('/group mute writer');
    await h.say('/group list');
    const text = last(h);
    expect(text).toMatch(/Analyst — @analyst @numbers — cooling down 30s, last spoke 0s ago/);
    expect(text).toMatch(/Writer — @writer — muted/);
    expect(text).toContain('Strategy: hybrid');
    expect(text).toContain('Caps: 3 agent turns per message');
  });

  it('/group config lists, sets and rejects with the allowed values', async () => {
    const h = await makeRouter();
    await h.say('/group config');
    expect(last(h)).toContain('reply_strategy = hybrid');
    await h.say('/group config max_agent_turns_per_message 1');
    expect(h.router.gateway.getGroup('room')!.config.max_agent_turns_per_message).toBe(1);
    await h.say('/group config reply_strategy loud');
    expect(last(h)).toBe('⚠ reply_strategy: must be one of: hybrid, mention_only, round_robin, selector');
    await h.say('/group config last_speaker nobody');
    expect(last(h)).toContain('last_speaker');
    await h.say('/group config max_depth -1');
    expect(last(h)).toBe('⚠ max_depth: must be at least 0');
    expect(h.router.gateway.getGroup('room')!.config.max_depth).toBe(2);
  });

  it('/group reset clears memory; /group dissolve archives', async () => {
    const h = await makeRouter();
    await h.say('@analyst remember 42');
    await h.say('/group reset analyst');
    expect(h.store.session('room', 'analyst').history).toEqual([]);
    await h.say('/group dissolve');
    expect(h.router.gateway.getGroup('room')).toBeUndefined();
    expect(h.store.group('room').state.archived).toBe(true);
    expect(h.store.group('room').transcript.length).toBeGreaterThan(0);
    expect((await h.say('@analyst still there?')).status).toBe('no_group');
  });

  it('/ask forces agents to answer the text, or the last human message', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' } });
    await h.say('what is the plan?');
    expect(h.speakers()).toEqual([]);
    await h.say('/ask writer critic');
    expect(h.speakers()).toEqual(['writer', 'critic']);
    expect(h.llm.callsFor('writer')[0]!.messages.at(-1)!.content).toContain('You were asked to answer the last message from Maya');
    await h.say('/ask analyst how much?');
    expect(h.speakers().at(-1)).toBe('analyst');
    expect(h.llm.callsFor('analyst')[0]!.messages.at(-1)!.content).toContain('<message from="Maya" role="human">how much?</message>');
    await h.say('/ask');
    expect(last(h)).toContain('name who should answer');
  });

  it('/help answers anywhere, even without a group', async () => {
    const h = await makeRouter();
    await h.say('/help', { chatId: 'elsewhere' });
    expect(last(h)).toContain('/group create');
  });

  it('copies of /group create arriving while the first is still being handled are duplicates', async () => {
    const h = await makeRouter();
    const slowAdmin = h.channel.isAdmin.bind(h.channel);
    h.channel.isAdmin = async (chat, user) => (await new Promise((r) => setTimeout(r, 20)), slowAdmin(chat, user));
    const msg = h.message('/group create analyst writer', { chatId: 'busy' });
    const results = await Promise.all(['analyst', 'writer', 'critic'].map((via, i) => new Promise((r) => setTimeout(r, i * 5)).then(() => h.router.receive({ ...msg, viaAgentId: via }))));
    expect(results.map((r) => r.status).sort()).toEqual(['command', 'duplicate', 'duplicate']);
    expect(h.channel.texts(null).filter((t) => t.includes('already has a group'))).toEqual([]);
    expect(h.store.group(h.router.findGroup('web', 'busy')!.id).seen).toContain(msg.messageId);
  });

  it('a command sent to several bots is handled once', async () => {
    const h = await makeRouter();
    const msg = h.message('/group create analyst', { chatId: 'fresh' });
    await h.router.receive({ ...msg, viaAgentId: 'analyst' });
    await h.router.receive({ ...msg, viaAgentId: 'writer' });
    expect(h.channel.texts(null).filter((t) => t.includes('is ready'))).toHaveLength(1);
  });
});
