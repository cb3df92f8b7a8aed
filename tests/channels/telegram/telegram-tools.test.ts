/**
 * Tool calls on Telegram, end to end: the real app (router, store, commands, the tool loop) with
 * a model scripted to call tools and tools in memory, the Telegram channel talking to the fake
 * Bot API through real grammY bots. A call that needs approval is asked for by the agent's own bot
 * with Approve / Deny buttons; people press them (or type the command); what the chat shows of
 * finished steps follows `show_tools`. Assertions are on what the fake platform shows.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { GroupConfig } from '../../../src/core/types.js';
import type { ToolCall } from '../../../src/core/toolTypes.js';
import { callDigest } from '../../../src/core/text/approvalText.js';
import { FakeTelegram, type Posted } from '../../fakes/telegram/FakeTelegram.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryTools, StepLlm, type Step } from '../../helpers/tool-fakes.js';
import { agentDef, MAYA, TOKENS, TOM, USERNAMES, waitUntil, telegramAppYaml, type AgentId } from './harness.js';

const IDS: AgentId[] = ['analyst', 'writer', 'critic'];
const call = (id: string, name: string, input: Record<string, unknown> = { id: 42 }): ToolCall => ({ id, name, input });
const KEYBOARD = (id: string, digest: string) => [[{ text: '✅ Approve', callback_data: `tool:a:${id}:${digest}` }, { text: '⛔ Deny', callback_data: `tool:d:${id}:${digest}` }]];
const NOT_ADMIN = 'only chat admins may approve or deny orders.cancel';

describe('telegram: tool calls and approval buttons (real app)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let tools: MemoryTools;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  /** The app with the analyst scripted to `steps`; a group of three where Maya (not Tom) is an admin. */
  async function boot(steps: Step[], config: Partial<GroupConfig> = {}) {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-tools-'));
    const { config: cfg } = parseConfigText(telegramAppYaml({ dataDir, apiRoot: fake.apiRoot, agents: IDS }), 'test', {});
    tools = new MemoryTools();
    app = await createApp({ config: cfg, llm: new StepLlm(steps), tools, logger: silentLogger });
    await app.start();
    const chat = fake.createGroup('Orders desk');
    fake.setAdmins(chat.id, [MAYA.id]);
    for (const id of IDS) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === 3), 'group of three');
    await waitUntil(() => fake!.postsIn(chat.id).some((p) => p.text.includes('is ready')) || undefined, 'greeting');
    await app.gateway.updateConfig(g.id, { reply_strategy: 'mention_only', ...config });
    await app.router.idle();
    return { chatId: chat.id, groupId: g.id, start: fake.postsIn(chat.id).length };
  }

  /** The analyst's request for approval (the post with buttons), its call id and the digest it shows. */
  async function request(chatId: number, after: number): Promise<{ post: Posted; id: string; digest: string }> {
    const post = await waitUntil(() => fake!.postsIn(chatId).slice(after).find((p) => p.keyboard), 'request for approval');
    const m = /Approve with \/approve (\S+) or refuse with \/deny \1 \(arguments #([0-9a-f]{10})\)$/.exec(post.text);
    if (!m) throw new Error(`no call id in "${post.text}"`);
    return { post, id: m[1]!, digest: m[2]! };
  }

  const postsAfter = (chatId: number, post: Posted) => fake!.postsIn(chatId).filter((p) => p.key > post.key).map((p) => [p.bot, p.text]);
  const reply = (chatId: number, text: string) => waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === text) || undefined, `"${text}"`);

  it('the request comes from the agent\'s bot with buttons; an admin\'s Approve runs the tool once, answers, takes the buttons away, and the reply follows', async () => {
    const { chatId, start } = await boot([{ text: 'Cancelling.', calls: [call('c1', 'orders__cancel')] }, 'Order 42 is cancelled.']);
    fake!.humanSays(chatId, MAYA, '@analyst cancel order 42');
    const { post, id, digest } = await request(chatId, start);
    expect(post.bot).toBe(USERNAMES.analyst);
    expect(post.text).toBe(`🔧 Analyst wants to use orders.cancel\n{\n  "id": 42\n}\nApprove with /approve ${id} or refuse with /deny ${id} (arguments #${digest})`);
    expect(digest).toBe(callDigest('orders', 'cancel', { id: 42 }));
    expect(post.keyboard).toEqual(KEYBOARD(id, digest));
    expect(tools.cancelled).toBe(0);

    const queryId = fake!.press(post, MAYA, '✅ Approve');
    await reply(chatId, 'Order 42 is cancelled.');
    await app!.router.idle();
    expect(tools.cancelled).toBe(1);
    expect(fake!.answers).toEqual([{ bot: USERNAMES.analyst, queryId, text: 'Approved', showAlert: false }]);
    expect(fake!.edits).toEqual([{ bot: USERNAMES.analyst, chatId, messageId: post.messageId, keyboard: [] }]);
    expect(fake!.keyboardOf(post)).toEqual([]);
    expect(postsAfter(chatId, post)).toEqual([
      [expect.any(String), `✅ Maya approved orders.cancel (${id})`],
      [USERNAMES.analyst, '🔧 Analyst used orders.cancel'],
      [USERNAMES.analyst, 'Order 42 is cancelled.'],
    ]);
    // The press is the command in the group's log, by Maya, hidden from the agents.
    const log = await app!.gateway.messages(app!.gateway.listGroups()[0]!.id, { limit: 50 });
    expect(log.find((e) => e.platformMessageId === `cb:${queryId}`)).toMatchObject({ kind: 'human', authorName: 'Maya', text: `/approve ${id} ${digest}`, hiddenFromAgents: true });
  });

  it('a non-admin\'s press does not approve and is told why; Deny by an admin refuses the call', async () => {
    const { chatId, start } = await boot([{ calls: [call('c1', 'orders__cancel')] }, 'I was not allowed to cancel it.']);
    fake!.humanSays(chatId, MAYA, '@analyst cancel order 42');
    const { post, id, digest } = await request(chatId, start);

    const tomQuery = fake!.press(post, TOM, '✅ Approve');
    await waitUntil(() => fake!.answers.length === 1 || undefined, 'answer to Tom');
    expect(fake!.answers[0]).toEqual({ bot: USERNAMES.analyst, queryId: tomQuery, text: NOT_ADMIN, showAlert: true });
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === `⚠ ${NOT_ADMIN}`) || undefined, 'the refusal in the chat');
    expect(tools.cancelled).toBe(0);
    // The call still waits: its buttons stay for an admin.
    expect(fake!.keyboardOf(post)).toEqual(KEYBOARD(id, digest));
    expect(fake!.callsOf('editMessageReplyMarkup')).toEqual([]);

    const mayaQuery = fake!.press(post, MAYA, '⛔ Deny');
    await reply(chatId, 'I was not allowed to cancel it.');
    await app!.router.idle();
    expect(tools.cancelled).toBe(0);
    expect(fake!.answers[1]).toEqual({ bot: USERNAMES.analyst, queryId: mayaQuery, text: 'Denied', showAlert: false });
    expect(fake!.keyboardOf(post)).toEqual([]);
    expect(postsAfter(chatId, post).map(([, text]) => text)).toEqual([
      `⚠ ${NOT_ADMIN}`,
      `⛔ Maya denied orders.cancel (${id})`,
      '🔧 Analyst used orders.cancel (not approved)',
      'I was not allowed to cancel it.',
    ]);
  });

  it('the same press delivered twice makes one decision', async () => {
    const { chatId, start } = await boot([{ calls: [call('c1', 'orders__cancel')] }, 'Done.']);
    fake!.humanSays(chatId, MAYA, '@analyst cancel order 42');
    const { post, id } = await request(chatId, start);
    const queryId = fake!.press(post, MAYA, '✅ Approve');
    await reply(chatId, 'Done.');
    fake!.redeliverPress(queryId);
    await waitUntil(() => fake!.callsOf('answerCallbackQuery').length === 2 || undefined, 'the redelivery handled');
    await waitUntil(() => fake!.unconfirmed().get(USERNAMES.analyst) === 0 || undefined, 'the redelivery confirmed');
    await app!.router.idle();
    expect(tools.cancelled).toBe(1);
    expect(fake!.postsIn(chatId).filter((p) => p.text.startsWith('✅')).map((p) => p.text)).toEqual([`✅ Maya approved orders.cancel (${id})`]);
    // Telegram refused a second answer to the same query; one answer stands.
    expect(fake!.answers.map((a) => a.text)).toEqual(['Approved']);
    expect(fake!.callsOf('editMessageReplyMarkup')).toHaveLength(1);
  });

  it('a press after the call expired (its turn is over) is told so, does not run it, and its buttons go', async () => {
    const { chatId, start } = await boot([{ calls: [call('c1', 'orders__cancel')] }, 'Nobody approved it.'], { tool_approval_timeout_seconds: 0.3 });
    fake!.humanSays(chatId, MAYA, '@analyst cancel order 42');
    const { post, id, digest } = await request(chatId, start);
    await reply(chatId, 'Nobody approved it.');
    await app!.router.idle();
    expect(fake!.keyboardOf(post)).toEqual(KEYBOARD(id, digest));
    const queryId = fake!.press(post, MAYA, '✅ Approve');
    await waitUntil(() => fake!.answers.length === 1 || undefined, 'answer');
    expect(fake!.answers[0]).toEqual({ bot: USERNAMES.analyst, queryId, text: `tool call ${id} no longer waits for a decision`, showAlert: true });
    await waitUntil(() => fake!.edits.length === 1 || undefined, 'buttons taken away');
    expect(fake!.keyboardOf(post)).toEqual([]);
    expect(tools.cancelled).toBe(0);
  });

  it('/approve typed as a message works too (every bot gets it; one decision), and the buttons go', async () => {
    const { chatId, start } = await boot([{ calls: [call('c1', 'orders__cancel')] }, 'Cancelled.']);
    fake!.humanSays(chatId, MAYA, '@analyst cancel order 42');
    const { post, id } = await request(chatId, start);
    fake!.humanSays(chatId, MAYA, `/approve ${id}`);
    await reply(chatId, 'Cancelled.');
    await app!.router.idle();
    expect(tools.cancelled).toBe(1);
    expect(postsAfter(chatId, post).map(([, text]) => text)).toEqual([`✅ Maya approved orders.cancel (${id})`, '🔧 Analyst used orders.cancel', 'Cancelled.']);
    await waitUntil(() => fake!.edits.length === 1 || undefined, 'buttons taken away');
    expect(fake!.keyboardOf(post)).toEqual([]);
    expect(fake!.answers).toEqual([]);
  });

  it('in a private chat the person approves their own agent\'s call with the button', async () => {
    const { chatId } = await boot([{ calls: [call('c1', 'orders__cancel')] }, 'Cancelled it for you.']);
    fake!.humanDms(TOKENS.analyst, TOM, 'cancel order 42');
    const post = await waitUntil(() => fake!.postsIn(TOM.id).find((p) => p.keyboard), 'request in the DM');
    expect(post.bot).toBe(USERNAMES.analyst);
    const queryId = fake!.press(post, TOM, '✅ Approve');
    await waitUntil(() => fake!.postsIn(TOM.id).some((p) => p.text === 'Cancelled it for you.') || undefined, 'reply in the DM');
    expect(tools.cancelled).toBe(1);
    expect(fake!.answers).toEqual([{ bot: USERNAMES.analyst, queryId, text: 'Approved', showAlert: false }]);
    expect(fake!.keyboardOf(post)).toEqual([]);
    expect(fake!.postsIn(chatId).some((p) => p.text.includes('approved'))).toBe(false);
  });

  it('show_tools: none posts no line for a finished step, compact one line, full the arguments and the result', async () => {
    const { chatId, groupId } = await boot([
      { calls: [call('c1', 'orders__lookup')] }, 'Shipped (none).',
      { calls: [call('c2', 'orders__lookup')] }, 'Shipped (compact).',
      { calls: [call('c3', 'orders__lookup')] }, 'Shipped (full).',
    ]);
    const shown: Record<string, string[]> = {};
    for (const mode of ['none', 'compact', 'full'] as const) {
      await app!.gateway.updateConfig(groupId, { show_tools: mode });
      const before = fake!.postsIn(chatId).length;
      fake!.humanSays(chatId, MAYA, '@analyst where is order 42?');
      await reply(chatId, `Shipped (${mode}).`);
      await app!.router.idle();
      shown[mode] = fake!.postsIn(chatId).slice(before).filter((p) => p.bot === USERNAMES.analyst).map((p) => p.text);
    }
    expect(tools.lookups).toBe(3);
    expect(shown).toEqual({
      none: ['Shipped (none).'],
      compact: ['🔧 Analyst used orders.lookup', 'Shipped (compact).'],
      full: ['🔧 Analyst used orders.lookup\n{\n "id": 42\n}\n→ order 42 shipped', 'Shipped (full).'],
    });
  });
});
