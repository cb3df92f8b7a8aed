/**
 * `chorus doctor` against the local fakes, through the real clients: grammY to the fake
 * Bot API (good, privacy-mode and rejected tokens; a bot missing from a group), discord.js to the
 * fake Discord (login, the Message Content intent, Manage Webhooks per channel), the Anthropic and
 * OpenAI SDKs to their fakes (a served model, an unknown one, a wrong key, a model without a price),
 * plus the real data_dir and port. One line per finding, the fix on it, exit 1 on any failure.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { parseConfigText, type LoadedConfig } from '../../src/config/load.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { startFakeAnthropic } from '../fakes/anthropic/index.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import { Perm } from '../fakes/discord/model.js';
import { startFakeOpenAi } from '../fakes/openai/index.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { silentLogger } from '../helpers/logger.js';

const TOKENS = { analyst: '111111:AAA-analyst-test-token', writer: '222222:BBB-writer-test-token', critic: '333333:CCC-critic-test-token' };
const ANTHROPIC_KEY = 'sk-ant-doctor-test-key';
const MAYA = { id: 5001, first_name: 'Maya' };

let cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-doctor-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function freePort(): Promise<number> {
  return new Promise((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => r(port));
    });
  });
}

function load(yaml: string): LoadedConfig {
  const r = parseConfigText(yaml, 'doctor-test.yaml');
  return { config: r.config, source: 'doctor-test.yaml', usedDefaults: false, missingEnv: r.missing, overrides: r.overrides, envFiles: [] };
}

async function doctor(loaded: LoadedConfig): Promise<{ code: number; text: string; lines: string[] }> {
  const lines: string[] = [];
  const { code } = await runDoctor(loaded, (l) => lines.push(l));
  return { code, text: lines.join('\n'), lines };
}

/** The line about `subject` (exact subject, before the colon). */
function line(lines: string[], mark: string, subject: string): string | undefined {
  return lines.find((l) => l.startsWith(`${mark} ${subject}: `));
}

