/**
 * Reactions on Telegram. People's: the real app (router, store, prompts) with the Telegram channel
 * against the fake Bot API, which sends `message_reaction` only to admin bots; the reaction lands
 * on the entry the message is, once however many bots got it, and the agents hear of it in their
 * next prompt. Agents': `TelegramChannel.react` through the agent's own bot, mapped to Telegram's
 * emoji set. And what `/group list` and `chorus doctor` say about bots that are not admins.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import { qualifiedEmoji, telegramReaction, TELEGRAM_REACTIONS } from '../../../src/channels/telegram/reactionEmoji.js';
import { checkTelegram } from '../../../src/ops/checks/telegram.js';
import { formatFinding } from '../../../src/ops/findings.js';
import type { ChatRef, PlatformReaction, TranscriptEntry } from '../../../src/core/types.js';
import { StoreUnavailableError } from '../../../src/core/errors.js';
import type { PlatformEvent } from '../../../src/core/ports.js';
import { FakeTelegram, type Posted } from '../../fakes/telegram/FakeTelegram.js';
import { ALLOWED_REACTIONS } from '../../fakes/telegram/reactions.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { CapturingLogger, silentLogger } from '../../helpers/logger.js';
import { MemoryStore } from '../../helpers/memory-store.js';
import { agentDef, makeWorld, MAYA, TOKENS, TOM, USERNAMES, waitUntil, type AgentId, type CountingHost, type World } from './harness.js';

const IDS: AgentId[] = ['analyst', 'writer', 'critic'];
const PUBLIC = 'https://chorus.example.com';
const SECRET = 'reactions_webhook-SECRET-7';

describe('telegram: people\'s reactions (real app)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let llm: FakeLlm;
  let store: MemoryStore;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  /** The app, and a group of three whose bots `admins` are chat admins (promoted as on Telegram). */
  async function boot(admins: AgentId[], opts: { mode?: 'polling' | 'webhook'; logger?: CapturingLogger; strategy?: string; llm?: FakeLlm } = {}) {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-reactions-'));
    const agents = IDS.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: You are the ${id}., telegram: { token: "${TOKENS[id]}" } }`).join('\n');
    const webhook = opts.mode === 'webhook';
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20, reply_strategy: ${opts.strategy ?? 'mention_only'} }
channels:
  web: ${webhook ? '{ enabled: true, host: 127.0.0.1, port: 0, auth_token: "reactions-web-token" }' : '{ enabled: false }'}
  telegram: { enabled: true, api_root: "${fake.apiRoot}"${webhook ? `, mode: webhook, webhook: { url: "${PUBLIC}", path: /hooks/telegram, secret_token: "${SECRET}" }` : ''} }
`;
    llm = opts.llm ?? new FakeLlm({ replies: { analyst: ['AAPL beat estimates.', 'Glad it helped.'] } });
    store = new MemoryStore();
    const a = await createApp({ config: parseConfigText(yaml, 'test').config, llm, logger: opts.logger ?? silentLogger, store });
    app = a;
    if (webhook) {
      fake.webhookRoute = (url) => (a.webUrl ? url.replace(PUBLIC, a.webUrl) : url);
      fake.webhookRetryMs = 20;
    }
    await a.start();
    const chat = fake.createGroup('Market team');
    fake.setAdmins(chat.id, [MAYA.id]);
    for (const id of IDS) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    for (const id of admins) fake.promoteBot(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => a.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === 3), 'group of three');
    await waitUntil(() => fake!.postsIn(chat.id).some((p) => p.text.includes('is ready')) || undefined, 'greeting');
    await a.router.idle();
    return { chatId: chat.id, groupId: g.id };
  }

  /** Maya asks the analyst; its reply as the chat shows it. */
  async function analystReply(chatId: number): Promise<Posted> {
    fake!.humanSays(chatId, MAYA, '@analyst how did AAPL do?');
    const post = await waitUntil(() => fake!.postsIn(chatId).find((p) => p.text === 'AAPL beat estimates.'), 'the analyst\'s reply');
    await app!.router.idle();
    return post;
  }

  /** Wait for an async probe. */
  async function eventually<T>(probe: () => Promise<T | undefined | false>, what: string, ms = 10_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const entries = async (groupId: string): Promise<TranscriptEntry[]> => app!.gateway.messages(groupId, { limit: 100 });
  const entryOf = async (groupId: string, text: string) => (await entries(groupId)).find((e) => e.text === text)!;
  const reactionsOn = async (groupId: string, text: string) => ((await entryOf(groupId, text)).reactions ?? []).map((r) => [r.emoji, r.by, r.byKey]);
  const notes = async (groupId: string) => (await entries(groupId)).filter((e) => e.reactionOf).map((e) => e.text);
  const allConfirmed = () => waitUntil(() => [...fake!.unconfirmed().values()].every((n) => n === 0) || undefined, 'every bot confirmed its updates');
  const reactionUpdates = (id: AgentId) => fake!.state.bots.get(TOKENS[id])!.history.filter((u) => 'message_reaction' in u);

  it('a 👍 on an agent\'s reply is recorded on that entry, once, although three admin bots got it; the agent hears of it in its next prompt', async () => {
    const { chatId, groupId } = await boot(['analyst', 'writer', 'critic']);
    const reply = await analystReply(chatId);
    expect(fake!.humanReacts(chatId, MAYA, reply.messageId, [], ['👍']).sort()).toEqual([USERNAMES.analyst, USERNAMES.critic, USERNAMES.writer]);
    await eventually(async () => (await reactionsOn(groupId, 'AAPL beat estimates.')).length > 0 || undefined, 'the reaction recorded');
    await allConfirmed();
    await app!.router.idle();
    expect(await reactionsOn(groupId, 'AAPL beat estimates.')).toEqual([['👍', 'Maya', `telegram:${MAYA.id}`]]);
    expect(await notes(groupId)).toEqual(['Maya reacted 👍 to Analyst\'s message: "AAPL beat estimates."']);
    // A reaction starts no round: the model was asked once, for the reply.
    expect(llm.callsFor('analyst')).toHaveLength(1);

    fake!.humanSays(chatId, MAYA, '@analyst thanks');
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === 'Glad it helped.') || undefined, 'the second reply');
    const prompt = JSON.stringify(llm.callsFor('analyst')[1]!.messages);
    expect(prompt).toContain('Maya reacted 👍 to Analyst\'s message: \\"AAPL beat estimates.\\"');
  });

  it('an agent that answers a voluntary turn with [REACT 👍] reacts through its own bot: nothing is posted as text, the reaction is on Maya\'s message', async () => {
    const model = new FakeLlm({ replies: { writer: (q) => (q.mustReply ? 'ok' : '[REACT 👍]') }, fallback: (q) => (q.mustReply ? 'ok' : '[PASS]') });
    const { chatId, groupId } = await boot(['analyst', 'writer', 'critic'], { strategy: 'hybrid', llm: model });
    const before = fake!.postsIn(chatId).length;
    const said = fake!.humanSays(chatId, MAYA, 'We shipped the release tonight!');
    const shown = await waitUntil(() => fake!.reactions.set.find((r) => r.key === said.key), 'the writer\'s reaction on Telegram');
    expect(shown).toMatchObject({ bot: USERNAMES.writer, emoji: ['👍'] });
    await app!.router.idle();
    expect(fake!.postsIn(chatId).slice(before).map((p) => p.text)).toEqual([]);
    expect(await reactionsOn(groupId, 'We shipped the release tonight!')).toEqual([['👍', 'Writer', 'agent:writer']]);
  });

  it('a reaction the chat does not allow: Telegram answers REACTION_INVALID, the reason is logged at warn, and the reaction stays recorded', async () => {
    const logger = new CapturingLogger();
    const model = new FakeLlm({ replies: { writer: (q) => (q.mustReply ? 'ok' : '[REACT 👍]') }, fallback: (q) => (q.mustReply ? 'ok' : '[PASS]') });
    const { chatId, groupId } = await boot(['analyst', 'writer', 'critic'], { strategy: 'hybrid', llm: model, logger });
    // The chat's admins allow only hearts.
    fake!.setAvailableReactions(chatId, ['❤']);
    fake!.humanSays(chatId, MAYA, 'We shipped the release tonight!');
    const warned = await waitUntil(() => logger.lines.find((l) => l.level === 'warn' && /REACTION_INVALID/.test(l.msg ?? '')), 'the refusal logged');
    expect(warned.msg).toMatch(/^telegram: could not set writer's reaction 👍: REACTION_INVALID, not one this chat allows/);
    expect(JSON.stringify(warned.obj)).toContain('400: Bad Request: REACTION_INVALID');
    expect(JSON.stringify(warned.obj)).not.toContain(TOKENS.writer);
    // The writer's bot asked, Telegram refused: nothing shows there, the record keeps it.
    expect(fake!.callsOf('setMessageReaction', USERNAMES.writer)).toHaveLength(1);
    expect(fake!.reactions.set).toEqual([]);
    await app!.router.idle();
    expect(await reactionsOn(groupId, 'We shipped the release tonight!')).toEqual([['👍', 'Writer', 'agent:writer']]);
    expect(await notes(groupId)).toEqual(['Writer reacted 👍 to Maya\'s message: "We shipped the release tonight!"']);
  });

  it('changing 👍 to 🎉 takes 👍 back and adds 🎉; a heart comes in as the web page writes it (❤️); custom and paid reactions are skipped', async () => {
    const { chatId, groupId } = await boot(['analyst']);
    const reply = await analystReply(chatId);
    fake!.humanReacts(chatId, MAYA, reply.messageId, [], ['👍']);
    await eventually(async () => (await reactionsOn(groupId, 'AAPL beat estimates.')).length === 1 || undefined, '👍');
    fake!.humanReacts(chatId, MAYA, reply.messageId, ['👍'], ['🎉']);
    await eventually(async () => (await reactionsOn(groupId, 'AAPL beat estimates.'))[0]?.[0] === '🎉' || undefined, '👍 → 🎉');
    fake!.humanReacts(chatId, TOM, reply.messageId, [], ['❤', { custom_emoji_id: '5368324170671202286' }, 'paid']);
    await eventually(async () => (await reactionsOn(groupId, 'AAPL beat estimates.')).length === 2 || undefined, 'Tom\'s heart');
    await allConfirmed();
    await app!.router.idle();
    expect(await reactionsOn(groupId, 'AAPL beat estimates.')).toEqual([
      ['🎉', 'Maya', `telegram:${MAYA.id}`],
      ['❤️', 'Tom', `telegram:${TOM.id}`],
    ]);
    // Taking one back leaves no note.
    expect(await notes(groupId)).toEqual([
      'Maya reacted 👍 to Analyst\'s message: "AAPL beat estimates."',
      'Maya reacted 🎉 to Analyst\'s message: "AAPL beat estimates."',
      'Tom reacted ❤️ to Analyst\'s message: "AAPL beat estimates."',
    ]);
  });

  it('a person\'s message takes reactions too; an anonymous admin reacts as the chat', async () => {
    const { chatId, groupId } = await boot(['writer']);
    const said = fake!.humanSays(chatId, TOM, 'Earnings are out.');
    await eventually(async () => (await entries(groupId)).some((e) => e.text === 'Earnings are out.') || undefined, 'Tom\'s message');
    fake!.humanReacts(chatId, 'anonymous', said.messageId, [], ['🔥']);
    await eventually(async () => (await reactionsOn(groupId, 'Earnings are out.')).length === 1 || undefined, 'the reaction');
    expect(await reactionsOn(groupId, 'Earnings are out.')).toEqual([['🔥', 'Market team', `telegram:chat:${chatId}`]]);
  });

  it('a bot that is not an admin gets no update, and /group list says so', async () => {
    const { chatId, groupId } = await boot(['analyst', 'writer']);
    const reply = await analystReply(chatId);
    expect(fake!.humanReacts(chatId, MAYA, reply.messageId, [], ['👍']).sort()).toEqual([USERNAMES.analyst, USERNAMES.writer]);
    await eventually(async () => (await reactionsOn(groupId, 'AAPL beat estimates.')).length === 1 || undefined, 'the reaction');
    expect(reactionUpdates('critic')).toEqual([]);
    expect(reactionUpdates('analyst')).toHaveLength(1);

    const before = fake!.postsIn(chatId).length;
    fake!.humanSays(chatId, MAYA, '/group list');
    const list = await waitUntil(() => fake!.postsIn(chatId).slice(before).find((p) => p.text.includes('⚠')), '/group list');
    expect(list.text).toContain(
      "⚠ Critic's bot @chorus_critic_bot is not an admin of this chat, so Telegram sends it no reactions (Chorus sees them through @chorus_analyst_bot, @chorus_writer_bot); make @chorus_critic_bot an admin to see reactions through it too.",
    );
    expect(list.text).not.toMatch(/Analyst's bot|Writer's bot/);

    // Demoted (Telegram tells the bot): now no bot is an admin, and /group list says reactions are not seen.
    fake!.promoteBot(chatId, TOKENS.analyst, MAYA, false);
    fake!.promoteBot(chatId, TOKENS.writer, MAYA, false);
    await allConfirmed();
    const after = fake!.postsIn(chatId).length;
    fake!.humanSays(chatId, MAYA, '/group list');
    const again = await waitUntil(() => fake!.postsIn(chatId).slice(after).find((p) => p.text.includes('⚠')), '/group list again');
    expect(again.text).toContain(
      "⚠ @chorus_analyst_bot, @chorus_writer_bot, @chorus_critic_bot are not admins of this chat, and Telegram sends people's reactions only to admin bots: make @chorus_analyst_bot an admin to see reactions.",
    );
  });

  it('the admin list is read when the chat is first heard from (bots promoted before Chorus started)', async () => {
    const { chatId } = await boot([]);
    // Made admins without Chorus hearing of it (as while it was down): the admin list tells.
    const bot = (id: AgentId) => fake!.state.bots.get(TOKENS[id])!.id;
    fake!.setAdmins(chatId, [MAYA.id, bot('analyst'), bot('writer'), bot('critic')]);
    const before = fake!.callsOf('getChatAdministrators').length;
    fake!.humanSays(chatId, MAYA, 'hello all');
    await waitUntil(() => fake!.callsOf('getChatAdministrators').length > before || undefined, 'the admin list read');
    await app!.router.idle();
    const after = fake!.postsIn(chatId).length;
    fake!.humanSays(chatId, MAYA, '/group list');
    const list = await waitUntil(() => fake!.postsIn(chatId).slice(after).find((p) => p.text.includes('Market team')), '/group list');
    expect(list.text).not.toContain('admin');
  });

  it.each(['polling', 'webhook'] as const)('%s: a reaction the store cannot record is delivered again, then recorded once', async (mode) => {
    const { chatId, groupId } = await boot(['analyst', 'writer'], { mode });
    const reply = await analystReply(chatId);
    store.failWrites = 'ENOSPC: no space left on device';
    const deliveries = fake!.deliveries.length;
    fake!.humanReacts(chatId, MAYA, reply.messageId, [], ['👍']);
    if (mode === 'webhook') {
      await waitUntil(() => fake!.deliveries.slice(deliveries).filter((d) => d.status === 503).length >= 2 || undefined, 'refused deliveries');
    } else {
      // Fetched, not recorded, not confirmed.
      await waitUntil(() => store.health().writable === false || undefined, 'a write refused');
      expect(fake!.unconfirmed().get(USERNAMES.analyst)).toBe(1);
      expect(fake!.unconfirmed().get(USERNAMES.writer)).toBe(1);
    }
    const written = () => (store.logs.get(groupId) ?? []).filter((l) => l.includes('"reactions"') && l.includes('👍')).length;
    expect(written()).toBe(0);
    store.failWrites = null;
    // The group is read back from the store, the update comes again and is recorded.
    await waitUntil(() => written() > 0 || undefined, 'recorded after all', 15_000);
    await allConfirmed();
    await app!.router.idle();
    expect(written()).toBe(1);
    expect(await reactionsOn(groupId, 'AAPL beat estimates.')).toEqual([['👍', 'Maya', `telegram:${MAYA.id}`]]);
    expect(await notes(groupId)).toHaveLength(1);
  });
});

