/**
 * createApp(deps) wires config, store, provider, router and channels together. No I/O happens at
 * import time; `start()` loads state and opens the channels, `stop()` closes them and flushes.
 */
import { FileKeeper } from './files/FileKeeper.js';
import { join, resolve } from 'node:path';
import type { ChorusConfig } from './config/schema.js';
import type { DeclaredGroup } from './core/router/declaredGroups.js';
import { configDeprecations, idleTimeoutSeconds, replyTimeoutSeconds, summaryModelOf } from './config/schema.js';
import { DEFAULT_CONTEXT_TOKENS } from './core/session/contextBudget.js';
import { validateGroupConfig } from './config/groupConfig.js';
import { systemClock } from './core/clock.js';
import type { Channel, ChannelHost, Clock, ConnectionGate, DeadLetters, GatewayApi, LlmProvider, Logger, Store } from './core/ports.js';
import type { AgentDef } from './core/types.js';
import type { ToolServersStatus } from './core/readModels.js';
import { GroupRouter } from './core/router/GroupRouter.js';
import { defaultShares } from './core/router/FairSlots.js';
import { describeError } from './core/errors.js';
import { FileStore } from './store/files/FileStore.js';
import { FileDeadLetters } from './store/files/deadLetters.js';
import { DemoProvider } from './llm/DemoProvider.js';
import { welcomeFirstVisit } from './demo/welcome.js';
import { ScriptedProvider } from './llm/ScriptedProvider.js';
import { createProvider } from './llm/createProvider.js';
import { addLogSecrets, createLogger } from './logger.js';
import { Redactor, configSecrets } from './redact.js';
import type { ToolHost } from './core/toolPorts.js';
import { PromMetrics } from './ops/metrics.js';
import { HttpMounts } from './channels/web/mounts.js';
import type { PgCluster } from './cluster/PgCluster.js';
import { ClusteredHost } from './cluster/ClusteredHost.js';
import { noTools } from './tools/noTools.js';
import { toolsReadiness } from './tools/readiness.js';
import type { ToolServers, ToolsRuntime } from './tools/types.js';

export interface CreateAppOptions {
  config: ChorusConfig;
  /** Replace the configured provider (tests, benchmarks). */
  llm?: LlmProvider;
  logger?: Logger;
  clock?: Clock;
  /** Replace the channels built from the config. */
  channels?: Channel[];
  store?: Store;
  /** Replace the agents' tools built from `tools:` (tests, benchmarks). */
  tools?: ToolHost;
  /**
   * The config is the built-in demo: with canned replies, its empty web rooms open on a few lines
   * by their agents saying what to try (src/demo/welcome.ts).
   */
  builtInDemo?: boolean;
}

export interface App {
  start(): Promise<void>;
  stop(): Promise<void>;
  gateway: GatewayApi;
  router: GroupRouter;
  /** What the channels talk to: the router, wrapped by the cluster when several instances share a database. */
  host: ChannelHost;
  channels: Channel[];
  /** The web feed's URL once started (when the web channel runs). */
  readonly webUrl: string | undefined;
  /** Why the scripted provider is used, when it is. */
  scriptedReason: string | null;
  /** Apply a reloaded config's agents, aliases and group defaults (see src/config/reload.ts). */
  reconfigure(next: ChorusConfig): void;
  /** The `/metrics` series. */
  metrics: PromMetrics;
  /** storage.kind "postgres": this instance's leases, inbox and live events with the others. */
  cluster: PgCluster | undefined;
  /**
   * The MCP tool servers of `tools:` (the core's ToolHost, plus their status for operators). Started
   * by `start()` before the channels and stopped by `stop()`; with no server configured it offers
   * no tools.
   */
  tools: ToolsRuntime;
}

/** The config's `groups:` as the core declares them: the home chat, and the room's other chats. */
export function declaredGroupsOf(config: ChorusConfig): DeclaredGroup[] {
  return config.groups.map((g) => ({
    channel: g.channel,
    chatId: g.chat_id,
    title: g.title,
    participants: g.participants,
    config: g.config,
    ...(g.chats && g.chats.length > 1 ? { links: g.chats.slice(1).map((c) => ({ channel: c.channel, chatId: c.chat_id })) } : {}),
  }));
}

