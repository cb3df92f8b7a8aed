/**
 * Rounds: a human's @mention is never swallowed by a voluntary turn, voluntary rounds
 * are fair (and can ask everyone at once), `/stop` ends a group's work, daily budgets, and `/ask`
 * recorded once. Fake LLM, fake clock, memory store (see tests/helpers).
 */
import { describe, expect, it } from 'vitest';
import { FakeLlm } from '../helpers/fake-llm.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { makeRouter } from '../helpers/router-harness.js';
import { talkWeight, voluntaryOrder } from '../../src/core/router/planning.js';
import { budgetLevel } from '../../src/core/router/budget.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';

const FOUR = `
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write prose." }
  - { id: critic, name: Critic, persona: "You critique ideas." }
  - { id: poet, name: Poet, persona: "You write poems." }
`;

/** A reply the test releases by hand; `started` resolves when the model was called. */
function gate() {
  let release!: (text: string) => void;
  let started!: () => void;
  const hasStarted = new Promise<void>((r) => (started = r));
  const reply = new Promise<string>((r) => (release = r));
  return {
    fn: (_req: LlmRequest) => {
      started();
      return reply;
    },
    started: hasStarted,
    release,
  };
}

/** Let the router's promise chains run (real timers are not involved). */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

describe('a human @mention is never swallowed', () => {
  it('a mention shown in a voluntary prompt that the agent passed on still gets its addressed turn', async () => {
    // The analyst's voluntary turn hangs; meanwhile "@critic …" is recorded. The critic's voluntary
    // turn in the same round then shows that mention under "otherwise reply [PASS]", and it passes.
    const hold = gate();
    const h = await makeRouter({
      group: { max_voluntary_responders: 3 },
      llm: { replies: { analyst: [hold.fn], writer: '[PASS]' }, fallback: (q) => (q.mustReply ? `addressed ${q.agent?.id}` : '[PASS]') },
    });
    await h.router.receive(h.message('anyone around?'));
    await hold.started;
    await h.router.receive(h.message('@critic what do you think?'));
    hold.release('[PASS]');
    await h.router.idle();

    const critic = h.llm.callsFor('critic');
    expect(critic[0]!.mustReply).toBe(false);
    expect(critic[0]!.messages.at(-1)!.content).toContain('@critic what do you think?');
    // The pass did not answer the mention: an addressed turn follows.
    expect(critic).toHaveLength(2);
    expect(critic[1]!.mustReply).toBe(true);
    expect(h.channel.posts.map((p) => p.text)).toEqual(['addressed critic']);
    expect(h.transcript().some((e) => e.decision?.type === 'batch')).toBe(false);
  });

  it('a mention that arrives during the agent’s own voluntary call is answered after it passes', async () => {
    const hold = gate();
    const h = await makeRouter({
      group: { max_voluntary_responders: 3 },
      llm: { replies: { writer: [hold.fn, 'writer answers'] } },
    });
    await h.router.receive(h.message('thoughts?'));
    await hold.started; // analyst passed, writer is thinking
    await h.router.receive(h.message('@writer you specifically'));
    hold.release('[PASS]');
    await h.router.idle();
    expect(h.llm.callsFor('writer')).toHaveLength(2);
    expect(h.channel.posts.map((p) => p.text)).toEqual(['writer answers']);
  });

  it('a voluntary reply that had seen the mention answers it: no second turn', async () => {
    const hold = gate();
    const h = await makeRouter({
      group: { max_voluntary_responders: 3 },
      llm: { replies: { analyst: [hold.fn], critic: ['I saw both messages', 'duplicate!'] } },
    });
    await h.router.receive(h.message('anyone around?'));
    await hold.started;
    await h.router.receive(h.message('@critic what do you think?'));
    hold.release('[PASS]');
    await h.router.idle();
    expect(h.llm.callsFor('critic')).toHaveLength(1);
    expect(h.channel.posts.map((p) => p.text)).toEqual(['I saw both messages']);
    expect(h.transcript().filter((e) => e.decision?.type === 'batch').map((e) => e.decision!.agentId)).toEqual(['critic']);
  });

  it('a failed voluntary turn does not answer the mention either', async () => {
    const hold = gate();
    const h = await makeRouter({
      group: { max_voluntary_responders: 3 },
      llm: {
        replies: {
          analyst: [hold.fn],
          critic: [
            () => {
              throw new Error('boom');
            },
            'critic after all',
          ],
        },
      },
    });
    await h.router.receive(h.message('anyone?'));
    await hold.started;
    await h.router.receive(h.message('@critic and you?'));
    hold.release('[PASS]');
    await h.router.idle();
    expect(h.channel.posts.map((p) => p.text)).toContain('critic after all');
  });
});