describe('telegram: agents\' reactions in a room (real app)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  /** A room whose home is the web page, with a Telegram supergroup linked; the writer reacts where offered. */
  async function bootRoom() {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    const chat = fake.createGroup('Market team', { type: 'supergroup' });
    fake.setAdmins(chat.id, [MAYA.id]);
    for (const id of IDS) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-room-reactions-'));
    const agents = IDS.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: You are the ${id}., telegram: { token: "${TOKENS[id]}" } }`).join('\n');
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20, reply_strategy: hybrid }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
  telegram: { enabled: true, api_root: "${fake.apiRoot}", auto_create_groups: false }
groups:
  - { title: Room, participants: [analyst, writer, critic], chats: [{ channel: web }, { channel: telegram, chat_id: "${chat.id}" }] }
`;
    const llm = new FakeLlm({ replies: { writer: (q) => (q.mustReply ? 'ok' : '[REACT 👍]') }, fallback: (q) => (q.mustReply ? 'ok' : '[PASS]') });
    const a = await createApp({ config: parseConfigText(yaml, 'test').config, llm, logger: silentLogger, store: new MemoryStore() });
    app = a;
    await a.start();
    const roomId = a.gateway.listGroups().find((g) => g.title === 'Room')!.id;
    return { chatId: chat.id, roomId };
  }

  it('home on the web page: an agent\'s [REACT 👍] on a person\'s message in the linked supergroup is set there by that agent\'s own bot', async () => {
    const { chatId, roomId } = await bootRoom();
    const said = fake!.humanSays(chatId, MAYA, 'We shipped the release tonight!');
    const shown = await waitUntil(() => fake!.reactions.set.find((r) => r.key === said.key), 'the writer\'s reaction on Telegram');
    // The writer's bot, on Maya's message by its id in that chat.
    expect(shown).toEqual({ bot: USERNAMES.writer, token: TOKENS.writer, chatId, messageId: said.messageId, key: said.key, emoji: ['👍'] });
    expect(fake!.callsOf('setMessageReaction').map((c) => c.bot)).toEqual([USERNAMES.writer]);
    await app!.router.idle();
    const entry = (await app!.gateway.messages(roomId, { limit: 50 })).find((e) => e.text === 'We shipped the release tonight!')!;
    expect(entry.reactions?.map((r) => [r.emoji, r.byKey])).toEqual([['👍', 'agent:writer']]);
    // A reaction is not a message: nothing was posted as text.
    expect(fake!.postsIn(chatId).filter((p) => p.text.includes('👍'))).toEqual([]);
  });
});

