/**
 * `chorus doctor` and rooms across chats, against the fakes through the real clients: every chat
 * of a room is checked like a home chat (each agent's bot in a linked Telegram group; a linked
 * Discord channel exists and lets the bot manage webhooks), and in each Telegram chat of a room the
 * bot that posts people from the other chats — the relay bot, or the participant's bot standing in
 * — must be there and may post. A chat claimed by two groups, and a chat of a room on a channel
 * that is not enabled, are failures naming where each is listed (the config key, or the group in
 * data_dir it was linked to with /group link). One line per finding, with its fix.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText, type LoadedConfig } from '../../src/config/load.js';
import type { GroupHead } from '../../src/core/records.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { knownGroups, roomFindings } from '../../src/ops/checks/rooms.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import { Perm } from '../fakes/discord/model.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { silentLogger } from '../helpers/logger.js';

const TOKENS = { analyst: '111111:AAA-analyst-test-token', writer: '222222:BBB-writer-test-token' };
const RELAY = { token: '555555:EEE-relay-test-token', username: 'chorus_relay_bot', firstName: 'Relay' };
const MAYA = { id: 5001, first_name: 'Maya' };

let cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-doctor-rooms-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function load(yaml: string): LoadedConfig {
  const r = parseConfigText(yaml, 'doctor-test.yaml', {});
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

async function telegram(relay: boolean): Promise<FakeTelegram> {
  const tg = await FakeTelegram.start();
  cleanup.push(() => tg.close());
  tg.addBot({ token: TOKENS.writer, username: 'chorus_writer_bot', firstName: 'Writer' });
  tg.addBot({ token: TOKENS.analyst, username: 'chorus_analyst_bot', firstName: 'Analyst' });
  if (relay) tg.addBot(RELAY);
  return tg;
}

const agents = `agents:
  - { id: writer, name: Writer, persona: You write., telegram: { token: "${TOKENS.writer}" } }
  - { id: analyst, name: Analyst, persona: You analyse., telegram: { token: "${TOKENS.analyst}" } }`;

/** A group's first record, as Chorus writes it, with the chats linked to its room. */
async function storeGroup(dir: string, head: Partial<GroupHead> & Pick<GroupHead, 'id' | 'channel' | 'chatId'>): Promise<void> {
  const store = new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger });
  await store.open();
  const full: GroupHead = {
    title: head.id, participants: ['writer', 'analyst'], config: {} as GroupHead['config'], createdAt: 0,
    state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} }, ...head,
  };
  await store.append(head.id, { v: 2, n: 1, ts: 1, changes: [{ t: 'head', head: full }] });
  await store.close();
}