describe('fair voluntary order', () => {
  it('with max_voluntary_responders 1 and nobody passing, every agent gets to speak', async () => {
    const h = await makeRouter({ yaml: FOUR, participants: ['analyst', 'writer', 'critic', 'poet'], group: { max_voluntary_responders: 1 }, llm: { fallback: (q) => `${q.agent?.id} speaks` } });
    for (let i = 0; i < 8; i++) await h.say(`open question ${i}`);
    const speakers = h.speakers();
    expect(speakers).toHaveLength(8);
    for (const a of ['analyst', 'writer', 'critic', 'poet']) expect(speakers.filter((s) => s === a)).toHaveLength(2);
    // Longest wait first: a rotation, not the first participant every time.
    expect(speakers.slice(0, 4)).toEqual(['analyst', 'writer', 'critic', 'poet']);
  });

  it('the order is derived from stored state: a restart continues the rotation', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const h = await makeRouter({ store, clock, group: { max_voluntary_responders: 1 }, llm: { fallback: (q) => `${q.agent?.id} speaks` } });
    await h.say('one');
    await h.say('two');
    await h.router.stop();
    const h2 = await makeRouter({ store, clock, group: { max_voluntary_responders: 1 }, llm: { fallback: (q) => `${q.agent?.id} speaks` } });
    await h2.router.receive({ ...h2.message('three'), messageId: 'after-restart' });
    await h2.router.idle();
    expect([...h.speakers(), ...h2.speakers()]).toEqual(['analyst', 'writer', 'critic']);
  });

  it('talkativeness weighs the wait; a quiet agent is later but never starved', () => {
    const talk = (id: string) => ({ chatty: 1, quiet: 0 })[id] ?? 0.5;
    // Nobody spoke yet: the more talkative first.
    expect(voluntaryOrder(['quiet', 'mid', 'chatty'], 10, {}, talk)).toEqual(['chatty', 'mid', 'quiet']);
    // Same wait: the talkative one first.
    expect(voluntaryOrder(['quiet', 'chatty'], 20, { quiet: 10, chatty: 10 }, talk)).toEqual(['chatty', 'quiet']);
    // The quiet one waited long enough (more than 7× as long): it comes first.
    expect(voluntaryOrder(['quiet', 'chatty'], 100, { quiet: 0, chatty: 90 }, talk)).toEqual(['quiet', 'chatty']);
    // Deterministic: the same state gives the same order; ties keep participant order.
    expect(voluntaryOrder(['b', 'a', 'c'], 50, { a: 40, b: 40, c: 40 }, () => 0.5)).toEqual(['b', 'a', 'c']);
    expect(talkWeight(0.5)).toBe(1);
  });
});

