/** One test per rule of the round, with a fake LLM and a fake clock. */
import { describe, expect, it } from 'vitest';
import { FakeLlm } from '../helpers/fake-llm.js';
import { makeRouter } from '../helpers/router-harness.js';
import { LlmError } from '../../src/core/errors.js';

describe('dedupe and recording', () => {
  it('handles the same platform message once', async () => {
    const h = await makeRouter();
    const msg = h.message('@analyst hi');
    expect((await h.router.receive(msg)).status).toBe('recorded');
    expect((await h.router.receive({ ...msg })).status).toBe('duplicate');
    await h.router.idle();
    expect(h.llm.callsFor('analyst')).toHaveLength(1);
    expect(h.transcript().filter((e) => e.kind === 'human')).toHaveLength(1);
  });

  it('has the message and its round on "disk" when receive resolves', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: () => new Promise(() => undefined) } } });
    const res = await h.router.receive(h.message('@analyst hi'));
    const stored = h.store.group(h.group.id);
    expect(stored.transcript.map((e) => e.id)).toContain(res.entryId);
    expect(stored.rounds[0]?.triggerIds).toEqual([res.entryId]);
  });
});

describe('addressing', () => {
  it('addresses in order of first appearance, by id, name and alias', async () => {
    const h = await makeRouter();
    await h.say('@critic then @Analyst and @numbers again, and @writer');
    expect(h.speakers()).toEqual(['critic', 'analyst', 'writer']);
  });

  it('expands @creatives and @all in participant order', async () => {
    const h = await makeRouter();
    await h.say('hey @creatives');
    expect(h.speakers()).toEqual(['writer', 'critic']);
    await h.say('@everyone status?');
    expect(h.speakers().slice(2)).toEqual(['analyst', 'writer', 'critic']);
  });

  it('ignores e-mail addresses, code spans, code blocks and unknown handles', async () => {
    const h = await makeRouter();
    await h.say('mail me at mail@analyst.com, run `@writer` or\n```\n@critic\n```\nand ask @nobody');
    expect(h.speakers()).toEqual([]);
  });

  it('a handle registered by a channel (a bot username) addresses its agent', async () => {
    const h = await makeRouter();
    h.router.registerHandle('chorus_critic_bot', 'critic');
    await h.say('what do you think @chorus_critic_bot?');
    expect(h.speakers()).toEqual(['critic']);
  });

  it('a reply to an agent message addresses that agent', async () => {
    const h = await makeRouter();
    await h.say('x', { replyToAgentId: 'critic' });
    expect(h.speakers()).toEqual(['critic']);
  });

  it('threads addressed replies to the human message', async () => {
    const h = await makeRouter();
    await h.say('@writer hi');
    expect(h.channel.posts[0]).toMatchObject({ agentId: 'writer', replyTo: 'm1' });
  });
});

describe('strategies', () => {
  it('hybrid: unaddressed messages go to a voluntary round', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: '[PASS]', writer: 'I can help', critic: '[PASS]' } } });
    await h.say('anyone?');
    expect(h.speakers()).toEqual(['writer']);
    expect(h.llm.calls.filter((c) => c.purpose === 'turn').map((c) => c.mustReply)).toEqual([false, false, false]);
    expect(h.transcript().filter((e) => e.decision?.type === 'pass').map((e) => e.decision?.agentId)).toEqual(['analyst', 'critic']);
  });

  it('mention_only: nobody answers an unaddressed message', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only' } });
    await h.say('anyone?');
    expect(h.llm.calls).toHaveLength(0);
  });

  it('round_robin rotates across messages', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'round_robin' } });
    for (let i = 0; i < 4; i++) await h.say(`message ${i}`);
    expect(h.speakers()).toEqual(['analyst', 'writer', 'critic', 'analyst']);
  });

  it('sticky: the agent last addressed answers unaddressed messages', async () => {
    const h = await makeRouter({ group: { reply_strategy: 'mention_only', sticky: true } });
    await h.say('@critic look at this');
    await h.say('and this?');
    expect(h.speakers()).toEqual(['critic', 'critic']);
    expect(h.llm.callsFor('critic')[1]?.mustReply).toBe(true);
  });

  it('sticky in hybrid: sticky agent first, then the others voluntarily', async () => {
    const h = await makeRouter({ group: { sticky: true }, llm: { replies: { analyst: 'numbers!', writer: 'hello', critic: '[PASS]' } } });
    await h.say('@writer hi');
    await h.say('more?');
    expect(h.speakers()).toEqual(['writer', 'writer', 'analyst']);
  });
});

