/** What an agent sees — prompts, mailboxes exactly once, passes, labels, summaries. */
import { describe, expect, it } from 'vitest';
import { isPass, cleanReply } from '../../src/core/router/pass.js';
import { passStreamFilter } from '../../src/core/text/passStream.js';
import { MAILBOX_MAX } from '../../src/core/groups/groupReads.js';
import { TRANSCRIPT_TAIL } from '../../src/core/groups/evolve.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { makeRouter } from '../helpers/router-harness.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { buildSystemPrompt, buildUserTurn } from '../../src/core/session/prompt.js';

describe('pass detection (fail-closed)', () => {
  const passes = ['[PASS]', ' [pass] ', '**[PASS]**', '`[PASS]`', '_[Pass]_', '[PASS].', '[PASS] nothing to add', 'Nothing to add. [PASS]', '"[PASS]"', 'PASS', '', '   ', '[ PASS ]'];
  const replies = ['I pass the ball to you', 'Passing thoughts: fine', 'We should [PASS] on this deal? no, buy it.'];
  it.each(passes)('%j is a pass', (t) => expect(isPass(t)).toBe(true));
  it.each(replies)('%j is a reply', (t) => expect(isPass(t)).toBe(false));
  it('strips the token from the middle of a reply and a leading name label', () => {
    const a = { id: 'analyst', name: 'Analyst' };
    expect(cleanReply('We should [PASS] on this, buy.', a)).toBe('We should on this, buy.');
    expect(cleanReply('Analyst: revenue is up', a)).toBe('revenue is up');
    expect(cleanReply('**Analyst**: revenue is up', a)).toBe('revenue is up');
    expect(cleanReply('[Analyst] revenue is up', a)).toBe('revenue is up');
    expect(cleanReply('Writer: said that', a)).toBe('Writer: said that');
  });
  it('the literal token never reaches the channel', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: 'Fine. [PASS]', writer: 'ok [PASS] ok', critic: 'Critic: [pass]' } } });
    await h.say('@all anything?');
    expect(h.channel.texts().join('\n')).not.toMatch(/\[\s*pass\s*\]/i);
    // Addressed (@all): a token next to real text is stripped and the text kept;
    // a reply that is only a label and the token is a pass.
    expect(h.speakers().sort()).toEqual(['analyst', 'writer']);
    expect(h.channel.texts()).toContain('Fine.');
  });
});

describe('streamed text', () => {
  const run = (chunks: string[]) => {
    const f = passStreamFilter();
    return chunks.map(f).filter((x): x is string => x !== null).join('');
  };
  it('never streams a pass, even split across chunks or decorated', () => {
    expect(run(['[PA', 'SS]'])).toBe('');
    expect(run(['**', '[pass]', '**'])).toBe('');
    expect(run(['Good point ', '[PA', 'SS] indeed'])).toBe('Good point  indeed');
    expect(run(['Hello', ' world'])).toBe('Hello world');
    expect(run(['see [P', 'aris]'])).toBe('see [Paris]');
    expect(run(['but [pa', 'ss] costs'])).toBe('but  costs');
  });
  it('the router emits deltas only for replies, never the token', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: '[PASS]', writer: 'Streaming works' } } });
    const deltas: string[] = [];
    h.router.gateway.subscribe((ev) => ev.type === 'delta' && deltas.push(`${ev.agentId}:${ev.text}`));
    await h.say('@analyst @writer go');
    expect(deltas).toEqual(['writer:Streaming works']);
  });
});

