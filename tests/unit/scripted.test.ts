/** The offline demo provider: deterministic, persona-flavoured, passes unless touched, sometimes reacts. */
import { describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../src/llm/ScriptedProvider.js';
import type { AgentDef } from '../../src/core/types.js';

const analyst: AgentDef = { id: 'analyst', name: 'Analyst', persona: 'You are Analyst, a sharp, numbers-first analyst. You answer with figures.', model: null, avatar: null, color: null, aliases: ['numbers'], talkativeness: 0.5 };
const turn = (text: string) => `## Group conversation since your last turn\n<message from="Maya" role="human">${text}</message>\n\n## Your turn\n...`;

describe('ScriptedProvider', () => {
  const p = new ScriptedProvider();
  const ask = (text: string, mustReply: boolean) => p.complete({ purpose: 'turn', model: 'm', system: '', messages: [{ role: 'user', content: turn(text) }], agent: analyst, mustReply });

  it('addressed: answers in the persona’s voice, quoting the question without the handle', async () => {
    const r = await ask('@analyst what about revenue?', true);
    expect(r.text).toContain('a sharp, numbers-first analyst');
    expect(r.text).toContain('what about revenue?');
    expect(r.text).not.toContain('@');
    expect((await ask('@analyst what about revenue?', true)).text).toBe(r.text);
  });

  it('voluntary: passes unless the message touches its handles or aliases', async () => {
    expect((await ask('lovely weather', false)).text).toBe('[PASS]');
    expect((await ask('any numbers on this?', false)).text).not.toBe('[PASS]');
  });

  it('voluntary: a greeting or a question to the room is answered by the first member (by handle) only', async () => {
    const writer: AgentDef = { ...analyst, id: 'writer', name: 'Writer', persona: 'You are Writer, a careful writer.', aliases: [] };
    const group = (others: AgentDef[]) => ['persona', '', '## Group chat: Lobby', 'Other participants:', ...others.map((o) => `- ${o.name} (@${o.id}): ${o.persona}`)].join('\n');
    const volunteer = (agent: AgentDef, others: AgentDef[], text: string) =>
      p.complete({ purpose: 'turn', model: 'm', system: group(others), messages: [{ role: 'user', content: turn(text) }], agent, mustReply: false }).then((r) => r.text);
    for (const text of ['hello everyone', 'Hi all!', 'what should we build next?']) {
      expect(await volunteer(analyst, [writer], text)).not.toBe('[PASS]');
      expect(await volunteer(writer, [analyst], text)).toBe('[PASS]');
    }
    // Statements still pass, and the answer is the same every time (deterministic demo).
    expect(await volunteer(analyst, [writer], 'lovely weather')).toBe('[PASS]');
    expect(await volunteer(analyst, [writer], 'hello everyone')).toBe(await volunteer(analyst, [writer], 'hello everyone'));
    // "this" or "high" are not greetings.
    expect(await volunteer(analyst, [writer], 'this is high time')).toBe('[PASS]');
  });

  it('voluntary: where reacting is offered, about half of the agents that would pass react to news or thanks with a fitting emoji, the same way every time', async () => {
    // Aaron comes first by handle: he, not Analyst, answers questions to the room.
    const system = 'persona\n\n## Group chat: Lobby\nOther participants:\n- Aaron (@aaron): You are Aaron.';
    const offer = (q: ScriptedProvider, text: string, mayReact: boolean) => q.complete({ purpose: 'turn', model: 'm', system, messages: [{ role: 'user', content: turn(text) }], agent: analyst, mustReply: false, mayReact }).then((r) => r.text);
    const all = (q: ScriptedProvider, make: (i: number) => string, mayReact = true) => Promise.all(Array.from({ length: 30 }, (_, i) => offer(q, make(i), mayReact)));
    const news = (i: number) => `we shipped build ${i}`;
    const answers = await all(p, news);
    const reactions = answers.filter((a) => a.startsWith('[REACT '));
    expect(reactions.length).toBeGreaterThan(5);
    expect(reactions.length).toBeLessThan(25);
    expect(answers.filter((a) => !a.startsWith('[REACT ')).every((a) => a === '[PASS]')).toBe(true);
    for (const r of reactions) expect(r).toMatch(/^\[REACT (🎉|👍|🔥|👏)\]$/u);
    expect(await all(p, news)).toEqual(answers);
    // Thanks get 🙏; plain statements and questions get no reaction; not offered, nothing reacts.
    const thanks = await all(p, (i) => `thanks for the notes on plan ${i}`);
    expect(new Set(thanks.filter((a) => a !== '[PASS]'))).toEqual(new Set(['[REACT 🙏]']));
    expect(new Set(await all(p, (i) => `the launch plan, take ${i}`))).toEqual(new Set(['[PASS]']));
    expect(new Set(await all(p, (i) => `is build ${i} done?`))).toEqual(new Set(['[PASS]']));
    expect(new Set(await all(p, news, false))).toEqual(new Set(['[PASS]']));
    // With reacting turned off (the noisy-room comparison) those turns acknowledge in a message.
    const spoken = await all(new ScriptedProvider({ reactions: false }), news);
    expect(spoken.filter((a) => a !== '[PASS]')).toHaveLength(reactions.length);
    for (const a of spoken.filter((x) => x !== '[PASS]')) expect(a).toMatch(/^Noted .+ \(Analyst, canned demo reply\)$/u);
    // Addressed turns never react.
    expect((await ask('we shipped build 1', true)).text).not.toContain('[REACT');
  });

  it('streams the reply word by word', async () => {
    const parts: string[] = [];
    const r = await p.complete({ purpose: 'turn', model: 'm', system: '', messages: [{ role: 'user', content: turn('hi') }], agent: analyst, mustReply: true, onDelta: (t) => parts.push(t) });
    expect(parts.length).toBeGreaterThan(3);
    expect(parts.join('')).toBe(r.text);
  });
});
