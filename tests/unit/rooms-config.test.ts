/**
 * `groups[].chats` (a room declared in several chats, its home first) and
 * `limits.bot_pair_events_per_minute`: what the file may say, the problems named by their keys,
 * and the room made at start — the same at every start after.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import { agentsFromConfig, declaredGroupsOf } from '../../src/app.js';
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import { headOf } from '../../src/core/groups/evolve.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CapturingLogger } from '../helpers/logger.js';

const AGENTS = 'agents:\n  - { id: analyst, name: Analyst, persona: "p" }\n  - { id: writer, name: Writer, persona: "p", telegram: { token: "123:abc" } }\n';
const DISCORD = 'channels: { discord: { enabled: true, token: t } }\n';

function problems(yaml: string): string[] {
  try {
    parseConfigText(AGENTS + yaml, 'test.yaml', {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('groups[].chats in the config', () => {
  it('the first chat is the home; a web home without chat_id is named after the title; a web link has no chat id', () => {
    const { config } = parseConfigText(
      AGENTS + DISCORD + 'groups:\n  - { title: Market Team, participants: [analyst], chats: [{ channel: web }, { channel: discord, chat_id: 42 }] }\n  - { participants: [writer], chats: [{ channel: discord, chat_id: "7" }, { channel: web }] }\n  - { channel: web, chat_id: lobby, participants: [analyst] }\n',
      'test.yaml',
      {},
    );
    expect(config.groups[0]).toMatchObject({ channel: 'web', chat_id: 'market-team', chats: [{ channel: 'web', chat_id: 'market-team' }, { channel: 'discord', chat_id: '42' }] });
    expect(config.groups[1]).toMatchObject({ channel: 'discord', chat_id: '7' });
    expect(config.groups[2]).toMatchObject({ channel: 'web', chat_id: 'lobby' });
    expect(config.groups[2]!.chats).toBeUndefined();
    expect(declaredGroupsOf(config)).toEqual([
      { channel: 'web', chatId: 'market-team', title: 'Market Team', participants: ['analyst'], config: undefined, links: [{ channel: 'discord', chatId: '42' }] },
      { channel: 'discord', chatId: '7', title: undefined, participants: ['writer'], config: undefined, links: [{ channel: 'web', chatId: undefined }] },
      { channel: 'web', chatId: 'lobby', title: undefined, participants: ['analyst'], config: undefined },
    ]);
    expect(config.limits.bot_pair_events_per_minute).toBe(10);
  });

  const table: Array<[string, string, string[]]> = [
    ['a telegram or discord chat without its id', DISCORD + 'groups:\n  - { participants: [analyst], chats: [{ channel: web, chat_id: room }, { channel: discord }] }\n', ['groups[0].chats[1].chat_id: required for a discord chat']],
    ['both forms at once', DISCORD + 'groups:\n  - { channel: discord, chat_id: "1", participants: [analyst], chats: [{ channel: discord, chat_id: "2" }] }\n', ["groups[0].channel: give either channel and chat_id, or chats (the group's chats, its home first), not both"]],
    ['neither form', 'groups:\n  - { participants: [analyst] }\n', ["groups[0].channel: required (or list the group's chats under chats)", 'groups[0].chat_id: required']],
    ['a web link with a chat id', DISCORD + 'groups:\n  - { participants: [analyst], chats: [{ channel: discord, chat_id: "1" }, { channel: web, chat_id: x }] }\n', ["groups[0].chats[1].chat_id: leave it out: a room's web chat is the page of the group, found by the group's id"]],
    ['two web chats', 'groups:\n  - { title: T, participants: [analyst], chats: [{ channel: web }, { channel: web }] }\n', ['groups[0].chats[1].channel: a room has one web chat']],
    ['a web home with neither id nor title', 'groups:\n  - { participants: [analyst], chats: [{ channel: web }] }\n', ['groups[0].chats[0].chat_id: a web room needs its id here (a slug), or a title to make it from']],
    ['a web home id that is no slug', 'groups:\n  - { participants: [analyst], chats: [{ channel: web, chat_id: "Not A Slug" }] }\n', ['groups[0].chats[0].chat_id: web rooms need a slug id (a-z 0-9 _ -)']],
    [
      'a chat in two groups',
      DISCORD + 'groups:\n  - { participants: [analyst], chats: [{ channel: web, chat_id: a }, { channel: discord, chat_id: "5" }] }\n  - { channel: discord, chat_id: "5", participants: [writer] }\n  - { participants: [writer], chats: [{ channel: discord, chat_id: "6" }, { channel: discord, chat_id: "6" }] }\n',
      ['groups[1].chat_id: discord:5 is already a chat of groups[0].chats[1]', 'groups[2].chats[1].chat_id: discord:6 is already a chat of groups[2].chats[0]'],
    ],
    ['a chat of a disabled channel', 'groups:\n  - { participants: [analyst], chats: [{ channel: web, chat_id: a }, { channel: telegram, chat_id: "-1" }] }\n', ['groups[0].chats[1].channel: channels.telegram.enabled is false']],
    ['an unknown key in a chat', 'groups:\n  - { participants: [analyst], chats: [{ channel: web, chat_id: a, title: x }] }\n', ['groups[0].chats[0].title: unknown key']],
    ['bot pair budget below 1', 'limits: { bot_pair_events_per_minute: 0 }\n', ['limits.bot_pair_events_per_minute: must be at least 1']],
    ['bot pair budget not a whole number', 'limits: { bot_pair_events_per_minute: 2.5 }\n', ['limits.bot_pair_events_per_minute: expected int, got number 2.5']],
  ];
  it.each(table)('%s', (_name, yaml, expected) => {
    expect(problems(yaml).sort()).toEqual([...expected].sort());
  });
});

function routerOn(store: MemoryStore, logger: CapturingLogger, yaml: string): GroupRouter {
  const { config } = parseConfigText(AGENTS + DISCORD + yaml + 'llm: { provider: scripted }\n', 'test');
  return new GroupRouter({
    agents: agentsFromConfig(config),
    aliases: config.aliases,
    groupDefaults: { ...config.group_defaults, cooldown_seconds: 0 },
    limits: config.limits,
    llm: new FakeLlm(),
    llmSettings: { model: 'test-model', summaryModel: 'test-small', maxTokens: 256, maxConcurrency: 4, contextTokens: null, defaultContextTokens: 200_000 },
    validateConfig: validateGroupConfig,
    store,
    clock: new FakeClock(),
    logger,
    declaredGroups: declaredGroupsOf(config),
  });
}

const ROOM = 'groups:\n  - { title: Ops, participants: [analyst, writer], chats: [{ channel: discord, chat_id: "c1" }, { channel: web }, { channel: discord, chat_id: "c2" }] }\n';

describe('a declared room at start', () => {
  it('is made with its chats linked, and is the same at the next start (nothing written again)', async () => {
    const store = new MemoryStore();
    const first = routerOn(store, new CapturingLogger(), ROOM);
    await first.start();
    const g = first.groups.find('discord', 'c1')!;
    expect(g.id).toBe('dc-c1');
    expect(g.links?.map((l) => `${l.channel}:${l.chatId}`)).toEqual(['web:dc-c1', 'discord:c2']);
    expect(first.groups.find('web', 'dc-c1')).toBe(g);
    expect(first.groups.find('discord', 'c2')).toBe(g);
    await first.groups.settle();
    const head = structuredClone(headOf(g));
    const records = store.logs.get('dc-c1')!.length;
    await first.stop();

    const again = routerOn(store, new CapturingLogger(), ROOM);
    await again.start();
    await again.groups.settle();
    expect(headOf(again.groups.get('dc-c1')!)).toEqual(head);
    expect(store.logs.get('dc-c1')!.length).toBe(records);
    expect(again.gateway.listGroups().map((x) => x.id)).toEqual(['dc-c1']);
    await again.stop();
  });

  it("a declared chat that has a group of its own: that group is archived (history kept, logged) and the chat joins the room", async () => {
    const store = new MemoryStore();
    const first = routerOn(store, new CapturingLogger(), 'groups:\n  - { channel: discord, chat_id: c2, participants: [writer] }\n');
    await first.start();
    expect(first.groups.find('discord', 'c2')!.id).toBe('dc-c2');
    await first.stop();

    const logger = new CapturingLogger();
    const again = routerOn(store, logger, ROOM);
    await again.start();
    expect(again.groups.get('dc-c2')!.state.archived).toBe(true);
    expect(again.groups.find('discord', 'c2')!.id).toBe('dc-c1');
    expect(logger.lines.some((l) => l.level === 'warn' && /had a group of its own/.test(l.msg ?? '') && (l.obj as { group?: string }).group === 'dc-c2')).toBe(true);
    expect(store.logs.get('dc-c2')!.length).toBeGreaterThan(0);
    await again.stop();
  });
});