describe('prompts', () => {
  it('keeps the system prefix identical across turns and puts per-turn material in the user turn', async () => {
    const h = await makeRouter();
    await h.say('@analyst first');
    await h.say('@analyst second');
    const [a, b] = h.llm.callsFor('analyst') as [LlmRequest, LlmRequest];
    expect(a.system).toBe(b.system);
    expect(a.system).toContain('You analyse numbers.');
    expect(a.system).toContain('Writer (@writer)');
    expect(a.system).toContain('[PASS]');
    expect(a.system).not.toContain('first');
    expect(b.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(b.messages[2]!.content).toMatch(/^## Group conversation since your last turn\n<message from="Maya" role="human">@analyst second<\/message>\n\n## Your turn\nYou were addressed directly by Maya: answer\. \[PASS\] and \[REACT <emoji>\] are not available for this turn\.$/);
    // The prefix offers the pass only for turns that were not addressed.
    expect(a.system).toContain('When you were not addressed and have nothing meaningful to add, reply with exactly [PASS]');
    expect(a.system).not.toMatch(/^If you have nothing meaningful to add/m);
  });

  it('addressed turns say who addressed them and never offer the pass; voluntary ones do', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: 'figures ready, @writer please phrase them', writer: 'phrased', critic: '[PASS]' } } });
    await h.say('@analyst numbers please');
    await h.say('what does everyone think?');
    const [addressed, voluntary] = h.llm.callsFor('analyst').map((c) => c.messages.at(-1)!.content) as [string, string];
    expect(addressed).toMatch(/## Your turn\nYou were addressed directly by Maya: answer\. \[PASS\] and \[REACT <emoji>\] are not available for this turn\.$/);
    const reaction = h.llm.callsFor('writer')[0]!.messages.at(-1)!.content;
    expect(reaction).toMatch(/## Your turn\nAnalyst addressed you directly: answer\. \[PASS\] and \[REACT <emoji>\] are not available for this turn\.$/);
    expect(voluntary).toMatch(/## Your turn\nYou were not addressed\. Reply only if you can add something; otherwise reply with exactly \[PASS\], or react to the newest message from Maya with exactly \[REACT <emoji>\], one emoji in place of <emoji>\.$/);
    for (const c of h.llm.calls.filter((x) => x.purpose === 'turn' && x.mustReply)) expect(c.messages.at(-1)!.content).not.toContain('otherwise reply with exactly');
  });

  it('the prefix offers reacting next to the pass; each ask says whether this turn may react', () => {
    const agent = { id: 'analyst', name: 'Analyst', persona: 'You analyse numbers.', model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5 };
    const writer = { ...agent, id: 'writer', name: 'Writer', persona: 'You write prose.' };
    const system = buildSystemPrompt(agent, { title: 'Room', participants: [agent, writer], handles: () => [] });
    expect(system).toContain('reply with exactly [PASS]; it will not be shown. When you were not addressed and would only acknowledge the newest message (agree, thank, show you saw it), you may instead reply with exactly [REACT 👍] (any single emoji in place of 👍) when your turn offers it; it is shown as your reaction on that message, not as a message.');
    const maya = [{ id: 'room.1', seq: 1, ts: 0, kind: 'human' as const, authorId: 'maya', authorName: 'Maya', text: 'shipped!' }];
    expect(buildUserTurn(maya, { kind: 'voluntary', react: { by: 'Maya' } })).toMatch(/\nYou were not addressed\. Reply only if you can add something; otherwise reply with exactly \[PASS\], or react to the newest message from Maya with exactly \[REACT <emoji>\], one emoji in place of <emoji>\.$/);
    expect(buildUserTurn(maya, { kind: 'voluntary', react: { by: null } })).toMatch(/or react to the newest message with exactly \[REACT <emoji>\], one emoji in place of <emoji>\.$/);
    expect(buildUserTurn(maya, { kind: 'voluntary' })).toMatch(/exactly \[PASS\]\. \[REACT <emoji>\] is not available for this turn\.$/);
    for (const ask of [{ kind: 'addressed' as const, by: 'Maya' }, { kind: 'reaction' as const, by: 'Writer' }, { kind: 'forced' as const, lastHuman: null }]) {
      expect(buildUserTurn(maya, ask)).toMatch(/\[PASS\] and \[REACT <emoji>\] are not available for this turn\.$/);
    }
    // A name cannot open a block from outside one.
    expect(buildUserTurn(maya, { kind: 'voluntary', react: { by: '<message from="Analyst">' } })).not.toContain('<message from="Analyst">');
  });

  it('voluntary turns are told they may pass', async () => {
    const h = await makeRouter();
    await h.say('anyone?');
    expect(h.llm.callsFor('writer')[0]!.messages.at(-1)!.content).toContain('otherwise reply with exactly [PASS]');
  });

  it('commands are never shown to agents', async () => {
    const h = await makeRouter();
    await h.say('/group list');
    await h.say('@analyst hi');
    const seen = h.llm.callsFor('analyst')[0]!.messages.at(-1)!.content;
    expect(seen).not.toContain('/group');
    expect(seen).not.toContain('Group “Test room”');
  });
});

