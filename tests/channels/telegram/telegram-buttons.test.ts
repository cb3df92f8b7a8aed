/**
 * Approve / Deny buttons, adapter level: the inline keyboard under a request for approval (through
 * the agent's own bot), a press handed to the host as the typed command, redelivered presses, the
 * buttons taken away once a decision line is posted, polling and webhook — and the fake Bot API's
 * rules for keyboards, callback answers and markup edits. The whole app is in telegram-tools.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../../src/core/types.js';
import { approvalKeyboard } from '../../../src/channels/telegram/approvals.js';
import { approvalPlainText, type ApprovalRequest } from '../../../src/core/text/approvalText.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { CapturingLogger } from '../../helpers/logger.js';
import { agentDef, CountingHost, makeWorld, MAYA, TOKENS, USERNAMES, waitUntil, type AgentId, type World } from './harness.js';
import { roundRobin, webhookInstance, type Instance } from './webhook-harness.js';

const KEYBOARD = (id: string) => [[{ text: '✅ Approve', callback_data: `tool:a:${id}` }, { text: '⛔ Deny', callback_data: `tool:d:${id}` }]];
const ASK = (id: string, more: Partial<ApprovalRequest> = {}): ApprovalRequest => ({ id, head: '🔧 Analyst wants to use orders.cancel', args: '{\n  "id": 42\n}', how: `Approve with /approve ${id} or refuse with /deny ${id}`, ...more });
const REQUEST = approvalPlainText(ASK('t12'));

async function api(fake: FakeTelegram, token: string, method: string, body: Record<string, unknown>): Promise<{ ok: boolean; description?: string; result?: unknown }> {
  const res = await fetch(`${fake.apiRoot}/bot${token}/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await res.json()) as { ok: boolean; description?: string };
}

describe('telegram adapter: approval buttons', () => {
  let w: World | undefined;
  let inst: Instance | undefined;
  let fake: FakeTelegram | undefined;
  afterEach(async () => {
    await w?.close();
    await inst?.close();
    await fake?.close();
    w = inst = fake = undefined;
  });

  async function setup(opts: { forum?: boolean; logger?: CapturingLogger } = {}) {
    w = await makeWorld({ logger: opts.logger });
    const chat = w.fake.createGroup('Market team', { forum: opts.forum ?? false });
    for (const id of ['analyst', 'writer', 'critic'] as const) w.fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await w.channel.start(w.host);
    await waitUntil(() => w!.host.memberships.length === 3 || undefined, 'three joins');
    const ref: ChatRef = { channel: 'telegram', chatId: String(chat.id) };
    return { chat, ref, analyst: w.agents[0]! };
  }

  it('posts a request for approval with Approve / Deny through the agent\'s bot; other posts have no keyboard', async () => {
    const { chat, ref, analyst } = await setup();
    await w!.channel.postAsAgent(ref, analyst, REQUEST, { approval: ASK('t12') });
    await w!.channel.postAsAgent(ref, analyst, 'A plain reply.');
    await w!.channel.postAsSystem(ref, 'A notice.', { approval: ASK('t12') });
    const posts = w!.fake.postsIn(chat.id);
    expect(posts.map((p) => [p.bot, p.keyboard])).toEqual([
      [USERNAMES.analyst, KEYBOARD('t12')],
      [USERNAMES.analyst, undefined],
      [expect.any(String), undefined],
    ]);
    expect(posts[0]!.text).toBe(REQUEST);
    // Every bot asks Telegram for button presses.
    for (const id of ['analyst', 'writer', 'critic'] as const) {
      const first = w!.fake.callsOf('getUpdates', USERNAMES[id])[0]!;
      expect(first.payload.allowed_updates).toEqual(['message', 'edited_message', 'my_chat_member', 'callback_query', 'message_reaction']);
    }
  });

  it('a long request carries its buttons on the last chunk only; an id too long for 64 bytes gets none', async () => {
    const { chat, ref, analyst } = await setup();
    const args = JSON.stringify({ note: 'word '.repeat(1000) }, null, 2);
    await w!.channel.postAsAgent(ref, analyst, approvalPlainText(ASK('t12', { args })), { approval: ASK('t12', { args }) });
    expect(w!.fake.postsIn(chat.id).map((p) => p.keyboard)).toEqual([undefined, KEYBOARD('t12')]);
    expect(approvalKeyboard('t'.repeat(57))).toBeDefined();
    expect(approvalKeyboard('t'.repeat(58))).toBeUndefined();
  });

  it('a press reaches the host as the typed command, is answered, and a redelivery of it is a duplicate', async () => {
    const { chat, ref, analyst } = await setup();
    await w!.channel.postAsAgent(ref, analyst, REQUEST, { approval: ASK('t12') });
    const request = w!.fake.postsIn(chat.id)[0]!;
    const before = Date.now();
    const queryId = w!.fake.press(request, MAYA, '✅ Approve');
    await waitUntil(() => w!.fake.answers.length === 1 || undefined, 'answer');
    const got = w!.host.received.at(-1)!;
    expect(got).toEqual({
      channel: 'telegram',
      chatId: String(chat.id),
      messageId: `cb:${queryId}`,
      author: { id: String(MAYA.id), name: 'Maya' },
      text: '/approve t12',
      ts: expect.any(Number),
      threadId: undefined,
      viaAgentId: 'analyst',
      isPrivate: undefined,
      chatTitle: 'Market team',
    });
    expect(got.ts).toBeGreaterThanOrEqual(before);
    // The host answered "recorded" without a decision line: the person is told it was sent.
    expect(w!.fake.answers).toEqual([{ bot: USERNAMES.analyst, queryId, text: 'Approval sent.', showAlert: false }]);
    // Only the bot that posted the buttons got the press.
    expect(w!.host.attempts.filter((m) => m.messageId.startsWith('cb:')).map((m) => m.viaAgentId)).toEqual(['analyst']);

    w!.fake.redeliverPress(queryId);
    await waitUntil(() => w!.host.attempts.filter((m) => m.messageId === `cb:${queryId}`).length === 2 || undefined, 'redelivery');
    await waitUntil(() => w!.fake.unconfirmed().get(USERNAMES.analyst) === 0 || undefined, 'redelivery confirmed');
    expect(w!.host.received.filter((m) => m.messageId === `cb:${queryId}`)).toHaveLength(1);
    // Telegram refuses a second answer of one query; the adapter lets it be.
    expect(w!.fake.answers).toHaveLength(1);
    expect(w!.fake.callsOf('answerCallbackQuery')).toHaveLength(2);
  });

  it('Deny sends /deny; a press in a forum topic carries the topic', async () => {
    const { chat, ref, analyst } = await setup({ forum: true });
    const topic = w!.fake.createTopic(chat.id, 'Orders');
    await w!.channel.postAsAgent({ ...ref, threadId: String(topic) }, analyst, REQUEST, { approval: ASK('t12') });
    const request = w!.fake.postsIn(chat.id)[0]!;
    expect(request.threadId).toBe(topic);
    w!.fake.press(request, MAYA, 'tool:d:t12');
    await waitUntil(() => w!.fake.answers.length === 1 || undefined, 'answer');
    expect(w!.host.received.at(-1)).toMatchObject({ text: '/deny t12', threadId: String(topic), viaAgentId: 'analyst' });
    expect(w!.fake.answers[0]!.text).toBe('Refusal sent.');
  });

  it('the decision line takes the buttons away, once; buttons of other calls stay', async () => {
    const { chat, ref, analyst } = await setup();
    await w!.channel.postAsAgent(ref, analyst, REQUEST, { approval: ASK('t12') });
    await w!.channel.postAsAgent(ref, analyst, REQUEST.replaceAll('t12', 't14'), { approval: ASK('t14') });
    const [first, second] = w!.fake.postsIn(chat.id);
    await w!.channel.postAsSystem(ref, '✅ Maya approved orders.cancel (t12)');
    await waitUntil(() => w!.fake.edits.length === 1 || undefined, 'markup edit');
    expect(w!.fake.edits).toEqual([{ bot: USERNAMES.analyst, chatId: chat.id, messageId: first!.messageId, keyboard: [] }]);
    expect(w!.fake.keyboardOf(first!)).toEqual([]);
    expect(w!.fake.keyboardOf(second!)).toEqual(KEYBOARD('t14'));
    // Nobody can press a button that is gone.
    expect(() => w!.fake.press(first!, MAYA, '✅ Approve')).toThrow(/no button/);
    await w!.channel.postAsSystem(ref, '✅ Maya approved orders.cancel (t12)');
    await new Promise((r) => setTimeout(r, 50));
    expect(w!.fake.callsOf('editMessageReplyMarkup')).toHaveLength(1);
  });

  it('a malformed press is kept as a dead letter and confirmed; presses behind it are handed over', async () => {
    const logger = new CapturingLogger();
    const { chat, ref, analyst } = await setup({ logger });
    await w!.channel.postAsAgent(ref, analyst, REQUEST, { approval: ASK('t12') });
    const bot = w!.fake.state.bots.get(TOKENS.analyst)!;
    const updateId = bot.nextUpdateId;
    w!.fake.state.push(bot, { callback_query: { id: '991', chat_instance: '-1', data: 'tool:a:t12' } });
    const queryId = w!.fake.press(w!.fake.postsIn(chat.id)[0]!, MAYA, '✅ Approve');
    await waitUntil(() => w!.host.received.some((m) => m.messageId === `cb:${queryId}`) || undefined, 'the press behind it');
    await waitUntil(() => w!.fake.unconfirmed().get(USERNAMES.analyst) === 0 || undefined, 'all confirmed');
    const line = logger.lines.find((l) => l.level === 'error' && (l.obj as { updateId?: number }).updateId === updateId);
    expect(line?.obj).toMatchObject({ reason: 'callback_query.from has no numeric id' });
  });

  it('webhook mode: Telegram is asked for presses, and a press arrives by POST', async () => {
    fake = await FakeTelegram.start();
    const ids: AgentId[] = ['analyst', 'writer'];
    for (const id of ids) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    const agents = ids.map((id) => agentDef(id));
    const host = new CountingHost(agents);
    inst = await webhookInstance(fake, agents);
    roundRobin(fake, [inst]);
    await inst.channel.start(host);
    const chat = fake.createGroup('Market team');
    for (const id of ids) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    await waitUntil(() => host.memberships.length === 2 || undefined, 'joins');
    for (const id of ids) expect(fake.callsOf('setWebhook', USERNAMES[id])[0]!.payload.allowed_updates).toContain('callback_query');
    await inst.channel.postAsAgent({ channel: 'telegram', chatId: String(chat.id) }, agents[0]!, REQUEST, { approval: ASK('t12') });
    const queryId = fake.press(fake.postsIn(chat.id)[0]!, MAYA, '✅ Approve');
    await waitUntil(() => fake!.answers.length === 1 || undefined, 'answer');
    expect(host.received.at(-1)).toMatchObject({ messageId: `cb:${queryId}`, text: '/approve t12', viaAgentId: 'analyst' });
    expect(fake.deliveries.filter((d) => d.bot === USERNAMES.analyst).at(-1)!.status).toBe(200);
  });
});

describe('fake Bot API: inline keyboards', () => {
  let fake: FakeTelegram | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  async function world() {
    fake = await FakeTelegram.start();
    fake.addBot({ token: TOKENS.analyst, username: USERNAMES.analyst, firstName: 'Analyst' });
    fake.addBot({ token: TOKENS.writer, username: USERNAMES.writer, firstName: 'Writer' });
    const chat = fake.createGroup('Market team');
    fake.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    fake.addBotToChat(chat.id, TOKENS.writer, MAYA);
    return { fake, chat };
  }

  it('checks callback_data: 1 to 64 bytes, else 400 BUTTON_DATA_INVALID', async () => {
    const { fake: f, chat } = await world();
    const send = (data: string) => api(f, TOKENS.analyst, 'sendMessage', { chat_id: chat.id, text: 'x', reply_markup: { inline_keyboard: [[{ text: 'B', callback_data: data }]] } });
    expect(await send('é'.repeat(32))).toMatchObject({ ok: true });
    expect(await send('é'.repeat(33))).toEqual({ ok: false, error_code: 400, description: 'Bad Request: BUTTON_DATA_INVALID' });
    expect(await send('')).toMatchObject({ ok: false, description: 'Bad Request: BUTTON_DATA_INVALID' });
    expect(f.postsIn(chat.id)).toHaveLength(1);
    expect(f.postsIn(chat.id)[0]!.keyboard).toEqual([[{ text: 'B', callback_data: 'é'.repeat(32) }]]);
  });

  it('answerCallbackQuery: once, by the bot that got the press, within 15 minutes', async () => {
    const { fake: f, chat } = await world();
    await api(f, TOKENS.analyst, 'sendMessage', { chat_id: chat.id, text: 'x', reply_markup: { inline_keyboard: [[{ text: 'B', callback_data: 'b' }]] } });
    const post = f.postsIn(chat.id)[0]!;
    const q1 = f.press(post, MAYA, 'B');
    const updates = (await api(f, TOKENS.analyst, 'getUpdates', {})).result as Array<Record<string, unknown>>;
    expect(updates.at(-1)!.callback_query).toMatchObject({
      id: q1,
      from: { id: MAYA.id, is_bot: false, first_name: 'Maya' },
      message: { message_id: post.messageId, chat: { id: chat.id }, reply_markup: { inline_keyboard: [[{ text: 'B', callback_data: 'b' }]] } },
      chat_instance: expect.any(String),
      data: 'b',
    });
    // The other bot in the chat never hears of it.
    const writerUpdates = (await api(f, TOKENS.writer, 'getUpdates', {})).result as Array<Record<string, unknown>>;
    expect(writerUpdates.some((u) => 'callback_query' in u)).toBe(false);
    const tooOld = 'Bad Request: query is too old and response timeout expired or query ID is invalid';
    expect(await api(f, TOKENS.writer, 'answerCallbackQuery', { callback_query_id: q1 })).toMatchObject({ ok: false, description: tooOld });
    expect(await api(f, TOKENS.analyst, 'answerCallbackQuery', { callback_query_id: q1, text: 'Done' })).toMatchObject({ ok: true });
    expect(await api(f, TOKENS.analyst, 'answerCallbackQuery', { callback_query_id: q1 })).toMatchObject({ ok: false, description: tooOld });
    const q2 = f.press(post, MAYA, 'b');
    const t0 = Date.now();
    f.buttons.now = () => t0 + 15 * 60 * 1000 + 1000;
    expect(await api(f, TOKENS.analyst, 'answerCallbackQuery', { callback_query_id: q2 })).toMatchObject({ ok: false, description: tooOld });
    expect(f.answers).toEqual([{ bot: USERNAMES.analyst, queryId: q1, text: 'Done', showAlert: false }]);
  });

  it('editMessageReplyMarkup: only the sender, 400 when nothing changes', async () => {
    const { fake: f, chat } = await world();
    await api(f, TOKENS.analyst, 'sendMessage', { chat_id: chat.id, text: 'x', reply_markup: { inline_keyboard: [[{ text: 'B', callback_data: 'b' }]] } });
    const post = f.postsIn(chat.id)[0]!;
    const none = { chat_id: chat.id, message_id: post.messageId, reply_markup: { inline_keyboard: [] } };
    expect(await api(f, TOKENS.writer, 'editMessageReplyMarkup', none)).toMatchObject({ ok: false, description: "Bad Request: message can't be edited" });
    expect(await api(f, TOKENS.analyst, 'editMessageReplyMarkup', { ...none, message_id: 999 })).toMatchObject({ ok: false, description: 'Bad Request: message to edit not found' });
    const edited = await api(f, TOKENS.analyst, 'editMessageReplyMarkup', none);
    expect(edited.ok).toBe(true);
    expect((edited.result as Record<string, unknown>).reply_markup).toBeUndefined();
    expect(await api(f, TOKENS.analyst, 'editMessageReplyMarkup', none)).toMatchObject({ ok: false, description: expect.stringMatching(/^Bad Request: message is not modified/) });
    expect(f.edits).toEqual([{ bot: USERNAMES.analyst, chatId: chat.id, messageId: post.messageId, keyboard: [] }]);
    expect(f.keyboardOf(post)).toEqual([]);
  });
});