describe('voluntary_execution: parallel', () => {
  it('asks every candidate at once and delivers the first replies in candidate order, up to the cap', async () => {
    const holds = { analyst: gate(), writer: gate(), critic: gate(), poet: gate() };
    const h = await makeRouter({
      yaml: FOUR,
      participants: ['analyst', 'writer', 'critic', 'poet'],
      group: { voluntary_execution: 'parallel', max_voluntary_responders: 2 },
      llm: { replies: { analyst: [holds.analyst.fn], writer: [holds.writer.fn], critic: [holds.critic.fn], poet: [holds.poet.fn] } },
    });
    await h.router.receive(h.message('what now?'));
    await Promise.all(Object.values(holds).map((x) => x.started));
    expect(h.llm.calls.filter((c) => c.purpose === 'turn')).toHaveLength(4); // all at once
    // Later candidates answer first; their replies must wait for the earlier ones.
    holds.poet.release('first to finish (poet)');
    holds.critic.release('second (critic)');
    await settle();
    expect(h.channel.posts).toHaveLength(0);
    holds.analyst.release('[PASS]');
    holds.writer.release('an answer (writer)');
    await h.router.idle();
    // analyst passed; writer and critic fill the two places; poet's reply is discarded quietly.
    expect(h.channel.posts.map((p) => p.text)).toEqual(['an answer (writer)', 'second (critic)']);
    const discarded = h.transcript().filter((e) => e.decision?.type === 'discarded');
    expect(discarded.map((e) => e.decision!.agentId)).toEqual(['poet']);
    expect(h.transcript().some((e) => e.text.includes('first to finish'))).toBe(false);
    // The discarded agent's mailbox is kept: it is shown the question again next time.
    await h.say('@poet and you?');
    expect(h.llm.callsFor('poet')[1]!.messages.at(-1)!.content).toContain('what now?');
  });

  it('cancels the calls still running once enough replies are in', async () => {
    const slow = { critic: gate(), poet: gate() };
    const h = await makeRouter({
      yaml: FOUR,
      participants: ['analyst', 'writer', 'critic', 'poet'],
      group: { voluntary_execution: 'parallel', max_voluntary_responders: 2 },
      llm: { replies: { analyst: 'analyst here', writer: 'writer here', critic: [slow.critic.fn], poet: [slow.poet.fn] } },
    });
    await h.router.receive(h.message('quick one'));
    await h.router.idle(); // finishes without the slow ones ever answering
    expect(h.channel.posts.map((p) => p.text)).toEqual(['analyst here', 'writer here']);
    for (const id of ['critic', 'poet']) expect(h.llm.callsFor(id)[0]!.signal?.aborted).toBe(true);
    for (const id of ['analyst', 'writer']) expect(h.llm.callsFor(id)[0]!.signal?.aborted).toBe(false);
    const note = h.transcript().find((e) => e.decision?.type === 'discarded');
    expect(note?.text).toBe('not needed: Critic, Poet (enough replies)');
    expect(h.transcript().some((e) => e.decision?.type === 'error')).toBe(false);
  });

  it('a reply that @mentions a later candidate turns that one\'s voluntary turn into a reaction', async () => {
    const h = await makeRouter({
      yaml: FOUR,
      participants: ['analyst', 'writer', 'critic', 'poet'],
      group: { voluntary_execution: 'parallel', max_voluntary_responders: 2, max_agent_turns_per_message: 3 },
      llm: { replies: { analyst: 'over to @poet on this', poet: ['a voluntary verse', 'a verse in reaction'] }, fallback: () => '[PASS]' },
    });
    await h.say('inspire us');
    // poet's parallel voluntary reply is discarded (its turn became a reaction), then it reacts.
    expect(h.channel.posts.map((p) => p.text)).toEqual(['over to @poet on this', 'a verse in reaction']);
    expect(h.llm.callsFor('poet')[1]!.mustReply).toBe(true);
    expect(h.transcript().filter((e) => e.decision?.type === 'discarded').map((e) => e.decision!.agentId)).toEqual(['poet']);
  });

  it('respects the turn cap and records each outcome once across a restart', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const h = await makeRouter({ store, clock, group: { voluntary_execution: 'parallel', max_voluntary_responders: 3, max_agent_turns_per_message: 1 }, llm: { fallback: (q) => `${q.agent?.id} replies` } });
    await h.say('hello all');
    expect(h.speakers()).toEqual(['analyst']);
    await h.router.stop();
    const h2 = await makeRouter({ store, clock, llm: { fallback: () => 'should not run' } });
    await h2.router.idle();
    expect(h2.llm.calls).toHaveLength(0);
    expect(h2.router.groups.get('room')!.rounds).toHaveLength(0);
  });
});