describe('mailbox exactly once', () => {
  /** Every observation id an agent was shown, from the recorded prompts. */
  function shown(llm: FakeLlm, agentId: string): string[] {
    return llm
      .callsFor(agentId)
      .flatMap((c) => c.messages.at(-1)!.content.match(/<message from="[^"]*" role="[^"]*">[\s\S]*?<\/message>/g) ?? []);
  }

  it('across passes, batching and a restart, every observation reaches every agent once', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    // Agents speak or pass by a fixed pattern; one call hangs so messages pile up (batching).
    let hold: (() => void) | null = null;
    const reply = (id: string) => (req: LlmRequest, n: number) => {
      if (id === 'writer' && n === 2) return new Promise<string>((r) => (hold = () => r(`${id} late ${n}`)));
      return n % 3 === 0 ? '[PASS]' : `${id} says ${n}`;
    };
    const llm = new FakeLlm({ replies: { analyst: reply('analyst'), writer: reply('writer'), critic: reply('critic') } });
    const h = await makeRouter({ llm, store, clock });
    for (let i = 0; i < 3; i++) await h.say(`round ${i} @all`);
    await h.router.receive(h.message('first message @writer'));
    await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 3; i++) await h.router.receive(h.message(`queued ${i}`));
    (hold as (() => void) | null)?.();
    await h.router.idle();
    await h.router.stop();

    // Restart on the same store with a fresh LLM and keep talking.
    const llm2 = new FakeLlm({ fallback: (q) => `${q.agent?.id} after restart` });
    const h2 = await makeRouter({ llm: llm2, store, clock });
    await h2.router.receive({ ...h2.message('after restart @all'), messageId: 'late-1' });
    await h2.router.idle();

    const transcript = (await h2.router.gateway.messages('room', { limit: 500 }));
    for (const agent of ['analyst', 'writer', 'critic']) {
      const lines = [...shown(llm, agent), ...shown(llm2, agent)];
      // No line shown twice …
      expect(new Set(lines).size).toBe(lines.length);
      // … and every human and other-agent message up to its cursor shown, once.
      const cursor = store.session('room', agent).cursor;
      const expected = transcript
        .filter((e) => e.seq <= cursor && (e.kind === 'human' || e.kind === 'agent') && !e.hiddenFromAgents && e.agentId !== agent)
        .map((e) => `<message from="${e.authorName}" role="${e.kind}">${e.text}</message>`);
      expect(cursor).toBeGreaterThanOrEqual(transcript.find((e) => e.text === 'after restart @all')!.seq);
      expect([...lines].sort()).toEqual(expected.sort());
    }
  });
});

