/**
 * Telegram updates that can never be handed over (a `message` without `chat`): the whole app
 * with the file store's data_dir, against the fake Bot API. In webhook mode such an update is
 * answered 200 once it is kept as a dead letter — one error line with its update id,
 * `chorus_dead_letters_total`, the raw update in `data_dir/dead-letters/telegram-<agent>.jsonl` —
 * while an update the store cannot record is still 503, and so is a dead letter that cannot be
 * kept. In polling mode it is kept the same way and the offset moves past it, so the bot's next
 * updates are not held behind it.
 */
import { mkdtemp, readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { webhookEndpoint } from '../../../src/channels/telegram/webhook.js';
import { parseConfigText } from '../../../src/config/load.js';
import { FakeTelegram } from '../../fakes/telegram/FakeTelegram.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { CapturingLogger } from '../../helpers/logger.js';
import { MemoryStore } from '../../helpers/memory-store.js';
import { agentDef, MAYA, TOKENS, USERNAMES, waitUntil, type AgentId } from './harness.js';
import { postUpdate } from './webhook-harness.js';

const IDS: AgentId[] = ['analyst', 'writer'];
const PUBLIC = 'https://chorus.example.com';
const SECRET = 'dead-letter_webhook-SECRET-42';
const WEB_TOKEN = 'web-token-for-the-dead-letter-test';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };

/** An update whose message has no chat: Telegram never sends one, a broken proxy might. */
const malformed = (updateId: number) => ({
  update_id: updateId,
  message: { message_id: 31, date: 1_700_000_000, from: { id: MAYA.id, is_bot: false, first_name: 'Maya' }, text: '@writer hello from nowhere' },
});

describe('telegram: an update that can never be handed over', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  async function boot(mode: 'webhook' | 'polling', store: MemoryStore, logger: CapturingLogger): Promise<App> {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-dead-'));
    const agents = IDS.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: You are the ${id}., telegram: { token: "${TOKENS[id]}" } }`).join('\n');
    const telegram =
      mode === 'webhook'
        ? `{ enabled: true, api_root: "${fake.apiRoot}", mode: webhook, webhook: { url: "${PUBLIC}", path: /hooks/telegram, secret_token: "${SECRET}" } }`
        : `{ enabled: true, api_root: "${fake.apiRoot}" }`;
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0, auth_token: "${WEB_TOKEN}" }
  telegram: ${telegram}
`;
    const a = await createApp({ config: parseConfigText(yaml, 'test').config, llm: new FakeLlm({ replies: { writer: 'Here.' } }), logger, store });
    app = a;
    fake.webhookRoute = (url) => (a.webUrl ? url.replace(PUBLIC, a.webUrl) : url);
    fake.webhookRetryMs = 20;
    await a.start();
    return a;
  }

  async function team(): Promise<{ chatId: number; groupId: string }> {
    const chat = fake!.createGroup('Team');
    for (const id of IDS) fake!.addBotToChat(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === IDS.length), 'group of two');
    await app!.router.idle();
    return { chatId: chat.id, groupId: g.id };
  }

  const deadLetterFile = () => join(dataDir!, 'dead-letters', 'telegram-writer.jsonl');
  const deadLetters = async () => (await readFile(deadLetterFile(), 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; reason: string; raw: unknown; channel: string; part: string });
  const counted = async () => Number(/^chorus_dead_letters_total\{channel="telegram"\} (\d+)$/m.exec(await (await fetch(`${app!.webUrl}/metrics`, { headers: AUTH })).text())?.[1] ?? NaN);
  const linesAbout = (logger: CapturingLogger, updateId: number) => logger.lines.filter((l) => (l.obj as { updateId?: unknown } | undefined)?.updateId === updateId);
  const humans = async (groupId: string) => (await app!.gateway.messages(groupId, { limit: 100 })).filter((e) => e.kind === 'human').map((e) => e.text);

  it('webhook: answered 200 once kept as a dead letter (raw update, one log line with its id, counted); a store that cannot record, or a dead letter that cannot be kept, is still 503', async () => {
    const store = new MemoryStore();
    const logger = new CapturingLogger();
    await boot('webhook', store, logger);
    const { chatId, groupId } = await team();
    const endpoint = `${app!.webUrl}${webhookEndpoint({ url: PUBLIC, path: '/hooks/telegram', secretToken: SECRET }, 'writer', TOKENS.writer).path}`;
    const bad = malformed(900_001);
    expect((await postUpdate(endpoint, bad, SECRET)).status).toBe(200);
    const kept = await deadLetters();
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ channel: 'telegram', part: 'writer', id: '900001', raw: bad });
    expect(kept[0]!.reason).toMatch(/message\.chat is missing/);
    expect(await counted()).toBe(1);
    const lines = linesAbout(logger, 900_001);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'error', obj: { agent: 'writer', keptIn: deadLetterFile() } });
    expect(await humans(groupId)).toEqual([]);

    // The bot goes on: the next message (by Telegram's own delivery) is recorded and answered.
    fake!.humanSays(chatId, MAYA, '@writer are you there?');
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === 'Here.') || undefined, 'writer reply');
    expect(await humans(groupId)).toEqual(['@writer are you there?']);

    // A well-formed update the store cannot record is not confirmed: Telegram must send it again.
    store.failWrites = 'ENOSPC: no space left on device';
    const good = { update_id: 900_002, message: { message_id: 77, date: 1_700_000_001, chat: { id: chatId, type: 'supergroup', title: 'Team' }, from: { id: MAYA.id, is_bot: false, first_name: 'Maya' }, text: 'kept later' } };
    expect((await postUpdate(endpoint, good, SECRET)).status).toBe(503);
    store.failWrites = null;

    // A dead letter that cannot be kept (its folder is a file) is not confirmed either.
    await rm(join(dataDir!, 'dead-letters'), { recursive: true });
    await writeFile(join(dataDir!, 'dead-letters'), 'in the way\n');
    expect((await postUpdate(endpoint, malformed(900_003), SECRET)).status).toBe(503);
    expect(await counted()).toBe(1);
    await rm(join(dataDir!, 'dead-letters'));
    await mkdir(join(dataDir!, 'dead-letters'));
    expect((await postUpdate(endpoint, malformed(900_003), SECRET)).status).toBe(200);
    expect((await deadLetters()).map((d) => d.id)).toEqual(['900003']);
    expect(await counted()).toBe(2);
  });

  it('polling: kept as a dead letter and confirmed; the updates behind it are handed over', async () => {
    const store = new MemoryStore();
    const logger = new CapturingLogger();
    await boot('polling', store, logger);
    const { chatId, groupId } = await team();
    const writerBot = fake!.state.bots.get(TOKENS.writer)!;
    const updateId = writerBot.nextUpdateId;
    fake!.state.push(writerBot, { message: malformed(0).message });
    fake!.humanSays(chatId, MAYA, '@writer still with us?');
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === 'Here.') || undefined, 'writer reply');
    await waitUntil(() => fake!.unconfirmed().get(USERNAMES.writer) === 0 || undefined, 'writer confirmed everything');
    expect(await humans(groupId)).toEqual(['@writer still with us?']);
    const kept = await deadLetters();
    expect(kept.map((d) => [d.id, d.raw])).toEqual([[String(updateId), { update_id: updateId, message: malformed(0).message }]]);
    expect(await counted()).toBe(1);
    expect(linesAbout(logger, updateId)).toHaveLength(1);
  });
});
