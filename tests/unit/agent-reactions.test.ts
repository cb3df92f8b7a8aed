/**
 * Agents may react instead of replying (core/router/agentReaction.ts): a voluntary turn answered
 * `[REACT 🎉]` alone records the agent's reaction on the round's message from a person, in one
 * record with the turn's outcome (the agent's history, a quiet line, the note the others observe),
 * posts nothing as text, and shows it natively through the channel. An addressed turn cannot
 * react: the emoji is its answer. The reaction survives a restart.
 */
import { describe, expect, it } from 'vitest';
import type { Channel } from '../../src/core/ports.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { CapturingLogger } from '../helpers/logger.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { makeRouter } from '../helpers/router-harness.js';

type Harness = Awaited<ReturnType<typeof makeRouter>>;

const humanMessage = (h: Harness, text: string): TranscriptEntry => h.transcript().find((e) => e.kind === 'human' && e.text === text)!;
const userTurns = (h: Harness, agentId: string) => h.llm.callsFor(agentId).map((c) => c.messages.at(-1)!.content);
const history = (h: Harness, agentId: string) => h.router.groups.get('room')!.sessions.get(agentId)!.history;

describe('a voluntary [REACT 🎉]', () => {
  it('records the agent\'s reaction on the message, posts no text, shows it natively, and says so in a quiet line', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: '[REACT 🎉]' } } });
    const deltas: string[] = [];
    h.router.gateway.subscribe((ev) => void (ev.type === 'delta' && deltas.push(ev.text)));
    await h.say('we shipped the release');
    const trigger = humanMessage(h, 'we shipped the release');

    // Offered, and asked as such.
    const call = h.llm.callsFor('analyst')[0]!;
    expect(call.mayReact).toBe(true);
    expect(call.messages.at(-1)!.content).toContain('or react to the newest message from Maya with exactly [REACT <emoji>], one emoji in place of <emoji>.');

    // The reaction, by the agent, on the trigger.
    expect(trigger.reactions).toEqual([{ emoji: '🎉', by: 'Analyst', byKey: 'agent:analyst', at: expect.any(Number) }]);
    // Nothing posted as text, nothing streamed; the channel was asked to show it on the person's message.
    expect(h.channel.posts).toEqual([]);
    expect(deltas).toEqual([]);
    expect(h.channel.reactions).toEqual([{ chatId: h.group.chatId, agentId: 'analyst', messageId: trigger.platformMessageId, emoji: '🎉', on: true }]);
    // The quiet line, with the turn's prompt reference, like a pass line.
    const line = h.transcript().find((e) => e.kind === 'decision' && e.decision?.type === 'react')!;
    expect(line).toMatchObject({ text: 'Analyst reacted 🎉', hiddenFromAgents: true, decision: { type: 'react', agentId: 'analyst', emoji: '🎉' } });
    expect(line.decision?.prompt).toBeDefined();
    // The note the agents observe carries the agent's id.
    const note = h.transcript().find((e) => e.reactionOf)!;
    expect(note).toMatchObject({ kind: 'system', agentId: 'analyst', reactionOf: { id: trigger.id, emoji: '🎉', by: 'Analyst' } });
    expect(note.text).toBe('Analyst reacted 🎉 to Maya\'s message: "we shipped the release"');
    // The agent remembers reacting; its cursor moved past the message as for a pass.
    expect(history(h, 'analyst').at(-1)).toEqual({ role: 'assistant', content: '[REACT 🎉]' });
    expect(h.router.groups.get('room')!.sessions.get('analyst')!.cursor).toBeGreaterThanOrEqual(trigger.seq);
    // One record: the edit, the note, the line and the session change landed together.
    await h.router.groups.settle();
    const withLine = h.store.records('room').filter((r) => r.entries?.some((e) => e.decision?.type === 'react'));
    expect(withLine).toHaveLength(1);
    const rec = withLine[0]!;
    expect(rec.entries!.map((e) => (e.reactionOf ? 'note' : e.kind))).toEqual(['note', 'decision']);
    expect(rec.edits).toMatchObject([{ seq: trigger.seq, reactions: [{ emoji: '🎉', byKey: 'agent:analyst' }], notes: [note.seq] }]);
    expect(rec.changes?.some((c) => c.t === 'session' && c.agentId === 'analyst')).toBe(true);
  });

  it('the reacting agent does not observe its own reaction; the others do', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: ['[REACT 🎉]', 'noted'] } } });
    await h.say('we shipped the release');
    await h.say('@analyst @writer what now?');
    expect(userTurns(h, 'analyst').join('\n')).not.toContain('reacted 🎉');
    expect(userTurns(h, 'writer').join('\n')).toContain("Analyst reacted 🎉 to Maya's message");
    expect(userTurns(h, 'critic').join('\n')).toContain("Analyst reacted 🎉 to Maya's message");
  });

  it('is not a message: it leaves room for the voluntary replies and starts no cooldown', async () => {
    const h = await makeRouter({ group: { max_voluntary_responders: 1, cooldown_seconds: 60 }, llm: { replies: { analyst: '[REACT 👍]', writer: 'I have a view on this' } } });
    await h.say('the launch moved to Friday');
    expect(h.speakers()).toEqual(['writer']);
    expect(humanMessage(h, 'the launch moved to Friday').reactions?.map((r) => r.byKey)).toEqual(['agent:analyst']);
    expect(h.router.groups.get('room')!.state.lastSpoke['analyst']).toBeUndefined();
  });

  it('text next to the token is the reply, posted without it', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: 'Great news, well done team! [REACT 🎉]' } } });
    await h.say('we shipped the release');
    expect(h.channel.texts('analyst')).toEqual(['Great news, well done team!']);
    expect(h.channel.reactions).toEqual([]);
    expect(humanMessage(h, 'we shipped the release').reactions).toBeUndefined();
  });

  it('a message that takes no more reactions makes the turn a pass', async () => {
    const emoji = ['😀', '😁', '😂', '🤣', '😃', '😄', '😅', '😆', '😉', '😊', '😋', '😎', '😍', '😘', '🥰', '😗', '😙', '🥲', '😚', '🙂'];
    // While Analyst thinks, people fill the message with as many different emoji as it takes.
    const analyst = async () => {
      const id = humanMessage(h, 'we shipped the release').id;
      for (const [i, e] of emoji.entries()) await h.router.gateway.react('room', id, { emoji: e, by: { key: `web:p${i}`, name: `P${i}` }, on: true });
      return '[REACT 🎉]';
    };
    const h: Harness = await makeRouter({ limits: { user_messages_per_minute: 1000, max_message_chars: 8000, reactions_per_minute: 1000 }, llm: { replies: { analyst } } });
    await h.say('we shipped the release');
    expect(humanMessage(h, 'we shipped the release').reactions).toHaveLength(20);
    expect(h.transcript().filter((e) => e.decision?.agentId === 'analyst').map((e) => e.decision!.type)).toEqual(['pass']);
    expect(history(h, 'analyst').at(-1)).toEqual({ role: 'assistant', content: '[PASS]' });
    expect(h.channel.reactions).toEqual([]);
  });

  it('where the channel cannot show it: recorded all the same, the web page shows it, a debug line says so', async () => {
    const logger = new CapturingLogger();
    const h = await makeRouter({ logger, llm: { replies: { analyst: '[REACT 🎉]' } } });
    (h.channel as Channel).react = async () => false;
    await h.say('we shipped the release');
    expect(humanMessage(h, 'we shipped the release').reactions).toHaveLength(1);
    const line = logger.lines.find((l) => l.level === 'debug' && l.msg?.includes('not shown natively'));
    expect(line?.obj).toMatchObject({ group: 'room', agent: 'analyst', emoji: '🎉' });
    // The page's view of the message carries it.
    const page = await h.router.gateway.messages('room', { limit: 50 });
    expect(page.find((e) => e.text === 'we shipped the release')?.reactions).toMatchObject([{ emoji: '🎉', byKey: 'agent:analyst' }]);
  });
});

