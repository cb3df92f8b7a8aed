/**
 * Declared groups at start: one whose first record the store refuses (a full disk, or — with
 * several instances — a lease taken between the group's claim and its first record) must not stop
 * the daemon from starting, and nothing of it may be half-kept.
 */
import { describe, expect, it } from 'vitest';
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { Store } from '../../src/core/ports.js';
import type { GroupRecord } from '../../src/core/records.js';
import { parseConfigText } from '../../src/config/load.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import { agentsFromConfig } from '../../src/app.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CapturingLogger } from '../helpers/logger.js';

/** Refuses every append of one group, as a fenced or unwritable group is refused. */
class RefusingStore extends MemoryStore {
  constructor(private readonly refused: string) {
    super();
  }
  override async append(groupId: string, record: GroupRecord): Promise<void> {
    if (groupId === this.refused) throw new StoreUnavailableError(`group ${groupId} is no longer owned by this instance; nothing was written`);
    return super.append(groupId, record);
  }
}

/** A store that found these groups' data unreadable at open (as the file store reports them). */
function unreadableStore(ids: string[]): MemoryStore {
  const store = new MemoryStore();
  const open = store.open.bind(store);
  (store as Store).open = async () => ({ ...(await open()), unreadable: [...ids] });
  return store;
}

function routerOn(store: MemoryStore, logger: CapturingLogger, declaredGroups: NonNullable<ConstructorParameters<typeof GroupRouter>[0]['declaredGroups']>): GroupRouter {
  const { config } = parseConfigText('agents:\n  - { id: analyst, name: Analyst, persona: "p" }\n  - { id: writer, name: Writer, persona: "p" }\nllm: { provider: scripted }\n', 'test');
  return new GroupRouter({
    agents: agentsFromConfig(config),
    aliases: config.aliases,
    groupDefaults: { ...config.group_defaults, cooldown_seconds: 0 },
    limits: { user_messages_per_minute: 1000, max_message_chars: 8000 },
    llm: new FakeLlm(),
    llmSettings: { model: 'test-model', summaryModel: 'test-small', maxTokens: 256, maxConcurrency: 4, contextTokens: null, defaultContextTokens: 200_000 },
    validateConfig: validateGroupConfig,
    store,
    clock: new FakeClock(),
    logger,
    declaredGroups,
  });
}

describe('declared groups at start', () => {
  it('a declared group whose data cannot be read is left out with a warning; nothing is made in its place, the others start', async () => {
    // A web room's id is its chat id; a Telegram group's id comes from its chat id (tg-…, with a
    // -2 when that was taken when it was made).
    const store = unreadableStore(['lobby', 'tg-100123', 'tg-200456-2']);
    const logger = new CapturingLogger();
    const router = routerOn(store, logger, [
      { channel: 'web', chatId: 'lobby', title: 'Lobby', participants: ['analyst'] },
      { channel: 'telegram', chatId: '-100123', title: 'Team', participants: ['analyst', 'writer'] },
      { channel: 'telegram', chatId: '-200456', title: 'Other team', participants: ['writer'] },
      { channel: 'web', chatId: 'kept', title: 'Kept', participants: ['analyst', 'writer'] },
    ]);
    await expect(router.start()).resolves.toBeUndefined();
    expect(router.gateway.listGroups().map((g) => g.id)).toEqual(['kept']);
    expect(router.groups.find('telegram', '-100123')).toBeUndefined();
    // Nothing written for the unreadable groups, and no second group for their chats.
    expect([...store.logs.keys()]).toEqual(['kept']);
    const left = logger.lines.filter((l) => l.level === 'warn' && /declared group whose data cannot be read is left out/.test(l.msg ?? ''));
    expect(left.map((l) => (l.obj as { group: string }).group)).toEqual(['lobby', 'tg-100123', 'tg-200456-2']);
    await router.stop();
  });

  it('a declared web room that was dissolved stays dissolved (its id keeps its history) and does not stop the start', async () => {
    const store = new MemoryStore();
    const declared = [
      { channel: 'web' as const, chatId: 'lobby', title: 'Lobby', participants: ['analyst'] },
      { channel: 'web' as const, chatId: 'kept', title: 'Kept', participants: ['writer'] },
    ];
    const first = routerOn(store, new CapturingLogger(), declared);
    await first.start();
    await first.gateway.dissolveGroup('lobby');
    await first.stop();
    const logger = new CapturingLogger();
    const again = routerOn(store, logger, declared);
    await expect(again.start()).resolves.toBeUndefined();
    expect(again.gateway.listGroups().map((g) => g.id)).toEqual(['kept']);
    expect(again.groups.get('lobby')?.state.archived).toBe(true);
    expect(logger.lines.some((l) => l.level === 'warn' && /declared group was not created/.test(l.msg ?? '') && /archived/.test(JSON.stringify(l.obj)))).toBe(true);
    await again.stop();
  });

  it('a declared group whose first record is refused is left out; the others start and run', async () => {
    const { config } = parseConfigText('agents:\n  - { id: analyst, name: Analyst, persona: "p" }\n  - { id: writer, name: Writer, persona: "p" }\nllm: { provider: scripted }\n', 'test');
    const store = new RefusingStore('lost');
    const logger = new CapturingLogger();
    const router = new GroupRouter({
      agents: agentsFromConfig(config),
      aliases: config.aliases,
      groupDefaults: { ...config.group_defaults, cooldown_seconds: 0 },
      limits: { user_messages_per_minute: 1000, max_message_chars: 8000 },
      llm: new FakeLlm(),
      llmSettings: { model: 'test-model', summaryModel: 'test-small', maxTokens: 256, maxConcurrency: 4, contextTokens: null, defaultContextTokens: 200_000 },
      validateConfig: validateGroupConfig,
      store,
      clock: new FakeClock(),
      logger,
      declaredGroups: [
        { channel: 'web', chatId: 'lost', title: 'Lost', participants: ['analyst', 'writer'] },
        { channel: 'web', chatId: 'kept', title: 'Kept', participants: ['analyst', 'writer'] },
      ],
    });
    await expect(router.start()).resolves.toBeUndefined();
    expect(router.gateway.getGroup('lost')).toBeUndefined();
    expect(router.gateway.getGroup('kept')?.title).toBe('Kept');
    expect((await store.open()).groups.map((g) => g.id)).toEqual(['kept']);
    expect(logger.lines.some((l) => l.level === 'warn' && /declared group could not be created/.test(l.msg ?? ''))).toBe(true);
    await router.stop();
  });
});
