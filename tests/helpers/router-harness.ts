/**
 * A real GroupRouter with a fake LLM, fake clock, memory store and fake channel — the unit-test
 * rig for the rules of the round and what agents see. `say()` sends a human message and waits
 * for the round to finish.
 */
import { parseConfigText } from '../../src/config/load.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import { agentsFromConfig } from '../../src/app.js';
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import type { Clock, LlmProvider, Logger, Peers, Store } from '../../src/core/ports.js';
import type { GroupConfig, InboundMessage } from '../../src/core/types.js';
import type { ToolHost } from '../../src/core/toolPorts.js';
import { FakeChannel } from './fake-channel.js';
import { FakeClock } from './fake-clock.js';
import { FakeLlm, type FakeLlmOptions } from './fake-llm.js';
import { silentLogger } from './logger.js';
import { MemoryStore } from './memory-store.js';
import { FileKeeper } from '../../src/files/FileKeeper.js';

export const AGENTS_YAML = `
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers.", aliases: [numbers] }
  - { id: writer, name: Writer, persona: "You write prose." }
  - { id: critic, name: Critic, persona: "You critique ideas." }
aliases:
  creatives: [writer, critic]
`;

export interface HarnessOptions {
  llm?: FakeLlmOptions | LlmProvider;
  group?: Partial<GroupConfig>;
  participants?: string[];
  yaml?: string;
  store?: Store;
  clock?: Clock;
  limits?: { user_messages_per_minute: number; max_message_chars: number; reactions_per_minute?: number };
  maxConcurrency?: number;
  checkpointEvery?: number;
  /** `llm.context_tokens` (default: a 200k window, so only tests that want a small one get it). */
  contextTokens?: number;
  /** The provider's default window when `contextTokens` is unset (default 200k; 4096 is openai's). */
  defaultContextTokens?: number;
  /** `llm.max_tokens` (default 256). */
  maxTokens?: number;
  /** Where the router logs (default: nowhere). */
  logger?: Logger;
  /** `llm.idle_timeout_seconds` / `llm.reply_timeout_seconds` in ms (default: the gate's 30 s / 300 s). */
  idleTimeoutMs?: number;
  replyTimeoutMs?: number;
  /** Other instances (cluster tests): the router then runs only the groups it is handed; default: every group. */
  peers?: Peers;
  /** The agents' tools (default: none). */
  tools?: ToolHost;
  /** `llm.max_images_in_prompt` (default 4). */
  maxImages?: number;
}

export async function makeRouter(opts: HarnessOptions = {}) {
  const { config } = parseConfigText((opts.yaml ?? AGENTS_YAML) + '\nllm: { provider: scripted }\n', 'test');
  const llm = opts.llm && 'complete' in opts.llm ? opts.llm : new FakeLlm(opts.llm as FakeLlmOptions | undefined);
  const clock = opts.clock ?? new FakeClock();
  const store = opts.store ?? new MemoryStore();
  const channel = new FakeChannel('web');
  const router = new GroupRouter({
    agents: agentsFromConfig(config),
    aliases: config.aliases,
    groupDefaults: { ...config.group_defaults, cooldown_seconds: 0, ...opts.group },
    limits: opts.limits ?? { user_messages_per_minute: 1000, max_message_chars: 8000 },
    llm,
    llmSettings: { model: 'test-model', summaryModel: 'test-small', maxTokens: opts.maxTokens ?? 256, maxConcurrency: opts.maxConcurrency ?? 8, idleTimeoutMs: opts.idleTimeoutMs, replyTimeoutMs: opts.replyTimeoutMs, contextTokens: opts.contextTokens ?? null, defaultContextTokens: opts.defaultContextTokens ?? 200_000, maxImagesInPrompt: opts.maxImages },
    validateConfig: validateGroupConfig,
    store,
    clock,
    logger: opts.logger ?? silentLogger,
    checkpointEvery: opts.checkpointEvery,
    peers: opts.peers,
    tools: opts.tools,
    // The real keeper over the test's store: files are checked and kept as in the daemon.
    files: new FileKeeper(store),
  });
  router.addChannel(channel);
  await router.start();
  await channel.start(router);
  const group = router.gateway.getGroup('room') ?? (await router.gateway.createGroup({ title: 'Test room', participants: opts.participants ?? ['analyst', 'writer', 'critic'], id: 'room' }));
  let n = 0;
  const message = (text: string, extra: Partial<InboundMessage> = {}): InboundMessage => ({
    channel: 'web',
    chatId: group.chatId,
    messageId: `m${++n}`,
    author: { id: 'maya', name: 'Maya' },
    text,
    ts: clock.now(),
    ...extra,
  });
  return {
    router,
    channel,
    clock: clock as FakeClock,
    store: store as MemoryStore,
    llm: llm as FakeLlm,
    group,
    message,
    /** Send and wait until the group is idle. */
    async say(text: string, extra: Partial<InboundMessage> = {}) {
      const res = await router.receive(message(text, extra));
      await router.idle();
      return res;
    },
    /** Agent ids of delivered replies, in order. */
    speakers(): string[] {
      return channel.posts.filter((p) => p.agentId).map((p) => p.agentId!);
    },
    /** The group's transcript as the router holds it (the whole of it in these small tests). */
    transcript() {
      return [...router.groups.get(group.id)!.transcript];
    },
    /** Every entry the group's log holds, oldest first (memory keeps only a tail). */
    async fullTranscript() {
      await router.groups.settle();
      const g = router.groups.get(group.id)!;
      return store.readEntries(group.id, { afterSeq: 0, limit: g.nextSeq });
    },
  };
}
