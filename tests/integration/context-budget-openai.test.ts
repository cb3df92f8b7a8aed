/**
 * A small context on the real `openai` provider (official SDK) against a fake llama.cpp-like
 * server with a 1,024-token context (`-c 1024`) and 80-token replies: a long conversation among
 * three agents — many @mentions, long messages — ends with every addressed turn answered, and
 * no prompt too long after the first shrink. Also: what the model streamed is what is stored
 * (only a leading name label and the pass token are ever taken out; whitespace is untouched).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { createProvider } from '../../src/llm/createProvider.js';
import { startFakeOpenAi, type FakeOpenAiServer, type OpenAiLoggedRequest } from '../fakes/openai/index.js';
import { makeRouter } from '../helpers/router-harness.js';
import { silentLogger } from '../helpers/logger.js';

let fake: FakeOpenAiServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const NAMES: Record<string, string> = { analyst: 'Analyst', writer: 'Writer', critic: 'Critic' };

/** Which agent a request is for, from its system prompt ("You are Analyst (@analyst)"). */
function agentOf(req: OpenAiLoggedRequest): string {
  const messages = req.body['messages'] as Array<{ role: string; content: string }>;
  const m = /You are \w+ \(@(\w+)\)/.exec(messages[0]?.content ?? '');
  return m?.[1] ?? 'unknown';
}

/** About 75 tokens of reply, some of them passing the word on to another agent. */
function replyFor(agent: string, n: number): string {
  const others = Object.keys(NAMES).filter((a) => a !== agent);
  const handoff = n % 4 === 0 ? ` @${others[n % 2]} what is your view on this?` : '';
  return `${NAMES[agent]} answer ${n}: the figures for the period look consistent with the plan, though the second half needs a closer look at costs and at the hiring schedule.${handoff}`;
}

/** A long human message (≈ 150–330 tokens) addressing one or two agents. */
function humanMessage(i: number): string {
  const ids = Object.keys(NAMES);
  const first = ids[i % 3]!;
  const second = i % 4 === 1 ? ids[(i + 1) % 3]! : null;
  const body = `Message ${i}: here is the next part of the quarterly review; we need to settle the budget for the northern region, the hiring plan and the launch date. `.repeat(4 + (i % 5));
  return `@${first}${second ? ` @${second}` : ''} ${body}`;
}

async function conversation(opts: { contextTokens?: number }) {
  fake = await startFakeOpenAi({ nCtx: 1024, templateTokens: 4, reply: (req, n) => replyFor(agentOf(req), n) });
  const { config } = parseConfigText(
    `llm: { provider: openai, base_url: "${fake.url}", model: local-model, max_tokens: 80, max_retries: 0 }\nagents:\n  - { id: a, name: A, persona: p }\n`,
    'test',
    {},
  );
  const provider = createProvider(config.llm, silentLogger);
  const h = await makeRouter({
    llm: provider,
    maxTokens: 80,
    // Unset: the openai default of 4096 is assumed until the server says 1024.
    defaultContextTokens: 4096,
    ...(opts.contextTokens ? { contextTokens: opts.contextTokens } : {}),
  });
  const unanswered: string[] = [];
  for (let i = 0; i < 20; i++) {
    const text = humanMessage(i);
    const before = h.channel.posts.length;
    await h.say(text);
    const spoke = new Set(h.channel.posts.slice(before).filter((p) => p.agentId).map((p) => p.agentId!));
    for (const id of text.match(/@(\w+)/g)!.map((m) => m.slice(1))) if (!spoke.has(id)) unanswered.push(`message ${i}: @${id}`);
  }
  return { h, fake, unanswered };
}