describe('/stop', () => {
  it('ends the running round, cancels its call, drops queued rounds, keeps the messages; a restart does not resume', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const hold = gate();
    const h = await makeRouter({ store, clock, group: { max_voluntary_responders: 3 }, llm: { replies: { analyst: [hold.fn, 'analyst is back'] }, fallback: (q) => `${q.agent?.id} answers` } });
    await h.router.receive(h.message('long question'));
    await hold.started;
    await h.router.receive(h.message('@writer and then this'));
    expect(h.router.groups.get('room')!.rounds).toHaveLength(2);
    await h.say('/stop');
    await h.router.idle();

    expect(h.llm.callsFor('analyst')[0]!.signal?.aborted).toBe(true);
    expect(h.llm.calls.filter((c) => c.purpose === 'turn')).toHaveLength(1); // writer never asked
    expect(h.channel.posts.filter((p) => p.agentId)).toHaveLength(0);
    const notice = h.transcript().find((e) => e.decision?.type === 'stopped');
    expect(notice?.text).toMatch(/^⏹ Stopped by Maya: 2 rounds were ended/);
    expect(h.transcript().some((e) => e.decision?.type === 'error')).toBe(false); // a stop is not a failure
    expect(h.router.groups.get('room')!.rounds).toHaveLength(0);
    const humans = (await h.fullTranscript()).filter((e) => e.kind === 'human').map((e) => e.text);
    expect(humans).toEqual(['long question', '@writer and then this', '/stop']);
    hold.release('too late'); // the model answering after the stop changes nothing
    await settle();
    expect(h.channel.posts.filter((p) => p.agentId)).toHaveLength(0);
    await h.router.stop();

    // Restart: nothing resumes.
    const llm2 = new FakeLlm({ fallback: (q) => `${q.agent?.id} after restart` });
    const h2 = await makeRouter({ store, clock, llm: llm2 });
    await h2.router.idle();
    expect(llm2.calls).toHaveLength(0);
    // A later message starts afresh (and the stopped messages are still in the agents' mailboxes).
    await h2.router.receive({ ...h2.message('@analyst are you there?'), messageId: 'later' });
    await h2.router.idle();
    expect(h2.speakers()).toEqual(['analyst']);
    const prompt = llm2.callsFor('analyst')[0]!.messages.at(-1)!.content;
    expect(prompt).toContain('long question');
    expect(prompt).toContain('@writer and then this');
  });

  it('works from the API (stopGroup) and when nothing runs; anyone may use it', async () => {
    const h = await makeRouter();
    const res = await h.router.stopGroup('room', 'Sam');
    expect(res).toEqual({ stopped: true, roundsDropped: 0, turnsDropped: 0 });
    expect(h.transcript().at(-1)!.text).toBe('⏹ Stopped by Sam: nothing was running. Messages stay recorded; the next message starts afresh.');
    await expect(h.router.stopGroup('nope', 'Sam')).rejects.toThrow(/unknown group/);
    // The next message is answered normally.
    await h.say('@critic hi');
    expect(h.speakers()).toEqual(['critic']);
  });

  it('a mention waiting out a cooldown is dropped by /stop too', async () => {
    const h = await makeRouter({ group: { cooldown_seconds: 30 } });
    await h.say('@analyst one');
    await h.router.receive(h.message('@analyst two'));
    await settle();
    expect(h.clock.waiting).toBe(1);
    await h.say('/stop');
    await h.router.idle();
    expect(h.clock.waiting).toBe(0);
    expect(h.llm.callsFor('analyst')).toHaveLength(1);
  });
});

describe('daily group budget', () => {
  // The fake LLM counts 10 input tokens plus a quarter of the reply's length: "ok from analyst" = 14.
  it('warns once at 80%, refuses at 100% with one notice a day, keeps recording, survives a restart', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
    const opts = { store, clock, group: { budget: { daily_usd: null, daily_tokens: 100 } } };
    const h = await makeRouter(opts);
    for (let i = 0; i < 5; i++) await h.say(`@analyst q${i}`); // 70 tokens
    expect(h.transcript().filter((e) => e.decision?.type === 'budget')).toHaveLength(0);
    await h.say('@analyst q5'); // 84: warning
    const budget = () => h.transcript().filter((e) => e.decision?.type === 'budget').map((e) => e.text);
    expect(budget()).toEqual([expect.stringMatching(/^⚠ This group has used 84% of its daily budget \(84 of 100 tokens\)/)]);
    await h.say('@analyst q6'); // 98: no second warning
    await h.say('@analyst q7'); // 112: over (the call under way finishes)
    expect(budget()).toHaveLength(1);
    await h.say('@analyst q8'); // refused, with a notice
    await h.say('@analyst q9'); // refused silently
    expect(budget()).toHaveLength(2);
    expect(budget()[1]).toMatch(/^⛔ This group's daily budget is used up \(112 of 100 tokens\)/);
    expect(h.llm.callsFor('analyst')).toHaveLength(8);
    expect(h.transcript().filter((e) => e.kind === 'human').map((e) => e.text).slice(-2)).toEqual(['@analyst q8', '@analyst q9']);
    await h.say('/group usage');
    expect(h.transcript().at(-1)!.text).toContain('Daily budget: 112 of 100 tokens (used up');
    await h.router.stop();

    // After a restart the day's usage is still there: still refused, no repeated notice.
    const h2 = await makeRouter(opts);
    await h2.router.receive({ ...h2.message('@analyst after restart'), messageId: 'r1' });
    await h2.router.idle();
    expect(h2.llm.calls).toHaveLength(0);
    expect(h2.transcript().filter((e) => e.decision?.type === 'budget')).toHaveLength(2);
    // A new UTC day starts from zero.
    await clock.advance(12 * 3600_000);
    await h2.router.receive({ ...h2.message('@analyst new day'), messageId: 'r2' });
    await h2.router.idle();
    expect(h2.speakers()).toEqual(['analyst']);
  });

  it('dollar limits count known costs; /group config budget.daily_usd keeps the other field', async () => {
    const h = await makeRouter({ group: { budget: { daily_usd: null, daily_tokens: 5000 } } });
    await h.say('/group config budget.daily_usd 2.5');
    const g = h.router.groups.get('room')!;
    expect(g.config.budget).toEqual({ daily_usd: 2.5, daily_tokens: 5000 });
    expect(h.transcript().at(-1)!.text).toBe('budget.daily_usd = 2.5');
    g.state.today = { day: '2026-01-01', tokens: 10, costUsd: 2.1, costUnknown: false, warned: false, refused: false };
    const level = budgetLevel(g, Date.UTC(2026, 0, 1, 8));
    expect(level.warn && !level.over).toBe(true);
    expect(level.parts).toEqual(['$2.10 of $2.50', '10 of 5k tokens']);
    await h.say('/group config budget.daily_usd -1');
    expect(h.transcript().at(-1)!.text).toMatch(/^⚠ budget\.daily_usd: /);
  });
});