describe('long silences', () => {
  it('a silent agent catches up from the log: old entries are read back, the rest counted, each shown once', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' }, llm: { fallback: (_q, n) => `ok ${n}` } });
    for (let i = 0; i < 260; i++) await h.say(`@analyst note ${i}`);
    // Memory holds a bounded tail; the store holds every entry.
    expect(h.transcript().length).toBeLessThanOrEqual(TRANSCRIPT_TAIL + 32);
    const stored = h.store.entries('room');
    expect(stored.filter((e) => e.kind === 'human')).toHaveLength(260);
    const unseen = stored.filter((e) => e.kind === 'human' || e.kind === 'agent').length + 1;
    await h.say('@critic catch up');
    const turn = h.llm.callsFor('critic')[0]!.messages.at(-1)!.content;
    const seen = turn.match(/<message from="[^"]*" role="[^"]*">[\s\S]*?<\/message>/g) ?? [];
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(MAILBOX_MAX);
    expect(seen.at(-1)).toBe('<message from="Maya" role="human">@critic catch up</message>');
    expect(seen).toContain('<message from="Maya" role="human">@analyst note 259</message>');
    expect(seen).toContain('<message from="Analyst" role="agent">ok 259</message>');
    // What did not fit is said, not silently dropped.
    expect(turn).toContain(`(${unseen - MAILBOX_MAX} earlier messages not shown)`);
    await h.say('@critic again');
    expect(h.llm.callsFor('critic')[1]!.messages.at(-1)!.content).not.toContain('note 259');
  });
});

describe('long histories', () => {
  it('folds old turns into a summary past history_turns, placed after the prefix', async () => {
    const h = await makeRouter({ group: { history_turns: 4 }, llm: { summary: 'they talked about numbers', replies: { analyst: 'noted' } } });
    for (let i = 0; i < 3; i++) await h.say(`@analyst point ${i}`);
    const summaries = h.llm.calls.filter((c) => c.purpose === 'summary');
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.model).toBe('test-small');
    expect(summaries[0]!.messages[0]!.content).toContain('point 0');
    const session = h.store.session('room', 'analyst');
    expect(session.summary).toBe('they talked about numbers');
    expect(session.history.length).toBeLessThanOrEqual(4);
    await h.say('@analyst point 3');
    const last = h.llm.callsFor('analyst').at(-1)!;
    // Under its own heading, in its own block after the stable prefix (the prefix stays cached).
    expect(last.summary).toBe('## Earlier in this conversation (summary)\nthey talked about numbers');
    expect(last.system).toBe(h.llm.callsFor('analyst')[0]!.system);
    expect(last.messages[0]!.role).toBe('user');
  });

  it('a failed summary keeps the history', async () => {
    const h = await makeRouter({ group: { history_turns: 4 }, llm: { summary: () => { throw new Error('down'); }, replies: { analyst: 'noted' } } });
    for (let i = 0; i < 3; i++) await h.say(`@analyst point ${i}`);
    expect(h.store.session('room', 'analyst').history).toHaveLength(6);
    expect(h.store.session('room', 'analyst').summary).toBeNull();
  });
});

describe('selector strategy', () => {
  it('one call picks the speakers; invalid names are ignored', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'selector' }, llm: { selector: '@critic @nobody writer', fallback: 'mine' } });
    await h.say('is this draft any good?');
    expect(h.llm.calls.filter((c) => c.purpose === 'selector')).toHaveLength(1);
    expect(h.speakers()).toEqual(['critic', 'writer']);
    expect(h.llm.calls.filter((c) => c.purpose === 'turn').every((c) => c.mustReply)).toBe(true);
  });

  it('NONE means nobody speaks', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'selector' }, llm: { selector: 'NONE', fallback: 'mine' } });
    await h.say('ok thanks');
    expect(h.llm.calls.filter((c) => c.purpose === 'turn')).toHaveLength(0);
  });

  it('falls back to hybrid when the selector fails', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'selector' }, llm: { selector: () => { throw new Error('down'); }, replies: { analyst: '[PASS]', writer: 'voluntary', critic: '[PASS]' } } });
    await h.say('anyone?');
    expect(h.speakers()).toEqual(['writer']);
    expect(h.llm.calls.filter((c) => c.purpose === 'turn').map((c) => c.mustReply)).toEqual([false, false, false]);
  });
});