describe('a 1,024-token llama.cpp context through the real openai provider', () => {
  it('unset context_tokens: one refusal teaches the window, then every prompt fits and every addressed turn is answered', async () => {
    const { h, fake, unanswered } = await conversation({});
    const turns = fake.requests.filter((r) => r.path === '/v1/chat/completions');
    const messages = (await h.fullTranscript()).filter((e) => e.kind === 'human' || e.kind === 'agent');
    expect(messages.length).toBeGreaterThanOrEqual(40);
    expect(unanswered).toEqual([]);
    // No failure notices: the one refusal was retried smaller and answered.
    expect(h.channel.texts(null)).toEqual([]);
    const overflows = turns.filter((r) => r.overflow);
    expect(overflows).toHaveLength(1);
    // The refusal was llama.cpp's 400 with n_ctx; the next request (the retry) fits, and so does every later one.
    const first = turns.indexOf(overflows[0]!);
    expect(turns[first + 1]!.status).toBe(200);
    for (const r of turns.slice(first + 1)) expect(r.promptTokens).toBeLessThan(1024);
    // Replies keep their 80 tokens of room.
    for (const r of turns) expect(r.body['max_tokens']).toBe(80);
  });

  it('context_tokens: 1024 configured: no refusal at all', async () => {
    const { h, fake, unanswered } = await conversation({ contextTokens: 1024 });
    expect(unanswered).toEqual([]);
    expect(h.channel.texts(null)).toEqual([]);
    expect(fake.requests.filter((r) => r.overflow)).toEqual([]);
    const biggest = Math.max(...fake.requests.map((r) => r.promptTokens));
    // What did not fit was folded into a visible line, never dropped silently.
    const lastUser = (r: OpenAiLoggedRequest) => (r.body['messages'] as Array<{ role: string; content: string }>).filter((m) => m.role === 'user').at(-1)!.content;
    expect(fake.requests.some((r) => /\(\d+ earlier messages? from [^)]* not shown in full/.test(lastUser(r)))).toBe(true);
    // The budget is used, not wasted: the fullest prompt comes near the window.
    expect(biggest).toBeGreaterThan(600);
    expect(biggest).toBeLessThan(1024);
  });
});

describe('reply fidelity through the real openai provider', () => {
  it('the stored reply is exactly what streamed: indentation, tables and spacing survive; only a leading name label goes', async () => {
    const body = [
      'Here is the plan:',
      '',
      '```python',
      'def total(rows):',
      '    if not rows:',
      '        return  0   # two spaces on purpose',
      '    return sum(r["amount"]  for r in rows)',
      '```',
      '',
      '| region | q1  |  q2 |',
      '|--------|-----|-----|',
      '| north  | 1.2 | 3.4 |',
      '',
      '  - indented item',
      '\tand a tab',
    ].join('\n');
    // Streamed in awkward pieces: label split, whitespace-only chunks, a chunk inside the indentation.
    const text = `Analyst: ${body}`;
    const at = body.indexOf('    if');
    const chunks = ['Anal', 'yst: ', body.slice(0, at), body.slice(at, at + 4), body.slice(at + 4, at + 5), body.slice(at + 5, 140), body.slice(140)];
    expect(chunks.join('')).toBe(text);
    fake = await startFakeOpenAi({ reply: () => ({ text, chunks }) });
    const { config } = parseConfigText(`llm: { provider: openai, base_url: "${fake.url}", model: local-model, max_retries: 0 }\nagents:\n  - { id: a, name: A, persona: p }\n`, 'test', {});
    const h = await makeRouter({ llm: createProvider(config.llm, silentLogger) });
    const deltas: string[] = [];
    h.router.gateway.subscribe((ev) => ev.type === 'delta' && ev.agentId === 'analyst' && deltas.push(ev.text));
    await h.say('@analyst the plan please');
    const stored = (await h.fullTranscript()).find((e) => e.kind === 'agent')!;
    expect(stored.text).toBe(body);
    expect(deltas.join('')).toBe(body);
    expect(h.channel.texts('analyst')).toEqual([body]);
    // And the model sees its own words unchanged in the next turn's history.
    await h.say('@analyst thanks');
    const next = fake.requests.at(-1)!.body['messages'] as Array<{ role: string; content: string }>;
    expect(next.find((m) => m.role === 'assistant')!.content).toBe(body);
  });
});