describe('chorus doctor', () => {
  it('a sound set-up: every check passes and the exit code is 0', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    const analystBot = tg.addBot({ token: TOKENS.analyst, username: 'chorus_analyst_bot', firstName: 'Analyst' });
    const group = tg.createGroup('Research');
    tg.addBotToChat(group.id, TOKENS.analyst, MAYA);
    // An admin: Telegram sends people's reactions only to admin bots (a member-only bot is a warning).
    tg.setAdmins(group.id, [analystBot.id]);
    const model = await startFakeAnthropic({ apiKey: ANTHROPIC_KEY, models: ['claude-opus-4-5', 'claude-haiku-4-5'] });
    cleanup.push(() => model.close());
    const discord = await new FakeDiscord({ token: 'discord-good-token' }).start();
    cleanup.push(() => discord.close());
    const general = discord.addChannel('general');
    const dir = tempDir();
    const port = await freePort();
    const { code, text, lines } = await doctor(
      load(`
data_dir: ${JSON.stringify(dir)}
llm: { provider: anthropic, api_key: ${ANTHROPIC_KEY}, base_url: "${model.url}", model: claude-opus-4-5, summary_model: claude-haiku-4-5 }
agents:
  - { id: analyst, name: Analyst, persona: You analyse., telegram: { token: "${TOKENS.analyst}" } }
channels:
  web: { enabled: true, host: 127.0.0.1, port: ${port} }
  telegram: { enabled: true, api_root: "${tg.apiRoot}" }
  discord: { enabled: true, token: discord-good-token, api_base: "${discord.apiBase}", channels: ["${general}"] }
groups:
  - { channel: telegram, chat_id: "${group.id}", title: Research, participants: [analyst] }
`),
    );
    expect(text).not.toContain('✘');
    expect(code).toBe(0);
    expect(line(lines, '✔', `data_dir ${resolve(dir)}`)).toMatch(/writable/);
    expect(line(lines, '✔', `port ${port} on 127.0.0.1`)).toMatch(/free/);
    expect(line(lines, '✔', 'model claude-opus-4-5')).toMatch(/answered in \d+ ms/);
    expect(line(lines, '✔', 'model claude-opus-4-5 price')).toMatch(/\$5 input \/ \$25 output/);
    expect(line(lines, '✔', 'telegram analyst')).toMatch(/@chorus_analyst_bot answers; privacy mode is off/);
    expect(line(lines, '✔', `telegram analyst in "Research" (${group.id})`)).toMatch(/is an admin and reads every message/);
    expect(line(lines, '✔', 'discord')).toMatch(/logged in as .*Message Content intent is granted/);
    expect(line(lines, '✔', `discord #general (${general})`)).toMatch(/manage its webhooks/);
    // Read-only: the doctor made no webhook, sent nothing and closed its gateway session.
    expect(discord.webhooks).toHaveLength(0);
    expect(discord.messages).toHaveLength(0);
    expect(tg.posted).toHaveLength(0);
    expect(lines.at(-1)).toBe('No problems found.');
  });

  it('finds rejected tokens, privacy mode, a bot missing from its group, an unknown model, a missing price, a missing intent and a busy port', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    tg.addBot({ token: TOKENS.analyst, username: 'chorus_analyst_bot', firstName: 'Analyst' });
    tg.addBot({ token: TOKENS.writer, username: 'chorus_writer_bot', firstName: 'Writer', canReadAll: false });
    // critic's token is unknown to Telegram: 401.
    const group = tg.createGroup('Research');
    tg.addBotToChat(group.id, TOKENS.analyst, MAYA);
    tg.addBotToChat(group.id, TOKENS.writer, MAYA);
    const other = tg.createGroup('Side room');
    tg.addBotToChat(other.id, TOKENS.analyst, MAYA); // writer was never added here
    const model = await startFakeAnthropic({ apiKey: ANTHROPIC_KEY, models: ['claude-opus-4-5', 'house-model'] });
    cleanup.push(() => model.close());
    const discord = await new FakeDiscord({ token: 'discord-good-token', messageContentAllowed: false }).start();
    cleanup.push(() => discord.close());
    // Another program on the web port: it accepts connections and never answers HTTP.
    const sockets = new Set<Socket>();
    const busy: Server = createServer((sock) => sockets.add(sock)).listen(0, '127.0.0.1');
    await new Promise((r) => busy.once('listening', r));
    cleanup.push(() => {
      for (const sock of sockets) sock.destroy();
      return new Promise((r) => busy.close(r));
    });
    const busyPort = (busy.address() as { port: number }).port;
    const dir = tempDir();
    const { code, text, lines } = await doctor(
      load(`
data_dir: ${JSON.stringify(dir)}
llm: { provider: anthropic, api_key: ${ANTHROPIC_KEY}, base_url: "${model.url}", model: claude-opus-4-5, summary_model: claude-nonexistent-9 }
agents:
  - { id: analyst, name: Analyst, persona: You analyse., telegram: { token: "${TOKENS.analyst}" } }
  - { id: writer, name: Writer, persona: You write., model: house-model, telegram: { token: "${TOKENS.writer}" } }
  - { id: critic, name: Critic, persona: You critique., telegram: { token: "${TOKENS.critic}" } }
channels:
  web: { enabled: true, host: 127.0.0.1, port: ${busyPort} }
  telegram: { enabled: true, api_root: "${tg.apiRoot}" }
  discord: { enabled: true, token: discord-good-token, api_base: "${discord.apiBase}" }
groups:
  - { channel: telegram, chat_id: "${group.id}", title: Research, participants: [analyst, writer] }
  - { channel: telegram, chat_id: "${other.id}", title: Side room, participants: [analyst, writer] }
`),
    );
    expect(code).toBe(1);
    // Every finding is one line; failures and warnings carry their fix on it.
    for (const l of lines.filter((x) => /^[✘!] /.test(x))) expect(l).toMatch(/ — fix: \S/);

    expect(line(lines, '✘', 'telegram critic')).toMatch(/Telegram rejected the bot token \(401: Unauthorized\).*fix: .*@BotFather.*agents\[2\]\.telegram\.token/);
    expect(line(lines, '!', 'telegram writer')).toMatch(/@chorus_writer_bot has privacy mode on.*fix: in @BotFather send \/setprivacy/);
    expect(line(lines, '!', `telegram writer in "Research" (${group.id})`)).toMatch(/privacy mode on/);
    expect(line(lines, '✘', `telegram writer in "Side room" (${other.id})`)).toMatch(/cannot see this chat.*fix: add @chorus_writer_bot to the group/);
    expect(line(lines, '✔', `telegram analyst in "Side room" (${other.id})`)).toBeDefined();
    // No bot is an admin of either group: Telegram sends them no reactions.
    expect(line(lines, '!', `telegram analyst in "Side room" (${other.id})`)).toMatch(/@chorus_analyst_bot is not an admin, and no other agent's bot in this group is: .*reactions.*fix: make @chorus_analyst_bot an admin to see reactions/);

    expect(line(lines, '✔', 'model claude-opus-4-5')).toBeDefined();
    expect(line(lines, '✘', 'model claude-nonexistent-9')).toMatch(/does not serve this model.*fix: set llm\.summary_model to a model the endpoint serves/);
    expect(line(lines, '✔', 'model house-model')).toMatch(/used by agents\[1\]\.model \(writer\)/);
    expect(line(lines, '!', 'model house-model price')).toMatch(/no price known.*fix: add llm\.prices\."house-model"/);

    expect(line(lines, '✘', 'discord')).toMatch(/Message Content intent.*4014.*fix: Developer Portal/);
    expect(line(lines, '✘', `port ${busyPort} on 127.0.0.1`)).toMatch(/already in use by another program.*fix: .*channels\.web\.port/);
    expect(line(lines, '✔', `data_dir ${resolve(dir)}`)).toBeDefined();

    expect(lines.at(-1)).toMatch(/^\d+ problem\(s\) to fix, \d+ warning\(s\)\.$/);
    for (const secret of [...Object.values(TOKENS), ANTHROPIC_KEY, 'discord-good-token']) expect(text).not.toContain(secret);
  });

  it('Discord: a wrong token, and a channel where the bot lacks Manage Webhooks', async () => {
    const discord = await new FakeDiscord({ token: 'discord-good-token' }).start();
    cleanup.push(() => discord.close());
    const general = discord.addChannel('general');
    const locked = discord.addChannel('locked');
    discord.denyBot(locked, Perm.ManageWebhooks);
    const base = (token: string) => `
data_dir: ${JSON.stringify(tempDir())}
llm: { provider: scripted }
agents: [{ id: analyst, name: Analyst, persona: You analyse. }]
channels:
  web: { enabled: false }
  discord: { enabled: true, token: ${token}, api_base: "${discord.apiBase}", channels: ["${general}", "${locked}", "999999999999999999"] }
`;
    const bad = await doctor(load(base('not-the-token')));
    expect(bad.code).toBe(1);
    expect(line(bad.lines, '✘', 'discord')).toMatch(/rejected the bot token.*fix: copy a fresh token/);
    expect(bad.text).not.toContain('not-the-token');

    const good = await doctor(load(base('discord-good-token')));
    expect(good.code).toBe(1);
    expect(line(good.lines, '✔', 'discord')).toBeDefined();
    expect(line(good.lines, '✔', `discord #general (${general})`)).toBeDefined();
    expect(line(good.lines, '✘', `discord #locked (${locked})`)).toMatch(/lacks Manage Webhooks.*fix: grant "Manage Webhooks"/);
    expect(line(good.lines, '✘', 'discord channel 999999999999999999')).toMatch(/not visible to the bot/);
    // The scripted provider is a warning, not a failure.
    expect(line(good.lines, '!', 'llm')).toMatch(/canned demo replies/);
  });

  it('OpenAI-compatible endpoint: a wrong key and an unknown model are named with their fix', async () => {
    const oa = await startFakeOpenAi({ apiKey: 'sk-right', models: ['llama3'] });
    cleanup.push(() => oa.close());
    const yaml = (key: string, model: string) => `
data_dir: ${JSON.stringify(tempDir())}
llm: { provider: openai, api_key: ${key}, base_url: "${oa.url}", model: ${model}, summary_model: llama3 }
agents: [{ id: analyst, name: Analyst, persona: You analyse. }]
channels: { web: { enabled: true, port: 0 } }
`;
    const wrongKey = await doctor(load(yaml('sk-wrong', 'llama3')));
    expect(wrongKey.code).toBe(1);
    expect(line(wrongKey.lines, '✘', 'model llama3')).toMatch(/API key was refused.*fix: set llm\.api_key/);
    expect(wrongKey.text).not.toContain('sk-wrong');

    const unknown = await doctor(load(yaml('sk-right', 'gpt-nope')));
    expect(unknown.code).toBe(1);
    expect(line(unknown.lines, '✘', 'model gpt-nope')).toMatch(/does not serve this model.*fix: set llm\.model/);
    expect(line(unknown.lines, '✔', 'model llama3')).toBeDefined();
    expect(line(unknown.lines, '!', 'model llama3 price')).toBeDefined();
  });

  it('checks the groups found in data_dir, read-only, and a data_dir it cannot write', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    tg.addBot({ token: TOKENS.analyst, username: 'chorus_analyst_bot', firstName: 'Analyst' });
    tg.addBot({ token: TOKENS.writer, username: 'chorus_writer_bot', firstName: 'Writer' });
    const dir = tempDir();
    const yaml = `
data_dir: ${JSON.stringify(dir)}
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: You analyse., telegram: { token: "${TOKENS.analyst}" } }
  - { id: writer, name: Writer, persona: You write., telegram: { token: "${TOKENS.writer}" } }
channels:
  web: { enabled: false }
  telegram: { enabled: true, api_root: "${tg.apiRoot}", auto_create_groups: true }
`;
    // A real run: both bots are added to a Telegram group, which forms a group in data_dir.
    const chat = tg.createGroup('Formed at runtime');
    const app = await createApp({ config: parseConfigText(yaml, 'x').config, logger: silentLogger });
    await app.start();
    tg.addBotToChat(chat.id, TOKENS.analyst, MAYA);
    tg.addBotToChat(chat.id, TOKENS.writer, MAYA);
    const deadline = Date.now() + 10_000;
    while (app.gateway.listGroups().find((g) => g.chatId === String(chat.id))?.participants.length !== 2) {
      if (Date.now() > deadline) throw new Error('the group did not form');
      await new Promise((r) => setTimeout(r, 20));
    }
    await app.router.idle();
    await app.stop();
    // While Chorus is down, the writer's bot is removed from the group: Chorus still lists it there.
    tg.removeBotFromChat(chat.id, TOKENS.writer, MAYA);
    const { lines } = await doctor(load(yaml));
    expect(line(lines, '✔', `telegram analyst in "Formed at runtime" (${chat.id})`)).toBeDefined();
    expect(line(lines, '✘', `telegram writer in "Formed at runtime" (${chat.id})`)).toMatch(/cannot see this chat/);

    if (process.getuid?.() !== 0) {
      // Root writes anywhere; everyone else is refused by a read-only folder.
      chmodSync(dir, 0o500);
      cleanup.push(() => chmodSync(dir, 0o700));
      const ro = await doctor(load(yaml));
      expect(ro.code).toBe(1);
      expect(line(ro.lines, '✘', `data_dir ${resolve(dir)}`)).toMatch(/cannot write a file there \(permission denied\).*fix: /);
    }
  });

  it('`chorus doctor --config` prints the findings and exits 1 on a failure (the real CLI)', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    const dir = tempDir();
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      `data_dir: ./data
llm: { provider: scripted }
agents: [{ id: critic, name: Critic, persona: You critique., telegram: { token: "${TOKENS.critic}" } }]
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
  telegram: { enabled: true, api_root: "${tg.apiRoot}" }
`,
    );
    const root = resolve(import.meta.dirname, '../..');
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/main.ts'), 'doctor', '--config', file], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(out).toMatch(/✘ telegram critic: Telegram rejected the bot token \(401: Unauthorized\)/);
    expect(out).toMatch(/✔ config: .*config\.yaml is valid/);
    expect(out).not.toContain(TOKENS.critic);
    expect(code).toBe(1);
  });
});