/** Agents as the core sees them. */
export function agentsFromConfig(config: ChorusConfig): AgentDef[] {
  return config.agents.map((a) => ({
    id: a.id,
    name: a.name,
    persona: a.persona,
    model: a.model,
    avatar: a.avatar,
    color: a.color,
    aliases: a.aliases.map((x) => x.replace(/^@/, '')),
    talkativeness: a.talkativeness,
    telegram: a.telegram?.token.trim() ? { token: a.telegram.token.trim() } : undefined,
    discord: a.discord,
    contextTokens: a.context_tokens ?? null,
    vision: visionOf(config.llm.provider, a.vision, a.model ?? config.llm.model),
    ...(a.tools?.length ? { tools: [...a.tools] } : {}),
  }));
}

/**
 * Whether an agent's model can see: as set, else every Claude model can (Anthropic), an
 * OpenAI-compatible server's model is not assumed to, and the scripted provider describes what it got.
 */
export function visionOf(provider: ChorusConfig['llm']['provider'], set: boolean | null | undefined, model: string): boolean {
  if (typeof set === 'boolean') return set;
  if (provider === 'openai') return false;
  return provider === 'scripted' || /^claude-/i.test(model);
}

/** The configured provider, or the scripted one with the reason (no key). */
export function chooseProvider(config: ChorusConfig, logger: Logger): { provider: LlmProvider; scriptedReason: string | null } {
  const llm = config.llm;
  if (llm.provider === 'scripted') return { provider: new ScriptedProvider(), scriptedReason: 'llm.provider is "scripted"' };
  // No key: the demo's livelier canned replies (several agents, streamed, a tool). An explicit
  // `scripted` keeps the instant fixed ones above, which tests and benches rely on.
  if (llm.provider === 'anthropic' && !llm.api_key) {
    const scriptedReason = 'no Anthropic API key (set ANTHROPIC_API_KEY or llm.api_key)';
    return { provider: new DemoProvider(), scriptedReason };
  }
  return { provider: createProvider(llm, logger, config.limits), scriptedReason: null };
}