describe('telegram: reactions at the adapter', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  /** A started channel whose three bots are in a supergroup; `admins` are chat admins. */
  async function world(admins: AgentId[], opts: { type?: 'group' | 'supergroup'; logger?: CapturingLogger } = {}) {
    w = await makeWorld({ ...(opts.logger ? { logger: opts.logger } : {}) });
    const chat = w!.fake.createGroup('Desk', { type: opts.type ?? 'supergroup' });
    const bot = (id: AgentId) => w!.fake.state.bots.get(TOKENS[id])!.id;
    w!.fake.setAdmins(chat.id, [MAYA.id, ...admins.map(bot)]);
    for (const id of IDS) w!.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w!.channel.start(w!.host);
    await waitUntil(() => w!.host.memberships.length === 3 || undefined, 'joins');
    const ref: ChatRef = { channel: 'telegram', chatId: String(chat.id) };
    return { chatId: chat.id, ref };
  }

  const confirmed = () => waitUntil(() => [...w!.fake.unconfirmed().values()].every((n) => n === 0) || undefined, 'all confirmed');
  const changes = () => w!.host.reactions.map((r) => [r.platformMessageId, r.emoji, r.on, r.by.id]);

  it('three admin bots, one hand-over per change; 👍 → 🎉 is one removal and one addition', async () => {
    const { chatId } = await world(['analyst', 'writer', 'critic']);
    const said = w!.fake.humanSays(chatId, MAYA, 'Numbers are in.');
    expect(w!.fake.humanReacts(chatId, MAYA, said.messageId, [], ['👍'])).toHaveLength(3);
    await confirmed();
    expect(changes()).toEqual([[String(said.messageId), '👍', true, String(MAYA.id)]]);
    expect(w!.host.reactions[0]).toEqual<PlatformReaction>({ channel: 'telegram', chatId: String(chatId), platformMessageId: String(said.messageId), by: { id: String(MAYA.id), name: 'Maya' }, emoji: '👍', on: true });

    w!.fake.humanReacts(chatId, MAYA, said.messageId, ['👍'], ['🎉']);
    await confirmed();
    expect(changes().slice(1)).toEqual([
      [String(said.messageId), '👍', false, String(MAYA.id)],
      [String(said.messageId), '🎉', true, String(MAYA.id)],
    ]);
    // The same change made twice in one second counts twice (off and on again in between).
    w!.fake.humanReacts(chatId, MAYA, said.messageId, ['🎉'], []);
    w!.fake.humanReacts(chatId, MAYA, said.messageId, [], ['🎉']);
    w!.fake.humanReacts(chatId, MAYA, said.messageId, ['🎉'], []);
    w!.fake.humanReacts(chatId, MAYA, said.messageId, [], ['🎉']);
    await confirmed();
    expect(changes().slice(3).map(([, e, on]) => [e, on])).toEqual([['🎉', false], ['🎉', true], ['🎉', false], ['🎉', true]]);
  });

  it('a basic group: a person\'s message by its shared key; an agent\'s post only through its own bot', async () => {
    const { chatId, ref } = await world(['analyst', 'writer'], { type: 'group' });
    const said = w!.fake.humanSays(chatId, MAYA, 'Basic numbers.');
    const inbound = await waitUntil(() => w!.host.received.find((m) => m.text === 'Basic numbers.'), 'the message');
    const posted = await w!.channel.postAsAgent({ ...ref, viaAgentId: 'writer' }, agentDef('writer'), 'A writer post.');
    const post = w!.fake.postsIn(chatId).find((p) => p.text === 'A writer post.')!;
    expect(posted.ids).toEqual([String(post.messageId)]);
    w!.fake.humanReacts(chatId, MAYA, said.messageId, [], ['👍']);
    w!.fake.humanReacts(chatId, MAYA, { key: post.key }, [], ['🔥']);
    await confirmed();
    expect(changes()).toEqual([
      [inbound.messageId, '👍', true, String(MAYA.id)],
      [posted.ids[0], '🔥', true, String(MAYA.id)],
    ]);
  });

  it('a store failure: every copy stays unconfirmed and comes again; then one hand-over', async () => {
    const { chatId } = await world(['analyst', 'writer']);
    let fail = 1;
    const attempts: PlatformReaction[] = [];
    const handle = w!.host.handle.bind(w!.host) as (ev: PlatformEvent) => Promise<unknown>;
    w!.host.handle = (async (ev: PlatformEvent) => {
      if (ev.kind === 'reaction') {
        attempts.push(ev.reaction);
        if (fail-- > 0) throw new StoreUnavailableError('cannot write: disk full');
      }
      return handle(ev);
    }) as CountingHost["handle"];
    const said = w!.fake.humanSays(chatId, MAYA, 'Numbers are in.');
    w!.fake.humanReacts(chatId, MAYA, said.messageId, [], ['👍']);
    await waitUntil(() => w!.host.reactions.length === 1 || undefined, 'recorded on the second delivery', 15_000);
    await confirmed();
    expect(attempts).toHaveLength(2);
    expect(changes()).toEqual([[String(said.messageId), '👍', true, String(MAYA.id)]]);
    // Both bots fetched it twice: nothing was confirmed before it was recorded.
    for (const id of ['analyst', 'writer'] as const) {
      const polls = w!.fake.callsOf('getUpdates', USERNAMES[id]).map((c) => c.payload.offset);
      expect(new Set(polls).size).toBeGreaterThan(1);
    }
  });

  it('a malformed message_reaction is a dead letter and confirmed; the next one is handed over', async () => {
    const logger = new CapturingLogger();
    const { chatId } = await world(['analyst'], { logger });
    const bot = w!.fake.state.bots.get(TOKENS.analyst)!;
    const updateId = bot.nextUpdateId;
    w!.fake.state.push(bot, { message_reaction: { chat: { id: chatId, type: 'supergroup', title: 'Desk' }, message_id: 5, date: 1_700_000_000, user: { id: MAYA.id, is_bot: false, first_name: 'Maya' }, old_reaction: [], new_reaction: 'thumbs up' } });
    const said = w!.fake.humanSays(chatId, MAYA, 'Numbers are in.');
    w!.fake.humanReacts(chatId, MAYA, said.messageId, [], ['👍']);
    await confirmed();
    expect(changes()).toEqual([[String(said.messageId), '👍', true, String(MAYA.id)]]);
    const line = logger.lines.find((l) => (l.obj as { updateId?: number }).updateId === updateId)!;
    expect(line.level).toBe('error');
    expect(JSON.stringify(line.obj)).toContain('message_reaction.new_reaction is not a list of reactions');
  });

  it('react: through the agent\'s own bot, mapped to Telegram\'s set; taking it back clears it; anything else is false', async () => {
    const logger = new CapturingLogger();
    const { chatId, ref } = await world([], { logger });
    const said = w!.fake.humanSays(chatId, MAYA, 'Numbers are in.');
    const id = String(said.messageId);
    expect(await w!.channel.react(ref, agentDef('writer'), id, '❤️', true)).toBe(true);
    expect(await w!.channel.react(ref, agentDef('analyst'), id, '👍🏽', true)).toBe(true);
    expect(w!.fake.reactions.set.map((s) => [s.bot, s.messageId, s.emoji])).toEqual([
      [USERNAMES.writer, said.messageId, ['❤']],
      [USERNAMES.analyst, said.messageId, ['👍']],
    ]);
    expect(w!.fake.callsOf('setMessageReaction', USERNAMES.writer)[0]!.payload).toEqual({ chat_id: chatId, message_id: said.messageId, reaction: [{ type: 'emoji', emoji: '❤' }] });
    expect(w!.fake.reactions.shownBy(said.key)).toEqual({ [USERNAMES.writer]: ['❤'], [USERNAMES.analyst]: ['👍'] });

    // One per bot: 🎉 replaces the writer's heart; taking the heart back then changes nothing.
    expect(await w!.channel.react(ref, agentDef('writer'), id, '🎉', true)).toBe(true);
    expect(await w!.channel.react(ref, agentDef('writer'), id, '❤️', false)).toBe(true);
    expect(w!.fake.reactions.shownBy(said.key)).toEqual({ [USERNAMES.writer]: ['🎉'], [USERNAMES.analyst]: ['👍'] });
    expect(await w!.channel.react(ref, agentDef('writer'), id, '🎉', false)).toBe(true);
    expect(w!.fake.reactions.shownBy(said.key)).toEqual({ [USERNAMES.analyst]: ['👍'] });
    const calls = w!.fake.callsOf('setMessageReaction').length;

    // Not one of Telegram's reaction emoji: false, and no call.
    expect(await w!.channel.react(ref, agentDef('writer'), id, '🦜', true)).toBe(false);
    expect(await w!.channel.react(ref, agentDef('writer'), id, '🏳️‍🌈', true)).toBe(false);
    expect(w!.fake.callsOf('setMessageReaction')).toHaveLength(calls);
    // Telegram refuses (no such message): logged, false, never thrown.
    expect(await w!.channel.react(ref, agentDef('writer'), '999999', '👍', true)).toBe(false);
    expect(logger.text()).toMatch(/could not set writer's reaction 👍: the message is gone.*400: Bad Request: message to react not found/);
    // An agent without a bot, and an id that is no Telegram message id.
    expect(await w!.channel.react(ref, { ...agentDef('editor'), telegram: undefined }, id, '👍', true)).toBe(false);
    expect(await w!.channel.react(ref, agentDef('writer'), 'web-123', '👍', true)).toBe(false);
    expect(w!.fake.callsOf('setMessageReaction')).toHaveLength(calls + 1);
  });

  it('react in a basic group: a person\'s message in the bot\'s own numbering; another bot\'s post is not its to name', async () => {
    const { chatId, ref } = await world([], { type: 'group' });
    const said = w!.fake.humanSays(chatId, MAYA, 'Basic numbers.');
    const inbound = await waitUntil(() => w!.host.received.find((m) => m.text === 'Basic numbers.'), 'the message');
    // Every bot's copy arrived (their own ids are kept as they come).
    await confirmed();
    const posted = await w!.channel.postAsAgent({ ...ref, viaAgentId: 'writer' }, agentDef('writer'), 'A writer post.');
    expect(await w!.channel.react(ref, agentDef('analyst'), inbound.messageId, '👍', true)).toBe(true);
    expect(await w!.channel.react(ref, agentDef('writer'), posted.ids[0]!, '🔥', true)).toBe(true);
    expect(await w!.channel.react(ref, agentDef('analyst'), posted.ids[0]!, '🔥', true)).toBe(false);
    const post = w!.fake.postsIn(chatId).find((p) => p.text === 'A writer post.')!;
    expect(w!.fake.reactions.shownBy(said.key)).toEqual({ [USERNAMES.analyst]: ['👍'] });
    expect(w!.fake.reactions.shownBy(post.key)).toEqual({ [USERNAMES.writer]: ['🔥'] });
  });
});