describe('addressed turns', () => {
  it('sequential: each sees the replies before it', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: 'revenue up 8%', writer: 'nice headline' } } });
    await h.say('@analyst @writer go');
    const writerPrompt = h.llm.callsFor('writer')[0]!.messages.at(-1)!.content;
    expect(writerPrompt).toContain('<message from="Analyst" role="agent">revenue up 8%</message>');
  });

  it('parallel: addressed agents at once, last_speaker after, seeing all replies', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const slow = (text: string) => async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      return text;
    };
    const h = await makeRouter({
      group: { execution: 'parallel', last_speaker: 'critic' },
      llm: { replies: { analyst: slow('A says'), writer: slow('W says'), critic: 'summary' } },
    });
    await h.say('@critic @analyst @writer thoughts?');
    expect(maxInFlight).toBe(2);
    expect(h.speakers().at(-1)).toBe('critic');
    const criticPrompt = h.llm.callsFor('critic')[0]!.messages.at(-1)!.content;
    expect(criticPrompt).toContain('<message from="Analyst" role="agent">A says</message>');
    expect(criticPrompt).toContain('<message from="Writer" role="agent">W says</message>');
  });

  it('an addressed agent in cooldown answers after it instead of being skipped', async () => {
    const h = await makeRouter({ group: { cooldown_seconds: 10 } });
    await h.say('@analyst one');
    await h.router.receive(h.message('@analyst two'));
    await new Promise((r) => setTimeout(r, 20));
    expect(h.speakers()).toEqual(['analyst']);
    expect(h.clock.waiting).toBe(1); // waiting out the cooldown
    await h.clock.advance(10_000);
    await h.router.idle();
    expect(h.speakers()).toEqual(['analyst', 'analyst']);
  });

  it('an addressed agent that passes stays silent and the decision is logged', async () => {
    const h = await makeRouter({ llm: { replies: { analyst: '[PASS]' } } });
    await h.say('@analyst hi');
    expect(h.channel.posts).toHaveLength(0);
    expect(h.transcript().some((e) => e.decision?.type === 'pass' && e.decision.agentId === 'analyst')).toBe(true);
  });
});

describe('voluntary round', () => {
  it('a voluntary agent in cooldown is skipped', async () => {
    const h = await makeRouter({ group: { cooldown_seconds: 30 }, llm: { replies: { analyst: 'first', writer: 'me too', critic: '[PASS]' } } });
    await h.say('@analyst hello');
    await h.say('anyone else?');
    expect(h.llm.callsFor('analyst')).toHaveLength(1);
    expect(h.speakers()).toEqual(['analyst', 'writer']);
    expect(h.transcript().some((e) => e.decision?.type === 'cooldown' && e.decision.agentId === 'analyst')).toBe(true);
  });

  it('stops at max_voluntary_responders; later agents see earlier replies', async () => {
    const h = await makeRouter({ group: { max_voluntary_responders: 1 }, llm: { fallback: (q) => `from ${q.agent?.id}` } });
    await h.say('anyone?');
    expect(h.speakers()).toEqual(['analyst']);
    expect(h.llm.calls.filter((c) => c.purpose === 'turn')).toHaveLength(1);
    const h2 = await makeRouter({ group: { max_voluntary_responders: 2 }, llm: { fallback: (q) => `from ${q.agent?.id}` } });
    await h2.say('anyone?');
    expect(h2.speakers()).toEqual(['analyst', 'writer']);
    expect(h2.llm.callsFor('writer')[0]!.messages.at(-1)!.content).toContain('<message from="Analyst" role="agent">from analyst</message>');
  });

  it('muted agents take no voluntary turns but answer when mentioned', async () => {
    const h = await makeRouter({ llm: { fallback: (q) => `from ${q.agent?.id}` } });
    await h.say('/group mute analyst');
    await h.say('anyone?');
    expect(h.speakers()).toEqual(['writer', 'critic']);
    await h.say('@analyst you?');
    expect(h.speakers().at(-1)).toBe('analyst');
  });
});

