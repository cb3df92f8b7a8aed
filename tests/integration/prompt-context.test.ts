/**
 * "What did this agent see?": after a conversation where Analyst's last prompt had a history, a
 * running summary and a mailbox too long for its small context window (older observations folded
 * into the digest line), the context rebuilt from the log is exactly what the model received —
 * system prefix, summary, history messages, observations in full and folded — on the memory, file
 * and PostgreSQL stores, and again after a restart on the same data.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LlmRequest, Store } from '../../src/core/ports.js';
import { UserError } from '../../src/core/errors.js';
import type { PromptContext } from '../../src/core/groups/promptContext.js';
import { observationLine } from '../../src/core/session/prompt.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { silentLogger } from '../helpers/logger.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { testDatabase } from '../helpers/postgres.js';
import { makeRouter } from '../helpers/router-harness.js';

const db = await testDatabase('prompt_context');
const dirs: string[] = [];
afterAll(async () => {
  await db?.drop().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const analyst = (req: LlmRequest, n: number) => (req.mustReply ? `Analyst answer ${n}: the numbers hold up.` : '[PASS]');
const long = (i: number) => `@writer message ${i}: `.concat('we still need to settle the budget for the northern region and the launch date. '.repeat(4));

async function conversation(store: Store) {
  const h = await makeRouter({ store, contextTokens: 1600, llm: { replies: { analyst } }, group: { history_turns: 4 } });
  await h.say('hello everyone, anything to add?'); // voluntary turns: Analyst passes
  await h.say('@analyst first question: how are sales?');
  await h.say('@analyst second question: and costs?');
  await h.say('@analyst third question: and the margin?');
  await h.router.gateway.updateConfig('room', { reply_strategy: 'mention_only' });
  for (let i = 0; i < 14; i++) await h.say(long(i));
  await h.say('@analyst what do you make of all that?');
  await h.router.idle();
  const reply = (await h.fullTranscript()).filter((e) => e.kind === 'agent' && e.agentId === 'analyst').at(-1)!;
  return { h, reply, request: h.llm.callsFor('analyst').at(-1)! };
}

/** The context answer checked against the request the model really got. */
function expectSameAs(ctx: PromptContext, req: LlmRequest) {
  expect(ctx.exact).toEqual({ system: true, summary: true, history: true, observations: true });
  expect(ctx.system.text).toBe(req.system);
  expect(ctx.summary?.text ?? null).toBe(req.summary ?? null);
  expect(ctx.history.map((m) => ({ role: m.role, content: m.content }))).toEqual(req.messages.slice(0, -1));
  const user = req.messages.at(-1)!.content;
  // Every observation shown in full is a block of the user turn, and there are no others.
  const blocks = user.match(/<message from=/g) ?? [];
  expect(blocks.length).toBe(ctx.observations.full.length);
  for (const e of ctx.observations.full) expect(user).toContain(observationLine({ ...e, authorId: '', kind: e.kind } as never));
  // The folded ones: the digest line as sent, with their count.
  const folded = ctx.observations.folded;
  expect(folded.count).toBeGreaterThan(0);
  expect(user).toContain(folded.digest!);
  expect(user).toContain(`(${folded.count + folded.omitted} earlier messages`);
}

async function checkOn(open: () => Store) {
  const first = open();
  const { h, reply, request } = await conversation(first);
  const ctx = await h.router.gateway.promptContext('room', reply.id);
  expectSameAs(ctx, request);
  expect(ctx.summary?.text).toContain('summary of earlier turns');
  expect(ctx.history.length).toBeGreaterThanOrEqual(2);
  expect(ctx.observations.full.length).toBeGreaterThan(0);
  expect(ctx.window.contextTokens).toBe(1600);
  expect(ctx.model).toBe('test-model');
  expect(reply.meta?.prompt?.folded?.count).toBe(ctx.observations.folded.count);
  // The summary's text is carried once per version: this reply points at the one that carries it.
  expect(reply.meta?.prompt?.summary?.text).toBeUndefined();
  expect(reply.meta?.prompt?.summary?.at).toBeLessThan(reply.seq);

  // Unknown entry, a human message, and a reply from before prompts were referenced.
  const human = (await h.fullTranscript()).find((e) => e.kind === 'human')!;
  await expect(h.router.gateway.promptContext('room', 'room.99999')).rejects.toMatchObject({ status: 404 });
  await expect(h.router.gateway.promptContext('room', human.id)).rejects.toMatchObject({ status: 400 });
  await h.router.stop();

  // After a restart on the same data: the same answer, read from the log.
  const again = await makeRouter({ store: reopen(first, open), contextTokens: 1600, llm: { replies: { analyst } }, group: { history_turns: 4 } });
  expect(await again.router.gateway.promptContext('room', reply.id)).toEqual(ctx);
  await again.router.stop();
  return ctx;
}