export async function createApp(opts: CreateAppOptions): Promise<App> {
  const { config } = opts;
  const logger = opts.logger ?? createLogger(config.log_level);
  // No key, token or fragment of one (8+ characters) reaches the log, whatever line quotes it.
  addLogSecrets(logger, configSecrets(config));
  const clock = opts.clock ?? systemClock;
  const agents = agentsFromConfig(config);
  const chosen = opts.llm ? { provider: opts.llm, scriptedReason: null } : chooseProvider(config, logger);
  for (const d of configDeprecations(config)) logger.warn({ key: d.path }, `${d.path} is ${d.message}`);
  const metrics = new PromMetrics({
    agents: agents.map((a) => a.id),
    channels: (['web', 'telegram', 'discord'] as const).filter((c) => config.channels[c].enabled),
    models: [...new Set([config.llm.model, ...(summaryModelOf(config.llm) ? [summaryModelOf(config.llm)!] : []), ...agents.map((a) => a.model).filter((m): m is string => !!m)])],
    toolServers: Object.keys(config.tools),
  });
  // Fair shares of the model-call slots, so one hung model or busy group cannot take them all.
  const shares = defaultShares(config.llm.max_concurrency, agents.length);
  // PostgreSQL: the store and the cluster (leases, inbox, live events between instances) share one pool.
  const pgParts = !opts.store && config.storage.kind === 'postgres' ? await buildPostgres(config, logger, metrics) : undefined;
  const store = opts.store ?? pgParts?.store ?? new FileStore({ dataDir: resolve(config.data_dir), fsync: config.storage.fsync, logger: logger.child({ part: 'store' }) });
  const cluster = pgParts?.cluster;
  // Files people send and tools return, kept beside the log (content-addressed).
  // Uploads are written beside the kept files while they arrive (removed once kept or refused).
  const files = new FileKeeper(store, config.limits, { spoolDir: join(resolve(config.data_dir), 'files', '.uploads') });
  const tools = await buildTools(config, agents, logger, clock, metrics, files);
  const deadLetters = countedDeadLetters(pgParts?.deadLetters ?? new FileDeadLetters({ dataDir: resolve(config.data_dir), fsync: config.storage.fsync }), metrics);
  const router = new GroupRouter({
    agents,
    aliases: config.aliases,
    groupDefaults: config.group_defaults,
    limits: config.limits,
    llm: chosen.provider,
    llmSettings: {
      model: config.llm.model,
      summaryModel: summaryModelOf(config.llm),
      maxTokens: config.llm.max_tokens,
      contextTokens: config.llm.context_tokens ?? null,
      defaultContextTokens: DEFAULT_CONTEXT_TOKENS[config.llm.provider],
      maxConcurrency: config.llm.max_concurrency,
      maxConcurrencyPerGroup: config.llm.max_concurrency_per_group ?? shares.perGroup,
      maxConcurrencyPerAgent: config.llm.max_concurrency_per_agent ?? shares.perAgent,
      maxReplyBytes: config.llm.max_reply_bytes,
      maxImagesInPrompt: config.llm.max_images_in_prompt,
      idleTimeoutMs: idleTimeoutSeconds(config.llm) * 1000,
      replyTimeoutMs: replyTimeoutSeconds(config.llm) * 1000,
    },
    validateConfig: validateGroupConfig,
    store,
    files,
    peers: cluster,
    clock,
    metrics,
    logger: logger.child({ part: 'router' }),
    declaredGroups: declaredGroupsOf(config),
    scripted: chosen.provider.name === 'scripted',
    tools: opts.tools ?? tools,
    // What the room is shown of tool calls loses the config's secrets, as the log does.
    redact: ((r) => (text: string) => r.redact(text))(new Redactor(configSecrets(config))),
  });
  metrics.watch({ load: () => router.load(), readiness: () => router.gateway.readiness(), tools: () => tools.status() });
  const channels = opts.channels ?? (await buildChannels(config, agents, logger, () => metrics.text(), cluster, deadLetters, () => toolsReadiness(tools.status())));
  for (const c of channels) router.addChannel(c);
  // Several instances: what reaches this one for a group another runs is routed there (the core does not route).
  const host: ChannelHost = cluster ? new ClusteredHost(router, cluster) : router;
  let started = false;

  return {
    router,
    host,
    gateway: host.gateway,
    channels,
    scriptedReason: chosen.scriptedReason,
    reconfigure(next) {
      const nextAgents = agentsFromConfig(next);
      // The default per-agent share depends on how many agents there are (llm.* itself needs a restart).
      const d = defaultShares(config.llm.max_concurrency, nextAgents.length);
      tools.setAgents(nextAgents);
      router.reconfigure({
        agents: nextAgents,
        aliases: next.aliases,
        groupDefaults: next.group_defaults,
        shares: { perGroup: config.llm.max_concurrency_per_group ?? d.perGroup, perAgent: config.llm.max_concurrency_per_agent ?? d.perAgent },
      });
    },
    metrics,
    cluster,
    tools,
    get webUrl() {
      const web = channels.find((c) => c.kind === 'web') as (Channel & { url?: string }) | undefined;
      return web?.url;
    },
    async start() {
      if (started) return;
      started = true;
      // Tools first: rounds resumed below may call them. Each server is tried once here; one that
      // fails is marked down and retried in the background.
      await tools.start();
      // Undelivered replies and unfinished rounds wait until the channels can post (a Telegram
      // bot cannot send before its getMe; Discord not before its gateway is ready).
      await router.start({ resume: false });
      // Before the channels take anything in, so the opening comes first in the room.
      if (opts.builtInDemo && chosen.provider instanceof DemoProvider) {
        const webRooms = config.groups.filter((g) => g.channel === 'web').map((g) => g.chat_id);
        await welcomeFirstVisit(router, webRooms, logger);
      }
      for (const c of channels) {
        try {
          await c.start(host);
        } catch (err) {
          // The web feed is how people reach Chorus by default: without it, do not pretend to run.
          if (c.kind === 'web') throw err;
          logger.error({ channel: c.kind, err: describeError(err) }, `${c.kind} channel could not start; other channels keep running`);
        }
      }
      router.resume();
      if (cluster) {
        cluster.attach(router);
        // After the channels: a group taken over resumes its rounds through them at once.
        await cluster.start();
      }
    },
    async stop() {
      if (!started) return;
      started = false;
      cluster?.stopTaking();
      for (const c of channels) {
        await c.stop().catch((err: unknown) => logger.warn({ channel: c.kind, err: describeError(err) }, 'channel stop failed'));
      }
      await router.stop();
      // After the rounds: their tool calls were cancelled with them. Every started server process ends here.
      await tools.stop();
      // Leases freed only now: the rounds were interrupted and their progress written.
      await cluster?.stop();
      await store.close();
      await pgParts?.end();
    },
  };
}