describe('reactions and the turn cap', () => {
  it('two agents that always @mention each other stop at the cap', async () => {
    const h = await makeRouter({
      group: { max_depth: 50, max_agent_turns_per_message: 3 },
      llm: { replies: { analyst: 'over to @writer', writer: 'back to @analyst' } },
    });
    await h.say('@analyst start');
    // 1 addressed reply + 3 capped reactions.
    expect(h.speakers()).toEqual(['analyst', 'writer', 'analyst', 'writer']);
    expect(h.transcript().some((e) => e.decision?.type === 'cap')).toBe(true);
  });

  it('reactions stop at max_depth', async () => {
    const h = await makeRouter({
      group: { max_depth: 1, max_agent_turns_per_message: 10 },
      llm: { replies: { analyst: 'over to @writer', writer: 'back to @analyst' } },
    });
    await h.say('@analyst start');
    expect(h.speakers()).toEqual(['analyst', 'writer']);
    expect(h.transcript().some((e) => e.decision?.type === 'depth')).toBe(true);
  });

  it('a reaction is skipped while the mentioned agent cools down', async () => {
    const h = await makeRouter({ group: { cooldown_seconds: 60, max_depth: 5 }, llm: { replies: { analyst: 'ask @writer', writer: 'ok' } } });
    await h.say('@writer warm up');
    await h.say('@analyst go');
    expect(h.speakers()).toEqual(['writer', 'analyst']);
    expect(h.transcript().some((e) => e.decision?.type === 'cooldown' && e.decision.agentId === 'writer')).toBe(true);
  });

  it('agents the human addressed are answered even beyond the cap', async () => {
    const h = await makeRouter({ group: { max_agent_turns_per_message: 0 } });
    await h.say('@analyst @writer @critic all of you');
    expect(h.speakers()).toEqual(['analyst', 'writer', 'critic']);
  });

  it('with the cap reached no voluntary round runs', async () => {
    const h = await makeRouter({ group: { max_agent_turns_per_message: 0 }, llm: { fallback: 'I always talk' } });
    await h.say('anyone?');
    expect(h.llm.calls).toHaveLength(0);
  });
});

describe('failures are isolated', () => {
  it('one agent throwing gives one notice and the others reply', async () => {
    const h = await makeRouter({
      llm: { replies: { analyst: () => { throw new LlmError('boom', 'server', true); }, writer: 'fine', critic: 'also fine' } },
    });
    await h.say('@all report');
    expect(h.speakers()).toEqual(['writer', 'critic']);
    const notices = h.channel.texts(null);
    expect(notices).toEqual(['⚠ Analyst could not reply (server error)']);
  });

  it('a timeout becomes a notice and the round goes on', async () => {
    const h = await makeRouter({ group: { agent_reply_timeout_seconds: 5 }, llm: { replies: { analyst: () => new Promise(() => undefined), writer: 'here' } } });
    await h.router.receive(h.message('@analyst @writer hi'));
    await new Promise((r) => setTimeout(r, 20));
    await h.clock.advance(5000);
    await h.router.idle();
    expect(h.channel.texts(null)).toEqual(['⚠ Analyst could not reply (timeout)']);
    expect(h.speakers()).toEqual(['writer']);
  });
});