describe('/ask records its question once', () => {
  it('the chat and the agents see the question once; the command line is not a second entry', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' } });
    await h.say('/ask writer how much is it?');
    const humans = h.transcript().filter((e) => e.kind === 'human');
    expect(humans.map((e) => e.text)).toEqual(['how much is it?']);
    expect(humans[0]!.hiddenFromAgents).toBeFalsy();
    expect(h.speakers()).toEqual(['writer']);
    const prompt = h.llm.callsFor('writer')[0]!.messages.at(-1)!.content;
    expect(prompt.match(/how much is it\?/g)).toHaveLength(1);
    // A redelivery of the same platform message is still a duplicate.
    const again = await h.router.receive({ ...h.message('/ask writer how much is it?'), messageId: 'm1' });
    expect(again.status).toBe('duplicate');
    // Mistakes still record the command line (hidden) and answer it.
    await h.say('/ask nobody here');
    expect(h.transcript().filter((e) => e.kind === 'human').at(-1)!.text).toBe('/ask nobody here');
  });
});

describe('config keys for voluntary rounds, budgets and talkativeness', () => {
  const base = 'agents:\n  - { id: a, name: A, persona: p }\n';
  function problems(yaml: string): string[] {
    try {
      parseConfigText(base + yaml, 'test', {});
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
      throw err;
    }
  }

  it('validates voluntary_execution, budget and talkativeness, naming the key', () => {
    expect(problems('group_defaults: { voluntary_execution: parallel, budget: { daily_usd: 5, daily_tokens: 1000000 } }')).toEqual([]);
    const bad = problems('group_defaults: { voluntary_execution: sometimes, budget: { daily_usd: -1, daily_tokens: 1.5, weekly: 3 } }');
    expect(bad.some((p) => p.startsWith('group_defaults.voluntary_execution:'))).toBe(true);
    expect(bad.some((p) => p.startsWith('group_defaults.budget.daily_usd:'))).toBe(true);
    expect(bad.some((p) => p.startsWith('group_defaults.budget.daily_tokens:'))).toBe(true);
    expect(bad.some((p) => p.startsWith('group_defaults.budget.weekly:'))).toBe(true);
    const { config } = parseConfigText(base, 'test', {});
    expect(config.group_defaults.voluntary_execution).toBe('sequential');
    expect(config.group_defaults.budget).toEqual({ daily_usd: null, daily_tokens: null });
    expect(config.agents[0]!.talkativeness).toBe(0.5);
    const patch = validateGroupConfig({ voluntary_execution: 'both' });
    expect(patch.ok).toBe(false);
  });
});

describe('commands answered once when the web page retries them', () => {
  it('a retried web /ask without text and a retried /stop are each carried out once', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' } });
    await h.say('what do you think?');
    const ask = h.message('/ask analyst', { ephemeral: true, messageId: 'ask-1' });
    await h.router.receive(ask);
    await h.router.idle();
    const again = await h.router.receive({ ...ask });
    await h.router.idle();
    expect(again.status).toBe('duplicate');
    expect(h.speakers()).toEqual(['analyst']);

    const stop = h.message('/stop', { ephemeral: true, messageId: 'stop-1' });
    await h.router.receive(stop);
    await h.router.receive({ ...stop });
    await h.router.idle();
    expect(h.transcript().filter((e) => e.decision?.type === 'stopped')).toHaveLength(1);
  });
});