/** The same data opened again (the memory store's data stays in the object). */
function reopen(store: Store, open: () => Store): Store {
  return store instanceof MemoryStore ? store : open();
}

describe('what an agent saw, rebuilt from the log', () => {
  it('memory store', async () => {
    await checkOn(() => new MemoryStore());
  });

  it('file store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-ctx-'));
    dirs.push(dir);
    await checkOn(() => new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger }));
  });

  it.skipIf(!db)('PostgreSQL store', async () => {
    const stores: PostgresStore[] = [];
    try {
      await checkOn(() => {
        const s = new PostgresStore({ url: db!.url, logger: silentLogger });
        stores.push(s);
        return s;
      });
    } finally {
      for (const s of stores) await s.close().catch(() => undefined);
    }
  });

  it('a pass in the history, and an observation cut to fit, are rebuilt exactly too', async () => {
    const h = await makeRouter({ llm: { replies: { analyst } }, participants: ['analyst', 'writer'] });
    await h.say('hello everyone, anything to add?'); // Analyst passes: its turn is in the history
    expect(h.transcript().some((e) => e.decision?.type === 'pass' && e.decision.agentId === 'analyst')).toBe(true);
    await h.say('@analyst and now?');
    let reply = h.transcript().filter((e) => e.kind === 'agent' && e.agentId === 'analyst').at(-1)!;
    let ctx = await h.router.gateway.promptContext('room', reply.id);
    let req = h.llm.callsFor('analyst').at(-1)!;
    expect(ctx.exact).toEqual({ system: true, summary: true, history: true, observations: true });
    expect(ctx.history.map((m) => ({ role: m.role, content: m.content }))).toEqual(req.messages.slice(0, -1));
    expect(ctx.history.at(-1)).toMatchObject({ role: 'assistant', content: '[PASS]' });

    const small = await makeRouter({ contextTokens: 700, llm: { replies: { analyst } } });
    await small.say(`@analyst ${'please read this very long brief carefully. '.repeat(120)}`);
    reply = small.transcript().filter((e) => e.kind === 'agent' && e.agentId === 'analyst').at(-1)!;
    ctx = await small.router.gateway.promptContext('room', reply.id);
    req = small.llm.callsFor('analyst').at(-1)!;
    expect(ctx.exact).toEqual({ system: true, summary: true, history: true, observations: true });
    const newest = ctx.observations.full.at(-1)!;
    expect(newest.cut).toBe(true);
    expect(req.messages.at(-1)!.content).toContain(newest.text);
  });

  it('a reply recorded before prompts were referenced answers 410', async () => {
    const h = await makeRouter({});
    await h.say('@analyst hi');
    const reply = h.transcript().find((e) => e.kind === 'agent')!;
    delete reply.meta!.prompt;
    const store = h.store as unknown as { readEntries: Store['readEntries'] };
    const read = store.readEntries.bind(h.store);
    store.readEntries = async (...args) => (await read(...args)).map((e) => (e.id === reply.id ? { ...e, meta: { ...e.meta!, prompt: undefined } } : e));
    const err = await h.router.gateway.promptContext('room', reply.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect(err).toMatchObject({ status: 410, message: expect.stringContaining('not recorded for older replies') });
  });
});
