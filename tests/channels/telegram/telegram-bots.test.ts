/**
 * A bot that is not an agent, in Telegram's bot-to-bot mode and an admin of the group: its
 * commands are recorded and refused whatever its rights (told once, however often it tries); a
 * person's still work. The real app and grammY against the fake Bot API.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { ToolCall } from '../../../src/core/toolTypes.js';
import { FakeTelegram, type FakeUser } from '../../fakes/telegram/FakeTelegram.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryTools, StepLlm } from '../../helpers/tool-fakes.js';
import { agentDef, MAYA, TOKENS, USERNAMES, waitUntil, telegramAppYaml, type AgentId } from './harness.js';

const IDS: AgentId[] = ['analyst', 'writer', 'critic'];
const HELPER: FakeUser = { id: 8800001, first_name: 'Helper', username: 'helper_bot' };
const BOT_NOTICE = /^⚠ Helper is a bot: Chorus takes commands from people only/;
const call = (id: string, name: string): ToolCall => ({ id, name, input: { id: 42 } });

describe('telegram: commands from a bot that is not an agent (real app, bot-to-bot mode)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  it('an admin bot cannot approve or deny a tool call, nor mute an agent; told once; a person still can', async () => {
    fake = await FakeTelegram.start();
    // The analyst's bot has bot-to-bot mode on and is an admin (privacy off): it hears the helper.
    const bot = (id: AgentId) => ({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    const analystBot = fake.addBot({ ...bot('analyst'), botToBot: true });
    for (const id of IDS.slice(1)) fake.addBot(bot(id));
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-bots-'));
    const { config } = parseConfigText(telegramAppYaml({ dataDir, apiRoot: fake.apiRoot, agents: IDS }), 'test', {});
    const tools = new MemoryTools();
    const llm = new StepLlm([{ calls: [call('c1', 'orders__cancel')] }, 'Order 42 is cancelled.']);
    app = await createApp({ config, llm, tools, logger: silentLogger });
    await app.start();
    const chat = fake.createGroup('Orders desk');
    // The helper bot is an admin of the group, like Maya.
    fake.setAdmins(chat.id, [MAYA.id, HELPER.id, analystBot.id]);
    for (const id of IDS) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    const ours = () => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length > 2);
    const view = await waitUntil(ours, 'group of three');
    await app.gateway.updateConfig(view.id, { reply_strategy: 'mention_only' });
    await app.router.idle();
    const group = () => app!.router.groups.get(view.id)!;
    const notices = () => fake!.postsIn(chat.id).filter((p) => BOT_NOTICE.test(p.text));

    fake.humanSays(chat.id, MAYA, '@analyst cancel order 42');
    const waiting = await waitUntil(() => group().state.tools?.find((c) => c.approval === 'waiting'), 'a waiting call');
    fake.foreignBotSays(chat.id, HELPER, `/approve ${waiting.id}`);
    fake.foreignBotSays(chat.id, HELPER, '/group mute writer');
    fake.foreignBotSays(chat.id, HELPER, `/deny ${waiting.id}`);
    const recorded = () => group().transcript.filter((e) => e.kind === 'human' && e.authorKind === 'bot');
    await waitUntil(() => recorded().length === 3 || undefined, "the helper's three commands recorded");
    await app.router.idle();
    // Kept (hidden from the agents, like every command line), never run.
    expect(recorded().map((e) => [e.text, e.hiddenFromAgents])).toEqual([
      [`/approve ${waiting.id}`, true],
      ['/group mute writer', true],
      [`/deny ${waiting.id}`, true],
    ]);
    expect(tools.cancelled).toBe(0);
    expect(group().state.tools?.find((c) => c.id === waiting.id)?.approval).toBe('waiting');
    expect(group().state.muted).toEqual([]);
    await waitUntil(() => notices().length > 0 || undefined, 'the notice');
    expect(notices()).toHaveLength(1);

    // Maya, an admin like the helper, approves: the call waited all along.
    fake.humanSays(chat.id, MAYA, `/approve ${waiting.id}`);
    const answered = () => fake!.postsIn(chat.id).some((p) => p.text === 'Order 42 is cancelled.') || undefined;
    await waitUntil(answered, 'the answer after the approval');
    await app.router.idle();
    expect(tools.cancelled).toBe(1);
    expect(notices()).toHaveLength(1);
  });
});