describe('telegram: reaction emoji', () => {
  it('our set is the fake\'s (Telegram\'s): 73 emoji', () => {
    expect([...TELEGRAM_REACTIONS].sort()).toEqual([...ALLOWED_REACTIONS].sort());
    expect(TELEGRAM_REACTIONS.size).toBe(73);
  });

  it('out: the same symbol in another form is mapped; anything else is not', () => {
    expect(telegramReaction('❤️')).toBe('❤');
    expect(telegramReaction('❤')).toBe('❤');
    expect(telegramReaction('👍🏽')).toBe('👍');
    expect(telegramReaction('🤷🏽‍♀️')).toBe('🤷‍♀');
    expect(telegramReaction('❤️‍🔥')).toBe('❤‍🔥');
    expect(telegramReaction('👨🏿‍💻')).toBe('👨‍💻');
    expect(telegramReaction('☃️')).toBe('☃');
    for (const e of ['🦜', '🏳️‍🌈', '🇫🇷', 'ok', '', '👍👍']) expect(telegramReaction(e)).toBeUndefined();
  });

  it('in: Telegram\'s forms are written fully qualified, and map back', () => {
    expect(qualifiedEmoji('❤')).toBe('❤️');
    expect(qualifiedEmoji('🤷‍♂')).toBe('🤷‍♂️');
    expect(qualifiedEmoji('❤‍🔥')).toBe('❤️‍🔥');
    expect(qualifiedEmoji('👍')).toBe('👍');
    expect(qualifiedEmoji('⚡')).toBe('⚡');
    for (const e of TELEGRAM_REACTIONS) expect(telegramReaction(qualifiedEmoji(e))).toBe(e);
  });
});

