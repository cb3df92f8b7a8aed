/**
 * End to end: the real app (router, store, commands) with the Telegram channel talking to the
 * fake Bot API through real grammY bots. Assertions are on what the fake platform shows.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';
import { agentDef, MAYA, TOKENS, USERNAMES, waitUntil, type AgentId, telegramAppYaml } from './harness.js';

const ALL: AgentId[] = ['analyst', 'writer', 'critic', 'editor'];


describe('telegram end to end (real router)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(llm: FakeLlm, opts: { autoCreate?: boolean; admins?: number[]; reuse?: boolean } = {}): Promise<App> {
    if (!opts.reuse) {
      fake = await FakeTelegram.start();
      for (const id of ALL) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
      dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-e2e-'));
    }
    const { config } = parseConfigText(telegramAppYaml({ dataDir: dataDir!, apiRoot: fake!.apiRoot, agents: ALL, autoCreate: opts.autoCreate ?? true, admins: opts.admins ?? [] }), 'test', {});
    const a = await createApp({ config, llm, logger: silentLogger });
    await a.start();
    return a;
  }

  /** A group with analyst, writer and critic, formed by adding their bots. */
  async function marketTeam(): Promise<{ chatId: number; groupId: string }> {
    const chat = fake!.createGroup('Market team');
    for (const id of ['analyst', 'writer', 'critic'] as const) fake!.addBotToChat(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === 3), 'group of three');
    await waitUntil(() => fake!.postsIn(chat.id).some((p) => p.text.includes('is ready')) || undefined, 'greeting');
    return { chatId: chat.id, groupId: g.id };
  }

  const postsAfter = (chatId: number, n: number) => fake!.postsIn(chatId).slice(n);

  it('@analyst → only the analyst bot answers, replying to the human message', async () => {
    const llm = new FakeLlm({ replies: { analyst: 'AAPL beat estimates.' } });
    app = await boot(llm);
    const { chatId } = await marketTeam();
    const before = fake!.postsIn(chatId).length;
    const human = fake!.humanSays(chatId, MAYA, '@analyst how did AAPL do?');
    await waitUntil(() => postsAfter(chatId, before).length >= 1 || undefined, 'analyst reply');
    await app.router.idle();
    const posts = postsAfter(chatId, before);
    expect(posts.map((p) => [p.bot, p.text])).toEqual([[USERNAMES.analyst, 'AAPL beat estimates.']]);
    expect(posts[0]!.replyToMessageId).toBe(human.messageId);
  });

  it('a plain message: one round although three bots saw it; replies and passes from each own bot', async () => {
    const llm = new FakeLlm({
      replies: { writer: 'I can draft the summary.', critic: 'Watch the margins.', analyst: '[PASS]' },
    });
    app = await boot(llm);
    const { chatId } = await marketTeam();
    const before = fake!.postsIn(chatId).length;
    fake!.humanSays(chatId, MAYA, 'Thoughts on the quarter, anyone?');
    await waitUntil(() => postsAfter(chatId, before).length >= 2 || undefined, 'two voluntary replies');
    await app.router.idle();
    const posts = postsAfter(chatId, before);
    expect(posts.map((p) => [p.bot, p.text]).sort()).toEqual([
      [USERNAMES.critic, 'Watch the margins.'],
      [USERNAMES.writer, 'I can draft the summary.'],
    ]);
    // Every participant was asked exactly once: the three copies made one round.
    const turns = llm.calls.filter((c) => c.purpose === 'turn');
    expect(turns.map((c) => c.agent?.id).sort()).toEqual(['analyst', 'critic', 'writer']);
    const g = app.gateway.listGroups()[0]!;
    const humans = (await app.gateway.messages(g.id, { limit: 100 })).filter((e) => e.kind === 'human');
    expect(humans.map((e) => e.text)).toEqual(['Thoughts on the quarter, anyone?']);
  });

  it('/group create in chat, /group@bot list answered by that bot; a fourth bot joins, a removed bot leaves', async () => {
    const llm = new FakeLlm();
    app = await boot(llm, { autoCreate: false, admins: [MAYA.id] });
    const chat = fake!.createGroup('Newsroom');
    for (const id of ['analyst', 'writer', 'critic'] as const) fake!.addBotToChat(chat.id, TOKENS[id], MAYA);
    fake!.humanSays(chat.id, MAYA, '/group create analyst writer');
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id)), 'group created');
    expect(g.participants).toEqual(['analyst', 'writer']);
    await waitUntil(() => fake!.postsIn(chat.id)[0], 'reply to /group create');
    await app.router.idle();
    const n = fake!.postsIn(chat.id).length;

    fake!.humanSays(chat.id, MAYA, `/group@${USERNAMES.writer} list`);
    const listing = await waitUntil(() => postsAfter(chat.id, n)[0], 'list reply');
    expect(listing.bot).toBe(USERNAMES.writer);
    expect(listing.text).toContain('Analyst');
    expect(listing.text).toContain('Writer');

    fake!.addBotToChat(chat.id, TOKENS.editor, MAYA);
    await waitUntil(() => app!.gateway.getGroup(g.id)?.participants.includes('editor') || undefined, 'editor joined');
    fake!.removeBotFromChat(chat.id, TOKENS.writer, MAYA);
    await waitUntil(() => (app!.gateway.getGroup(g.id)?.participants.includes('writer') === false ? true : undefined), 'writer left');
    expect(app.gateway.getGroup(g.id)!.participants).toEqual(['analyst', 'editor']);
  });

  it('a DM is answered 1:1 by that bot', async () => {
    const llm = new FakeLlm({ replies: { critic: 'Happy to critique.' } });
    app = await boot(llm);
    fake!.humanDms(TOKENS.critic, MAYA, 'Can you look at my essay?');
    const post = await waitUntil(() => fake!.postsIn(MAYA.id)[0], 'dm reply');
    await app.router.idle();
    expect(fake!.postsIn(MAYA.id).map((p) => [p.bot, p.text])).toEqual([[USERNAMES.critic, 'Happy to critique.']]);
    expect(post.bot).toBe(USERNAMES.critic);
    expect(llm.calls.filter((c) => c.purpose === 'turn').map((c) => c.agent?.id)).toEqual(['critic']);
  });

  it('restart in the middle of a round: nothing lost, nothing answered twice', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = new FakeLlm({ replies: { analyst: async () => (await gate, 'late answer from the first run') } });
    app = await boot(slow);
    const { chatId } = await marketTeam();
    const before = fake!.postsIn(chatId).length;
    fake!.humanSays(chatId, MAYA, '@analyst first question');
    await waitUntil(() => slow.callsFor('analyst').length >= 1 || undefined, 'analyst thinking');
    // Stop while the model call is in flight; it finishes only after the app is gone.
    const stopping = app.stop();
    release();
    await stopping;
    app = undefined;
    // Said while Chorus was down: Telegram keeps it until a bot confirms it.
    fake!.humanSays(chatId, MAYA, '@analyst second question');

    const fast = new FakeLlm({ replies: { analyst: (req) => `answer ${req.messages.at(-1)?.content.includes('second question') ? 'B' : 'A'}` } });
    app = await boot(fast, { reuse: true });
    const lastAsks = () => fast.callsFor('analyst').map((c) => c.messages.at(-1)?.content ?? '');
    await waitUntil(() => lastAsks().some((t) => t.includes('second question')) || undefined, 'second question reaches the analyst', 15_000);
    await app.router.idle();
    const posts = postsAfter(chatId, before).filter((p) => p.bot === USERNAMES.analyst);
    const g = app.gateway.listGroups().find((x) => x.chatId === String(chatId))!;
    const humans = (await app.gateway.messages(g.id, { limit: 100 })).filter((e) => e.kind === 'human').map((e) => e.text);
    expect(humans).toEqual(['@analyst first question', '@analyst second question']);
    // The first run's answer may still go out while stopping (the bots can post without polling)
    // or be dropped and redone after the restart; either way each question is answered once.
    const late = posts.filter((p) => p.text === 'late answer from the first run').length;
    expect(late).toBeLessThanOrEqual(1);
    const after = lastAsks().join('\n');
    expect(after.includes('first question')).toBe(late === 0);
    expect(posts.length).toBe(late + fast.callsFor('analyst').length);
    expect(new Set(posts.map((p) => p.messageId)).size).toBe(posts.length);
  });

  it('updates redelivered after a crash are not answered again', async () => {
    const llm = new FakeLlm({ replies: { analyst: 'answered once' } });
    app = await boot(llm);
    const { chatId, groupId } = await marketTeam();
    fake!.humanSays(chatId, MAYA, '@analyst only once please');
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === 'answered once') || undefined, 'answer');
    await app.router.idle();
    await app.stop();
    const next = new FakeLlm({ replies: { analyst: 'answered twice?!' } });
    app = await boot(next, { reuse: true });
    for (const id of ['analyst', 'writer', 'critic'] as const) expect(fake!.replayMessages(TOKENS[id])).toBeGreaterThan(0);
    fake!.humanSays(chatId, MAYA, '@writer marker');
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.bot === USERNAMES.writer && p.text.startsWith('ok from writer')) || undefined, 'marker answer');
    await app.router.idle();
    expect(fake!.postsIn(chatId).filter((p) => p.text.startsWith('answered')).map((p) => p.text)).toEqual(['answered once']);
    expect(next.callsFor('analyst')).toHaveLength(0);
    const humans = (await app.gateway.messages(groupId, { limit: 100 })).filter((e) => e.kind === 'human').map((e) => e.text);
    expect(humans).toEqual(['@analyst only once please', '@writer marker']);
  });

  it('group → supergroup migration re-keys the group; the conversation goes on in the new chat', async () => {
    const llm = new FakeLlm({ replies: { analyst: 'still here' } });
    app = await boot(llm);
    const chat = fake!.createGroup('Small team', { type: 'group' });
    for (const id of ['analyst', 'writer'] as const) fake!.addBotToChat(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === 2), 'group');
    const newId = fake!.migrate(chat.id);
    await waitUntil(() => app!.gateway.getGroup(g.id)?.chatId === String(newId) || undefined, 're-keyed');
    fake!.humanSays(newId, MAYA, '@analyst are you there?');
    await waitUntil(() => fake!.postsIn(newId).some((p) => p.text === 'still here') || undefined, 'answer in the supergroup');
    expect(app.gateway.listGroups().filter((x) => x.chatId === String(newId))).toHaveLength(1);
    expect(fake!.postsIn(newId).find((p) => p.text === 'still here')!.bot).toBe(USERNAMES.analyst);
  });
});