describe('queues', () => {
  it('two groups progress concurrently while each keeps its order', async () => {
    const gates: Array<() => void> = [];
    const llm = new FakeLlm({ fallback: (q) => new Promise<string>((r) => gates.push(() => r(`reply to ${[...q.messages.at(-1)!.content.matchAll(/ (m\d)/g)].map((m) => m[1]).join('+')}`))) });
    const h = await makeRouter({ llm });
    const other = await h.router.gateway.createGroup({ title: 'Other', participants: ['analyst', 'writer'], id: 'other' });
    await h.router.receive(h.message('@analyst m1'));
    await new Promise((r) => setTimeout(r, 10));
    await h.router.receive(h.message('@writer m2'));
    await h.router.receive({ ...h.message('@writer m3'), chatId: other.chatId });
    await new Promise((r) => setTimeout(r, 20));
    // Both groups have a call in flight at once; room's second message waits for its first.
    expect(gates).toHaveLength(2);
    while (gates.length) {
      gates.shift()!();
      await new Promise((r) => setTimeout(r, 10));
    }
    await h.router.idle();
    const room = h.channel.posts.filter((p) => p.chatId === 'room');
    expect(room.map((p) => p.agentId)).toEqual(['analyst', 'writer']);
    expect(room[0]!.text).toBe('reply to m1');
    expect(room[1]!.text).toBe('reply to m1+m2+m1'); // m1, m2, then the analyst's reply to m1
    expect(h.channel.posts.filter((p) => p.chatId === 'other').map((p) => p.text)).toEqual(['reply to m3']);
  });

  it('a second @mention already shown to the agent in its previous turn is not answered twice', async () => {
    // The analyst cools down, so its turn for m1 waits; m2 is recorded meanwhile and is in the
    // mailbox when the turn finally builds its prompt.
    const h = await makeRouter({ group: { cooldown_seconds: 10 }, llm: { replies: { analyst: ['first', 'both answered', 'again'] } } });
    await h.say('@analyst m0');
    await h.router.receive(h.message('@analyst m1'));
    await h.router.receive(h.message('@analyst m2'));
    await new Promise((r) => setTimeout(r, 20));
    expect(h.clock.waiting).toBe(1); // the m1 turn waits out the cooldown
    await h.clock.advance(10_000);
    await h.router.idle();
    expect(h.llm.callsFor('analyst')[1]!.messages.at(-1)!.content).toContain('@analyst m2');
    expect(h.channel.posts.map((p) => p.text)).toEqual(['first', 'both answered']);
    expect(h.transcript().some((e) => e.decision?.type === 'batch')).toBe(true);
  });

  it('answers a backlog as one batch and drops nothing', async () => {
    let release!: () => void;
    const first = new Promise<string>((r) => (release = () => r('done with first')));
    const h = await makeRouter({ llm: { replies: { analyst: [() => first, 'batch answer'], writer: 'writer answer' } } });
    await h.router.receive(h.message('@analyst one'));
    await new Promise((r) => setTimeout(r, 10));
    await h.router.receive(h.message('@analyst two'));
    await h.router.receive(h.message('@writer three'));
    await h.router.receive(h.message('four'));
    release();
    await h.router.idle();
    expect(h.speakers()).toEqual(['analyst', 'analyst', 'writer']);
    const batchPrompt = h.llm.callsFor('analyst')[1]!.messages.at(-1)!.content;
    for (const t of ['two', 'three', 'four']) expect(batchPrompt).toContain(t);
    expect(h.transcript().filter((e) => e.kind === 'human').map((e) => e.text)).toEqual(['@analyst one', '@analyst two', '@writer three', 'four']);
  });

  it('never runs more model calls at once than llm.max_concurrency', async () => {
    let inFlight = 0;
    let max = 0;
    const llm = new FakeLlm({
      fallback: async () => {
        inFlight++;
        max = Math.max(max, inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return 'ok';
      },
    });
    const h = await makeRouter({ llm, maxConcurrency: 2 });
    for (let i = 0; i < 6; i++) await h.router.gateway.createGroup({ title: `g${i}`, participants: ['analyst'], id: `g${i}` });
    await Promise.all(Array.from({ length: 6 }, (_, i) => h.router.receive({ ...h.message('hi'), chatId: `g${i}` })));
    await h.router.idle();
    expect(h.channel.posts).toHaveLength(6);
    expect(max).toBe(2);
  });
});

describe('one-to-one', () => {
  it('a group with one participant answers every message, no passes asked', async () => {
    const h = await makeRouter({ participants: ['writer'], llm: { replies: { writer: 'sure' } } });
    await h.say('write me a haiku');
    expect(h.speakers()).toEqual(['writer']);
    const call = h.llm.callsFor('writer')[0]!;
    expect(call.mustReply).toBe(true);
    expect(call.system).not.toContain('[PASS]');
    expect(call.messages.at(-1)!.content).toBe('write me a haiku');
  });

  it('a private chat with an agent bot becomes a 1:1 group with that agent', async () => {
    const h = await makeRouter();
    const res = await h.router.receive({ ...h.message('hello'), chatId: 'dm-42', isPrivate: true, viaAgentId: 'critic' });
    await h.router.idle();
    expect(res.status).toBe('recorded');
    expect(h.channel.posts.filter((p) => p.chatId === 'dm-42').map((p) => p.agentId)).toEqual(['critic']);
  });
});

describe('limits', () => {
  it('refuses over-long messages and floods with a notice, and records nothing for agents', async () => {
    const h = await makeRouter({ limits: { user_messages_per_minute: 2, max_message_chars: 20 } });
    expect((await h.say('x'.repeat(21))).status).toBe('rejected');
    await h.say('@analyst one');
    await h.say('@analyst two');
    expect((await h.say('@analyst three')).status).toBe('rejected');
    expect(h.speakers()).toEqual(['analyst', 'analyst']);
    expect(h.channel.texts(null).some((t) => t.includes('too long'))).toBe(true);
    expect(h.channel.texts(null).some((t) => t.includes('faster than 2 a minute'))).toBe(true);
  });
});