describe('an addressed turn cannot react', () => {
  it('answering only [REACT 👍] posts the emoji as its reply, never the token, and reacts to nothing', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: '［REACT 👍］' } } });
    await h.say('@analyst can you take this one?');
    const call = h.llm.callsFor('analyst')[0]!;
    expect(call.mayReact).toBe(false);
    expect(call.messages.at(-1)!.content).toMatch(/\[PASS\] and \[REACT <emoji>\] are not available for this turn\.$/);
    expect(h.channel.posts.map((p) => ({ agentId: p.agentId, text: p.text }))).toEqual([{ agentId: 'analyst', text: '👍' }]);
    expect(h.channel.reactions).toEqual([]);
    expect(humanMessage(h, '@analyst can you take this one?').reactions).toBeUndefined();
    expect(history(h, 'analyst').at(-1)).toEqual({ role: 'assistant', content: '👍' });
  });
});

describe('after a restart', () => {
  it('the reaction, its note and the agent\'s memory of it are read back; "what did it see" rebuilds the turn exactly', async () => {
    const store = new MemoryStore();
    const h = await makeRouter({ store, llm: { replies: { analyst: ['[REACT 🎉]', 'on it'] } } });
    await h.say('we shipped the release');
    await h.say('@analyst next steps?');
    const before = humanMessage(h, 'we shipped the release');
    await h.router.stop();

    const again = await makeRouter({ store });
    const entries = await again.fullTranscript();
    const trigger = entries.find((e) => e.id === before.id)!;
    expect(trigger.reactions).toEqual(before.reactions);
    expect(trigger.reactions).toMatchObject([{ emoji: '🎉', by: 'Analyst', byKey: 'agent:analyst' }]);
    expect(entries.find((e) => e.reactionOf)).toMatchObject({ agentId: 'analyst', reactionOf: { id: before.id, emoji: '🎉' } });
    expect(entries.find((e) => e.decision?.type === 'react')).toMatchObject({ text: 'Analyst reacted 🎉', decision: { emoji: '🎉' } });
    expect(history(again, 'analyst').map((m) => m.content)).toContain('[REACT 🎉]');
    // The later reply's history holds the reaction turn, rebuilt from the line.
    const reply = entries.find((e) => e.kind === 'agent' && e.agentId === 'analyst')!;
    const ctx = await again.router.gateway.promptContext('room', reply.id);
    expect(ctx.history.map((m) => m.content)).toContain('[REACT 🎉]');
    expect(ctx.exact).toEqual({ system: true, summary: true, history: true, observations: true });
    await again.router.stop();
  });
});