/**
 * The MCP tool host; loaded only when `tools:` names a server (the SDK takes a quarter of a second
 * to load). A server that cannot be reached does not stop the daemon: it is retried, and its tools
 * are offered once it is up.
 */
async function buildTools(config: ChorusConfig, agents: AgentDef[], logger: Logger, clock: Clock, metrics: PromMetrics, files: FileKeeper): Promise<ToolServers> {
  if (Object.keys(config.tools).length === 0) return noTools;
  const { McpHub } = await import('./tools/McpHub.js');
  return new McpHub({ servers: config.tools, agents, maxResultBytes: config.limits.max_tool_result_bytes, logger: logger.child({ part: 'tools' }), clock, metrics, files });
}

/** Each dead letter kept is counted on `/metrics` (`chorus_dead_letters_total`). */
function countedDeadLetters(inner: DeadLetters, metrics: PromMetrics): DeadLetters {
  return {
    async keep(letter) {
      const where = await inner.keep(letter);
      metrics.deadLettered(letter.channel);
      return where;
    },
  };
}

/** Loaded only for storage.kind "postgres": the pg driver is not needed otherwise. */
async function buildPostgres(config: ChorusConfig, logger: Logger, metrics: PromMetrics) {
  const { createPostgresParts } = await import('./cluster/setup.js');
  return createPostgresParts(config, logger, metrics.registry);
}

/** Channel modules are loaded only when enabled: discord.js alone costs a second at start-up. */
async function buildChannels(
  config: ChorusConfig,
  agents: AgentDef[],
  logger: Logger,
  metrics: () => Promise<string>,
  connections?: ConnectionGate,
  deadLetters?: DeadLetters,
  toolServers?: () => ToolServersStatus | undefined,
): Promise<Channel[]> {
  const out: Channel[] = [];
  const ch = config.channels;
  // Paths other channels serve on the web channel's HTTP server (Telegram webhooks).
  const mounts = new HttpMounts();
  if (ch.web.enabled) {
    const { WebChannel } = await import('./channels/web/WebChannel.js');
    // The webhook's public base URL is where people behind the same proxy open the page too.
    const publicUrls = [ch.telegram.webhook.url];
    out.push(new WebChannel({
      config: ch.web, logger, agents, aliases: config.aliases, metrics, maxMessageChars: config.limits.max_message_chars,
      mounts, toolServers, publicUrls,
    }));
  }
  if (ch.telegram.enabled) {
    const { TelegramChannel } = await import('./channels/telegram/TelegramChannel.js');
    out.push(new TelegramChannel({ config: ch.telegram, agents, logger, mounts, connections, deadLetters }));
  }
  if (ch.discord.enabled) {
    const { DiscordChannel } = await import('./channels/discord/DiscordChannel.js');
    out.push(new DiscordChannel({ config: ch.discord, agents, logger, connections }));
  }
  return out;
}
