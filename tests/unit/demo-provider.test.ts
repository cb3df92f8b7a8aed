/**
 * The built-in demo's canned model (src/llm/DemoProvider.ts): an open question is answered by
 * several agents in their own voices, varied by message and agent yet the same every time; one
 * agent may react instead; replies stream one word per timer tick and stop at the abort signal;
 * a notes request becomes a tool call whose result becomes the reply. The plain scripted provider
 * stays what `llm.provider: scripted` gets.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { chooseProvider, agentsFromConfig } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { DEFAULT_CONFIG_YAML } from '../../src/config/defaults.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { buildSystemPrompt } from '../../src/core/session/prompt.js';
import type { AgentDef } from '../../src/core/types.js';
import type { ToolSpec, ToolStep } from '../../src/core/toolTypes.js';
import { DemoProvider, notesIntent } from '../../src/llm/DemoProvider.js';
import { subjectOf } from '../../src/llm/demoReplies.js';
import { ScriptedProvider } from '../../src/llm/ScriptedProvider.js';
import { silentLogger } from '../helpers/logger.js';

const demoConfig = parseConfigText(DEFAULT_CONFIG_YAML, 'built-in defaults', {}).config;
/** The built-in demo's agents: Analyst, Writer (who keeps the notes) and Critic. */
const agents = agentsFromConfig(demoConfig);
const [analyst, writer] = agents as [AgentDef, AgentDef, AgentDef];
const system = (a: AgentDef) =>
  buildSystemPrompt(a, { title: 'Lobby', participants: agents, handles: (id) => [`@${id}`] });
const mailbox = (text: string, earlier = '') =>
  `## Group conversation since your last turn\n<message from="Maya" role="human">${text}</message>${earlier}` +
  '\n\n## Your turn\n...';
