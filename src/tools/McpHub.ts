/**
 * The MCP tool host: one supervised connection per configured server (ServerLink), and what the
 * core asks of them — the tools an agent may call, in a stable order and with model-safe names,
 * and calls that never throw. Everything an agent sees comes from servers that are up; a server
 * that is down only takes its own tools away until it is back.
 *
 * Each answer is cut to `maxResultBytes` before anything else sees it (content.ts).
 */
import type { Files } from '../core/fileTypes.js';
import { performance } from 'node:perf_hooks';
import { systemClock } from '../core/clock.js';
import type { Clock, Logger } from '../core/ports.js';
import type { ToolCallResult, ToolInfo } from '../core/toolPorts.js';
import { DEFAULT_MAX_TOOL_RESULT_BYTES } from '../config/toolsSchema.js';
import { missingEntries, selectTools, type AgentToolsDef } from './agentTools.js';
import { DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { said } from './callTool.js';
import { ToolNames } from './names.js';
import { ServerLink } from './ServerLink.js';
import type { StderrLimits } from './stderrLines.js';
import type { ListedTool, MissingToolEntry, ToolMetrics, ToolServerConfig, ToolServers, ToolServerStatus } from './types.js';

export interface McpHubOptions {
  /** `tools:` of the config: servers by name, in config order. */
  servers: Readonly<Record<string, ToolServerConfig>>;
  /** Agents in config order (their index names them in warnings: `agents[0].tools[1]`). */
  agents: readonly AgentToolsDef[];
  logger: Logger;
  /** `limits.max_tool_result_bytes`; default 64 KiB. */
  maxResultBytes?: number | undefined;
  /** Where images tools return are kept, so agents can post them; without it they stay lines. */
  files?: Pick<Files, 'keep' | 'maxPerMessage'> | undefined;
  /** Waits between attempts use it (a test's fake clock makes them step by step). */
  clock?: Clock | undefined;
  backoff?: Partial<BackoffOptions> | undefined;
  /** Limit of the handshake and of each tools/list page; default 15 s. */
  connectTimeoutMs?: number | undefined;
  stderrLimits?: StderrLimits | undefined;
  metrics?: ToolMetrics | undefined;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;

export class McpHub implements ToolServers {
  private readonly links = new Map<string, ServerLink>();
  private agents: readonly AgentToolsDef[];
  private readonly maxBytes: number;
  private readonly log: Logger;
  private names = new ToolNames([]);
  private readonly byAgent = new Map<string, readonly ToolInfo[]>();
  /** Missing entries already warned about, so a re-list does not repeat them. */
  private warned = new Set<string>();
  private started = false;

  constructor(private readonly opts: McpHubOptions) {
    this.agents = opts.agents;
    this.maxBytes = opts.maxResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES;
    this.log = opts.logger;
    const backoff = { ...DEFAULT_BACKOFF, ...(opts.backoff ?? {}) };
    for (const [name, config] of Object.entries(opts.servers)) {
      this.links.set(
        name,
        new ServerLink({
          name,
          config,
          logger: opts.logger,
          clock: opts.clock ?? systemClock,
          backoff,
          connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
          stderrLimits: opts.stderrLimits,
          onChange: () => this.changed(),
        }),
      );
    }
  }

  /** Connect every server at once; resolves when each has succeeded or failed once (failures retry). */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await Promise.all([...this.links.values()].map((l) => l.start()));
    this.changed();
  }

  /** Close every connection and end every started process. */
  async stop(): Promise<void> {
    await Promise.all([...this.links.values()].map((l) => l.stop()));
    this.changed();
  }

  /** A reloaded config's agents: their tool lists apply at once (servers do not change without a restart). */
  setAgents(agents: readonly AgentToolsDef[]): void {
    this.agents = agents;
    this.warned = new Set();
    this.changed();
  }

  toolsFor(agentId: string): readonly ToolInfo[] {
    const cached = this.byAgent.get(agentId);
    if (cached) return cached;
    const agent = this.agents.find((a) => a.id === agentId);
    const picked = agent?.tools?.length ? selectTools(agent.tools, (s) => this.upList(s)) : [];
    const out = picked.map(({ server, tool }) => this.info(server, tool));
    this.byAgent.set(agentId, out);
    return out;
  }

  async call(req: { server: string; tool: string; input: Record<string, unknown>; timeoutMs: number; signal: AbortSignal }): Promise<ToolCallResult> {
    const started = performance.now();
    let result: ToolCallResult;
    try {
      const link = this.links.get(req.server);
      result = link
        ? await link.call({ tool: req.tool, input: req.input ?? {}, timeoutMs: req.timeoutMs, signal: req.signal, maxBytes: this.maxBytes, files: this.opts.files ? { keeper: this.opts.files, logger: this.log } : undefined })
        : said('unavailable', `no MCP server "${req.server}" is configured under tools:`);
    } catch (err) {
      // callTool maps every failure it knows; this is the promise that call() never throws.
      result = said('error', `${req.server}.${req.tool} failed inside Chorus: ${err instanceof Error ? err.message : String(err)}`);
    }
    const seconds = (performance.now() - started) / 1000;
    this.log.debug({ server: req.server, tool: req.tool, outcome: result.outcome, bytes: result.bytes, ms: Math.round(seconds * 1000) }, 'tool call');
    this.opts.metrics?.toolCall({ server: req.server, tool: req.tool, outcome: result.outcome, seconds });
    return result;
  }

  status(): ToolServerStatus[] {
    return [...this.links.values()].map((l) => l.status());
  }

  resolveName(name: string): { server: string; tool: string } | undefined {
    return this.names.resolve(name);
  }

  missingTools(): MissingToolEntry[] {
    return missingEntries(this.agents, new Set(this.links.keys()), (s) => this.upList(s));
  }

  private upList(server: string): readonly ListedTool[] | undefined {
    const link = this.links.get(server);
    return link?.up ? link.tools : undefined;
  }

  private info(server: string, t: ListedTool): ToolInfo {
    const cfg = this.opts.servers[server]!;
    return {
      name: this.names.nameOf(server, t.name) ?? `${server}__${t.name}`,
      description: t.description?.trim() || t.title?.trim() || t.name,
      inputSchema: t.inputSchema,
      server,
      tool: t.name,
      readOnly: t.readOnly,
      idempotent: t.idempotent,
      confirm: cfg.confirm,
      approvers: cfg.approvers,
    };
  }

  /** A server came up, went down or re-listed: names, agents' lists and warnings follow. */
  private changed(): void {
    // Tools of servers that are down keep their names, so nothing shifts when they come back.
    const pairs = [...this.links.values()].flatMap((l) => l.tools.map((t) => ({ server: l.name, tool: t.name })));
    this.names = new ToolNames(pairs);
    this.byAgent.clear();
    for (const m of this.missingTools()) {
      const k = `${m.path}|${m.message}`;
      if (this.warned.has(k)) continue;
      this.warned.add(k);
      this.log.warn({ key: m.path, agent: m.agent, entry: m.entry }, `${m.path}: ${m.message}; the agent gets its other tools`);
    }
  }
}