describe('chorus doctor: rooms across chats', () => {
  it('checks every chat of a room: the relay bot, or the bot standing in, in each Telegram chat; a linked Discord channel and its webhooks', async () => {
    const tg = await telegram(true);
    const a = tg.createGroup('Room A');
    const b = tg.createGroup('Room B');
    const c = tg.createGroup('Room C');
    for (const chat of [a, b]) for (const t of Object.values(TOKENS)) tg.addBotToChat(chat.id, t, MAYA);
    tg.addBotToChat(a.id, RELAY.token, MAYA);
    // Room C: nobody who could post people from the other chats is in it.
    tg.addBotToChat(c.id, TOKENS.analyst, MAYA);
    const discord = await new FakeDiscord({ token: 'discord-good-token' }).start();
    cleanup.push(() => discord.close());
    const general = discord.addChannel('general');
    const locked = discord.addChannel('locked');
    discord.denyBot(locked, Perm.ManageWebhooks);
    const { code, text, lines } = await doctor(load(`
data_dir: ${JSON.stringify(tempDir())}
llm: { provider: scripted }
${agents}
channels:
  web: { enabled: false }
  telegram: { enabled: true, api_root: "${tg.apiRoot}", relay_token: "${RELAY.token}" }
  discord: { enabled: true, token: discord-good-token, api_base: "${discord.apiBase}" }
groups:
  - title: Room A
    chats: [{ channel: telegram, chat_id: "${a.id}" }, { channel: discord, chat_id: "${general}" }, { channel: web }]
    participants: [writer, analyst]
  - title: Room B
    chats: [{ channel: discord, chat_id: "${locked}" }, { channel: telegram, chat_id: "${b.id}" }, { channel: discord, chat_id: "999999999999999999" }]
    participants: [writer, analyst]
  - title: Room C
    chats: [{ channel: web, chat_id: room-c }, { channel: telegram, chat_id: "${c.id}" }]
    participants: [writer, analyst]
`));
    expect(code).toBe(1);
    expect(line(lines, '✔', `telegram relay in "Room A" (${a.id})`)).toMatch(/@chorus_relay_bot is in the group and may post/);
    expect(line(lines, '!', `telegram relay in "Room B" (${b.id})`)).toMatch(/the relay bot @chorus_relay_bot is not in the group .*posted through @chorus_writer_bot \(writer\) instead — fix: add @chorus_relay_bot to the group/);
    expect(line(lines, '✘', `telegram relay in "Room C" (${c.id})`)).toMatch(/@chorus_writer_bot \(writer\), which would stand in, is not in the group.*not shown there — fix: add @chorus_relay_bot to the group/);
    // A linked chat is checked like a home chat: each agent's bot in it, the Discord channel's webhooks.
    expect(line(lines, '✔', `telegram writer in "Room B" (${b.id})`)).toMatch(/is a member and reads every message/);
    expect(line(lines, '✘', `telegram writer in "Room C" (${c.id})`)).toMatch(/cannot see this chat/);
    expect(line(lines, '✔', `discord #general (${general})`)).toMatch(/manage its webhooks/);
    expect(line(lines, '✘', `discord #locked (${locked})`)).toMatch(/lacks Manage Webhooks.*fix: grant "Manage Webhooks"/);
    expect(line(lines, '✘', 'discord channel 999999999999999999')).toMatch(/not visible to the bot/);
    expect(text).not.toContain(RELAY.token);
    expect(tg.posted).toHaveLength(0);
  });

  it('without a relay bot, the first participant with a bot posts people from the other chats, and must be in the group', async () => {
    const tg = await telegram(false);
    const good = tg.createGroup('Good');
    const bad = tg.createGroup('Bad');
    for (const t of Object.values(TOKENS)) tg.addBotToChat(good.id, t, MAYA);
    tg.addBotToChat(bad.id, TOKENS.analyst, MAYA);
    const { lines } = await doctor(load(`
data_dir: ${JSON.stringify(tempDir())}
llm: { provider: scripted }
${agents}
channels:
  web: { enabled: true, port: 0 }
  telegram: { enabled: true, api_root: "${tg.apiRoot}" }
groups:
  - { title: Good, chats: [{ channel: telegram, chat_id: "${good.id}" }, { channel: web }], participants: [writer, analyst] }
  - { title: Bad, chats: [{ channel: telegram, chat_id: "${bad.id}" }, { channel: web }], participants: [writer, analyst] }
  - { title: Alone, channel: telegram, chat_id: "${bad.id}0", participants: [analyst] }
`));
    expect(line(lines, '✔', `telegram relay in "Good" (${good.id})`)).toMatch(/no relay bot \(channels\.telegram\.relay_token\); people from the room's other chats are posted through @chorus_writer_bot \(writer\)/);
    expect(line(lines, '✘', `telegram relay in "Bad" (${bad.id})`)).toMatch(/@chorus_writer_bot \(writer\), which would stand in, is not in the group.* — fix: add @chorus_writer_bot to the group, or give the room a relay bot/);
    // A group of one chat relays nobody.
    expect(lines.some((l) => l.includes(`telegram relay in "Alone"`))).toBe(false);
  });

  it('a chat linked in chat (data_dir) that a declared group also claims, or whose channel is off: one failure each, naming both places', async () => {
    const tg = await telegram(false);
    const team = tg.createGroup('Team');
    const news = tg.createGroup('News');
    for (const chat of [team, news]) for (const t of Object.values(TOKENS)) tg.addBotToChat(chat.id, t, MAYA);
    const dir = tempDir();
    // Linked with /group link while it ran: the Telegram group's room holds Discord channel 4242,
    // the web page, and the News group, which the config (written later) declares as a group of its own.
    const links = [{ channel: 'discord' as const, chatId: '4242', at: 1 }, { channel: 'web' as const, chatId: 'team', at: 2 }, { channel: 'telegram' as const, chatId: String(news.id), at: 3 }];
    await storeGroup(dir, { id: 'team', title: 'Team', channel: 'telegram', chatId: String(team.id), links });
    const { code, lines } = await doctor(load(`
data_dir: ${JSON.stringify(dir)}
llm: { provider: scripted }
${agents}
channels:
  web: { enabled: true, port: 0 }
  telegram: { enabled: true, api_root: "${tg.apiRoot}" }
groups:
  - { channel: telegram, chat_id: "${news.id}", title: News, participants: [writer] }
`));
    expect(code).toBe(1);
    expect(line(lines, '✘', 'group team link discord:4242')).toMatch(/a discord chat \(4242\) of the room "Team", but channels\.discord\.enabled is false.* — fix: enable channels\.discord, or take the chat out of the room/);
    expect(line(lines, '✘', `room chat telegram:${news.id}`)).toMatch(new RegExp(`is a chat of two groups, groups\\[0\\] and group team link telegram:${news.id}.* — fix: type /group unlink in that chat`));
    // The linked Telegram groups are checked like any other.
    expect(line(lines, '✔', `telegram relay in "Team" (${team.id})`)).toBeDefined();
    expect(line(lines, '✔', `telegram relay in "Team" (${news.id})`)).toBeDefined();
  });

  it('names the config keys: a chat in two declared groups, a chat of a room whose channel is off (the config rules refuse both at load, too)', () => {
    const { config } = load(`
data_dir: /tmp/unused
llm: { provider: scripted }
${agents}
channels:
  web: { enabled: true, port: 0 }
  telegram: { enabled: true, api_root: "http://127.0.0.1:1" }
  discord: { enabled: true, token: x }
groups:
  - { title: One, chats: [{ channel: telegram, chat_id: "-100" }, { channel: discord, chat_id: "42" }], participants: [writer] }
  - { title: Two, chats: [{ channel: web, chat_id: two }, { channel: discord, chat_id: "43" }], participants: [writer] }
`);
    expect(() => load(`${'data_dir: /tmp/unused\nllm: { provider: scripted }\n'}${agents}\nchannels: { web: { enabled: true, port: 0 }, telegram: { enabled: true, api_root: "http://127.0.0.1:1" } }\ngroups:\n  - { title: One, chats: [{ channel: telegram, chat_id: "-100" }, { channel: web }], participants: [writer] }\n  - { channel: telegram, chat_id: "-100", participants: [writer] }\n`)).toThrow(/groups\[1\]\.chat_id.*already a chat of groups\[0\]\.chats\[0\]/s);
    // What doctor says of such a config, had it been loaded (the rules run first in practice).
    config.groups[1]!.chats![1]!.chat_id = '42';
    config.channels.discord.enabled = false;
    const findings = roomFindings(config, knownGroups(config, []));
    expect(findings.map((f) => [f.level, f.subject, f.text, f.fix])).toEqual([
      ['fail', 'groups[0].chats[1]', expect.stringContaining('channels.discord.enabled is false'), 'enable channels.discord, or remove groups[0].chats[1] from the config'],
      ['fail', 'room chat discord:42', expect.stringContaining('groups[0].chats[1] and groups[1].chats[1]'), 'remove it from groups[0].chats[1] or from groups[1].chats[1]'],
      ['fail', 'groups[1].chats[1]', expect.stringContaining('channels.discord.enabled is false'), 'enable channels.discord, or remove groups[1].chats[1] from the config'],
    ]);
  });
});