const NOTES: ToolSpec[] = [
  {
    name: 'notes__add',
    description: 'Add a note.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  },
  { name: 'notes__list', description: 'List the notes.', inputSchema: { type: 'object', properties: {} } },
];

function request(agent: AgentDef, text: string, extra: Partial<LlmRequest> = {}): LlmRequest {
  const messages = [{ role: 'user' as const, content: mailbox(text) }];
  const turn = { purpose: 'turn' as const, model: 'm', system: system(agent), messages, agent };
  return { ...turn, mustReply: false, mayReact: true, ...extra };
}

const quick = new DemoProvider({ wordDelayMs: 0, thinkMs: 0 });
const say = async (agent: AgentDef, text: string, extra: Partial<LlmRequest> = {}) =>
  (await quick.complete(request(agent, text, extra))).text;
const isReply = (t: string) => t !== '[PASS]' && !t.startsWith('[REACT');

const OPEN = [
  'hey everyone, thoughts?',
  'what do you all think about a four-day week?',
  'should we launch in May?',
  'hello!',
  'Any ideas for the team offsite?',
  'what do you think of the new logo?',
];

describe('DemoProvider: a group conversation', () => {
  it('an open question gets two or more replies, varied by message and agent, the same every time', async () => {
    const texts = new Set<string>();
    for (const q of OPEN) {
      const answers = await Promise.all(agents.map((a) => say(a, q)));
      expect(answers.filter(isReply).length, `${q}: ${answers.join(' | ')}`).toBeGreaterThanOrEqual(2);
      for (const a of answers.filter(isReply)) {
        expect(a).toContain('(demo)');
        expect(a).not.toMatch(/\[PASS\]|\[REACT/);
        texts.add(a.replace(/“[^”]*”/g, '“…”'));
      }
      // Deterministic: the same message, the same answers.
      expect(await Promise.all(agents.map((a) => say(a, q)))).toEqual(answers);
    }
    // Several templates per persona are used: more distinct replies (subjects set aside) than agents.
    expect(texts.size).toBeGreaterThanOrEqual(8);
    // Each persona sounds like itself.
    const analystSays = await say(analyst, 'what do you all think about pricing?');
    expect(analystSays).toMatch(/measure|numbers?|confidence|pays back|figures/);
    // The plain scripted provider, by contrast, lets only the first agent by handle answer.
    const plain = new ScriptedProvider();
    const once = await Promise.all(agents.map((a) => plain.complete(request(a, OPEN[0]!)).then((r) => r.text)));
    expect(once.filter(isReply)).toHaveLength(1);
  });

  it('a later agent builds on the reply before it', async () => {
    const q = 'what do you all think about a four-day week?';
    const earlier = '\n<message from="Analyst" role="agent">Three things I would measure.</message>';
    const messages = [{ role: 'user' as const, content: mailbox(q, earlier) }];
    const text = (await quick.complete({ ...request(writer, q), messages })).text;
    expect(text).toMatch(/Analyst/);
  });

  it('at most one agent reacts to an open question instead of replying, only where reacting is offered', async () => {
    let reacted = 0;
    for (let i = 0; i < 40; i++) {
      const q = `what do you all think about plan ${i}?`;
      const answers = await Promise.all(agents.map((a) => say(a, q)));
      const reactions = answers.filter((t) => t.startsWith('[REACT'));
      expect(reactions.length).toBeLessThanOrEqual(1);
      for (const r of reactions) expect(r).toMatch(/^\[REACT (👍|🔥|👏|🤔)\]$/u);
      reacted += reactions.length;
      const offered = await Promise.all(agents.map((a) => say(a, q, { mayReact: false })));
      expect(offered.every(isReply)).toBe(true);
    }
    expect(reacted).toBeGreaterThan(5);
    expect(reacted).toBeLessThan(40);
  });

  it('statements nobody is named in still pass, news still gets reactions, addressed turns always answer', async () => {
    expect(await Promise.all(agents.map((a) => say(a, 'lovely weather')))).toEqual(['[PASS]', '[PASS]', '[PASS]']);
    const news = await Promise.all(agents.map((a) => say(a, 'we shipped build 7!')));
    expect(news.some((t) => t.startsWith('[REACT'))).toBe(true);
    expect(isReply(await say(analyst, 'lovely weather', { mustReply: true }))).toBe(true);
    expect(await say(analyst, 'any numbers on this?')).toContain('(demo)');
    // A question to someone else by handle is theirs.
    expect(await say(analyst, '@critic what do you think?')).toBe('[PASS]');
  });

  it('summaries and the selector are the scripted provider’s', async () => {
    const plain = new ScriptedProvider();
    for (const purpose of ['summary', 'selector'] as const) {
      const messages = [{ role: 'user' as const, content: 'a long conversation' }];
      const req: LlmRequest = { purpose, model: 'm', system: '', messages };
      expect((await quick.complete(req)).text).toBe((await plain.complete(req)).text);
    }
  });
});

describe('DemoProvider: streaming at a human pace', () => {
  afterEach(() => vi.useRealTimers());

  it('one word per timer tick after a pause; the request’s abort signal stops it', async () => {
    vi.useFakeTimers();
    const p = new DemoProvider({ wordDelayMs: 40, thinkMs: 300 });
    const parts: string[] = [];
    let activity = 0;
    const ac = new AbortController();
    const signal = ac.signal;
    const onDelta = (t: string) => void parts.push(t);
    const onActivity = () => void activity++;
    const ask = { mustReply: true, onDelta, onActivity, signal };
    const done = p.complete(request(analyst, 'hey everyone, thoughts?', ask));
    // Nothing is shown before the first timer fires: the reply is not written at once.
    await vi.advanceTimersByTimeAsync(299);
    expect(parts).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(parts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(40);
    expect(parts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(80);
    expect(parts).toHaveLength(4);
    expect(activity).toBe(4);
    ac.abort(new Error('stopped by /stop'));
    await expect(done).rejects.toThrow('stopped by /stop');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(parts).toHaveLength(4);
  });

  it('the streamed words make up the reply', async () => {
    vi.useFakeTimers();
    const parts: string[] = [];
    const onDelta = (t: string) => void parts.push(t);
    const q = 'what do you all think about a four-day week?';
    const done = new DemoProvider().complete(request(writer, q, { mustReply: true, onDelta }));
    await vi.runAllTimersAsync();
    const r = await done;
    expect(parts.length).toBe(r.text.split(/\s+/).length);
    expect(parts.join('')).toBe(r.text);
  });
});

describe('DemoProvider: the notes tool', () => {
  const steps = (call: ToolStep['calls'][number], content: string, isError = false): ToolStep[] => [
    { text: '', calls: [call], results: [{ callId: call.id, content, isError }] },
  ];
  const NOTE = '@writer note that we ship on Friday';
  const asked = { mustReply: true, tools: NOTES };

  it('"note that …" is a call to add it; the result, or a refusal, becomes the reply', async () => {
    const res = await quick.complete(request(writer, NOTE, { ...asked, toolChoice: 'auto' }));
    expect(res.toolCalls).toHaveLength(1);
    const call = res.toolCalls![0]!;
    expect(call).toMatchObject({ name: 'notes__add', input: { text: 'we ship on Friday' } });
    // The same request makes the same call (deterministic ids too).
    const again = await quick.complete(request(writer, NOTE, asked));
    expect(again.toolCalls).toEqual(res.toolCalls);
    const after = await say(writer, NOTE, { ...asked, toolSteps: steps(call, 'Noted (1 in all): we ship on Friday') });
    expect(after).toMatch(/^Done, it's in our notes: “we ship on Friday”.* \(demo\)$/);
    const refusal = steps(call, 'Maya did not approve this call; it was not run.', true);
    const denied = await say(writer, NOTE, { ...asked, toolSteps: refusal });
    expect(denied).toContain('did not approve');
    expect(denied).not.toMatch(/^Done/);
  });

  it('"what notes do we have?" is a call to list them, and the list is the reply', async () => {
    const res = await quick.complete(request(writer, '@writer what notes do we have?', asked));
    expect(res.toolCalls?.map((c) => [c.name, c.input])).toEqual([['notes__list', {}]]);
    const listed = steps(res.toolCalls![0]!, '1. we ship on Friday');
    const after = await say(writer, '@writer what notes do we have?', { ...asked, toolSteps: listed });
    expect(after).toContain('1. we ship on Friday');
  });

  it('not offered the tool, the note-keeper says how to ask, others pass; at the step limit it answers', async () => {
    const voluntary = await Promise.all(agents.map((a) => say(a, 'note that we ship on Friday')));
    expect(voluntary[0]).toBe('[PASS]');
    expect(voluntary[1]).toContain('@writer note that');
    expect(voluntary[2]).toBe('[PASS]');
    expect(await say(analyst, 'what notes do we have?')).toBe('[PASS]');
    const capped = await quick.complete(request(writer, '@writer note that x', { ...asked, toolChoice: 'none' }));
    expect(capped.toolCalls).toBeUndefined();
    expect(capped.text).toContain('(demo)');
  });

  it('reads requests and subjects as a person means them', () => {
    expect(notesIntent('note that the demo is Friday.')).toEqual({ kind: 'add', text: 'the demo is Friday' });
    expect(notesIntent('please remember: Omar owns the launch')).toEqual({ kind: 'add', text: 'Omar owns the launch' });
    expect(notesIntent('remember when we shipped it?')).toBeNull();
    expect(notesIntent('show me the notes')).toEqual({ kind: 'list' });
    expect(notesIntent('any thoughts on the release notes?')).toBeNull();
    expect(subjectOf('hey everyone, thoughts?')).toBeNull();
    expect(subjectOf('what do you all think about a four-day week?')).toBe('a four-day week');
    expect(subjectOf('Hi all, should we launch in May?')).toBe('should we launch in May');
  });
});

describe('which canned provider answers', () => {
  it('no key gets the demo; llm.provider: scripted keeps the plain scripted provider', () => {
    expect(chooseProvider(demoConfig, silentLogger).provider).toBeInstanceOf(DemoProvider);
    const yaml = DEFAULT_CONFIG_YAML.replace('provider: anthropic', 'provider: scripted');
    const scripted = parseConfigText(yaml, 'test', {}).config;
    const chosen = chooseProvider(scripted, silentLogger).provider;
    expect(chosen).toBeInstanceOf(ScriptedProvider);
    // The page's loud demo note goes by the provider's name: both are "scripted".
    expect(chosen.name).toBe('scripted');
    expect(new DemoProvider().name).toBe('scripted');
  });

  it('the built-in demo gives Writer the notes server, which asks a person before it changes anything', () => {
    expect(writer.tools).toEqual(['notes']);
    expect(demoConfig.tools.notes).toMatchObject({ command: 'node', confirm: 'auto' });
    expect(demoConfig.tools.notes!.args!.at(-1)).toMatch(/src\/demo\/notesServer\.ts$/);
  });
});