describe('chorus doctor: admin bots and reactions', () => {
  it('warns for a group where no agent\'s bot is an admin; where one is, the others are an info line', async () => {
    const fake = await FakeTelegram.start();
    try {
      const bots = Object.fromEntries(IDS.map((id) => [id, fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name })]));
      const led = fake.createGroup('Led');
      const bare = fake.createGroup('Bare');
      for (const id of IDS) fake.addBotToChat(led.id, TOKENS[id], MAYA);
      fake.addBotToChat(bare.id, TOKENS.critic, MAYA);
      fake.setAdmins(led.id, [bots.writer!.id]);
      const agents = IDS.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: p, telegram: { token: "${TOKENS[id]}" } }`).join('\n');
      const { config } = parseConfigText(`llm: { provider: scripted }\nagents:\n${agents}\nchannels:\n  telegram: { enabled: true, api_root: "${fake.apiRoot}" }\n`, 'test', {});
      const lines = (
        await checkTelegram(config, [
          { chatId: String(led.id), title: 'Led', participants: [...IDS] },
          { chatId: String(bare.id), title: 'Bare', participants: ['critic'] },
        ])
      ).map(formatFinding);
      const about = (prefix: string) => lines.filter((l) => l.startsWith(prefix) && /reactions/.test(l));
      expect(about(`· telegram analyst in "Led"`)).toEqual([`· telegram analyst in "Led" (${led.id}): @${USERNAMES.analyst} is not an admin, so Telegram sends it no reactions; Chorus sees them through @${USERNAMES.writer}`]);
      expect(about(`· telegram critic in "Led"`)).toHaveLength(1);
      expect(lines.filter((l) => l.includes('telegram writer in "Led"'))).toEqual([`✔ telegram writer in "Led" (${led.id}): @${USERNAMES.writer} is an admin and reads every message`]);
      expect(about(`! telegram critic in "Bare"`)).toEqual([
        `! telegram critic in "Bare" (${bare.id}): @${USERNAMES.critic} is not an admin, and no other agent's bot in this group is: Telegram sends people's reactions only to admin bots, so Chorus sees none here — fix: make @${USERNAMES.critic} an admin to see reactions (one admin bot per group is enough)`,
      ]);
    } finally {
      await fake.close();
    }
  });
});
