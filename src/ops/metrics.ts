/**
 * The `/metrics` series, on prom-client with a registry of our own (a second Chorus in the same
 * process, as in tests, never shares or clashes series). The core reports events through the
 * `Metrics` port; this turns them into Prometheus counters, histograms and gauges.
 *
 * Conventions: durations are histograms in seconds (`_seconds`), counts are counters (`_total`),
 * and every counter whose label values are known at start (agents, enabled channels, configured
 * models, failure reasons, token kinds) is created at zero, so `rate()` and alerts see a flat
 * line from the first scrape instead of "no data" until the first event.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Readiness } from '../core/readModels.js';
import type { ChannelKind } from '../core/types.js';
import { TURN_FAILURE_REASONS, type LlmCallReport, type Metrics } from '../core/metrics.js';
import type { ToolMetrics, ToolServerStatus } from '../tools/types.js';

/** What the series are created for at start. */
export interface MetricsSetup {
  agents: readonly string[];
  channels: readonly ChannelKind[];
  /** Every model name the config can ask for (llm.model, summary_model, agents' models). */
  models: readonly string[];
  /** MCP servers configured under `tools:`. */
  toolServers?: readonly string[] | undefined;
}

/** Read at scrape time: how busy the router is and whether everything is connected. */
export interface MetricsSources {
  load(): { queuedRounds: number; llmCalls: number; groups: number };
  readiness(): Readiness;
  /** The MCP tool servers (absent: none). */
  tools?(): readonly ToolServerStatus[];
}

const PURPOSES = ['turn', 'summary', 'selector'] as const;
const TOKEN_KINDS = ['input', 'output', 'cache_read', 'cache_write'] as const;

/** A round is one or more model calls plus writes: from a fraction of a second to minutes. */
const ROUND_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];
/** One model call: tens of milliseconds (a local model, a failure) to the 60 s default timeout. */
const LLM_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];
/** Time to first token: what a reader of the web feed waits before text appears. */
const FIRST_TOKEN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30];
/** One tool call: a local lookup in milliseconds to the 30 s default limit and beyond. */
const TOOL_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

export class PromMetrics implements Metrics, ToolMetrics {
  readonly registry = new Registry();
  private sources: MetricsSources | undefined;

  private readonly messages: Counter<'channel'>;
  private readonly rounds: Histogram;
  private readonly llmSeconds: Histogram<'purpose' | 'outcome'>;
  private readonly firstToken: Histogram<'purpose'>;
  private readonly replies: Counter<'agent'>;
  private readonly passes: Counter<'agent'>;
  private readonly failures: Counter<'agent' | 'reason'>;
  private readonly tokens: Counter<'model' | 'kind'>;
  private readonly cost: Counter<'model'>;
  private readonly unpriced: Counter<'model'>;
  private readonly deadLetters: Counter<'channel'>;
  private readonly toolCalls: Counter<'server' | 'tool' | 'outcome'>;
  private readonly toolSeconds: Histogram<'server' | 'outcome'>;

  constructor(setup: MetricsSetup) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.messages = new Counter({ name: 'chorus_messages_total', help: 'Human messages recorded for an answer, by channel.', labelNames: ['channel'], registers });
    this.rounds = new Histogram({ name: 'chorus_round_duration_seconds', help: 'Time from the start of a round to its end (every turn taken or skipped).', buckets: ROUND_BUCKETS, registers });
    this.llmSeconds = new Histogram({
      name: 'chorus_llm_call_duration_seconds',
      help: 'Model call time by purpose and outcome ("ok" or the failure code); failures count too.',
      labelNames: ['purpose', 'outcome'],
      buckets: LLM_BUCKETS,
      registers,
    });
    this.firstToken = new Histogram({ name: 'chorus_llm_first_token_seconds', help: 'Time to the first streamed text of a model call.', labelNames: ['purpose'], buckets: FIRST_TOKEN_BUCKETS, registers });
    this.replies = new Counter({ name: 'chorus_replies_total', help: 'Agent replies recorded for delivery.', labelNames: ['agent'], registers });
    this.passes = new Counter({ name: 'chorus_passes_total', help: 'Turns an agent passed on.', labelNames: ['agent'], registers });
    this.failures = new Counter({ name: 'chorus_turn_failures_total', help: 'Agent turns that failed, by reason (the model error code).', labelNames: ['agent', 'reason'], registers });
    this.tokens = new Counter({ name: 'chorus_llm_tokens_total', help: 'Tokens by model and kind (input = uncached input).', labelNames: ['model', 'kind'], registers });
    this.cost = new Counter({ name: 'chorus_llm_cost_usd_total', help: 'Estimated model cost in US dollars, from the price table.', labelNames: ['model'], registers });
    this.unpriced = new Counter({
      name: 'chorus_llm_unpriced_calls_total',
      help: 'Successful calls of models without a known price (not in chorus_llm_cost_usd_total; add llm.prices).',
      labelNames: ['model'],
      registers,
    });

    this.deadLetters = new Counter({
      name: 'chorus_dead_letters_total',
      help: 'Inbound updates that could never be handed over (wrong shape), kept as dead letters instead of refused forever, by channel.',
      labelNames: ['channel'],
      registers,
    });

    this.toolCalls = new Counter({ name: 'chorus_tool_calls_total', help: 'MCP tool calls by server, tool and outcome (ok, error, timeout, unavailable, cancelled).', labelNames: ['server', 'tool', 'outcome'], registers });
    this.toolSeconds = new Histogram({ name: 'chorus_tool_call_duration_seconds', help: 'MCP tool call time by server and outcome; failures count too.', labelNames: ['server', 'outcome'], buckets: TOOL_BUCKETS, registers });
    for (const server of setup.toolServers ?? []) this.toolSeconds.zero({ server, outcome: 'ok' });

    for (const channel of setup.channels) {
      this.messages.inc({ channel }, 0);
      this.deadLetters.inc({ channel }, 0);
    }
    for (const agent of setup.agents) {
      this.replies.inc({ agent }, 0);
      this.passes.inc({ agent }, 0);
      for (const reason of TURN_FAILURE_REASONS) this.failures.inc({ agent, reason }, 0);
    }
    for (const model of setup.models) {
      for (const kind of TOKEN_KINDS) this.tokens.inc({ model, kind }, 0);
      this.cost.inc({ model }, 0);
      this.unpriced.inc({ model }, 0);
    }
    for (const purpose of PURPOSES) {
      this.llmSeconds.zero({ purpose, outcome: 'ok' });
      this.firstToken.zero({ purpose });
    }
    this.rounds.zero({});
    this.gauges();
  }

  /** Where the gauges read from; set once the router exists. */
  watch(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** The exposition text and its content type, for `GET /metrics`. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  messageRecorded(channel: ChannelKind): void {
    this.messages.inc({ channel });
  }

  roundFinished(seconds: number): void {
    this.rounds.observe(Math.max(0, seconds));
  }

  llmCall(r: LlmCallReport): void {
    this.llmSeconds.observe({ purpose: r.purpose, outcome: r.outcome }, Math.max(0, r.seconds));
    if (r.firstTokenSeconds !== undefined) this.firstToken.observe({ purpose: r.purpose }, Math.max(0, r.firstTokenSeconds));
    if (r.outcome !== 'ok') return;
    if (r.usage) {
      const u = r.usage;
      const add = (kind: (typeof TOKEN_KINDS)[number], n: number) => {
        if (n > 0) this.tokens.inc({ model: r.model, kind }, n);
      };
      add('input', u.inputTokens);
      add('output', u.outputTokens);
      add('cache_read', u.cacheReadTokens);
      add('cache_write', u.cacheWriteTokens);
    }
    if (typeof r.costUsd === 'number') this.cost.inc({ model: r.model }, Math.max(0, r.costUsd));
    else this.unpriced.inc({ model: r.model });
  }

  /** An inbound item was kept as a dead letter (see DeadLetters). */
  deadLettered(channel: ChannelKind): void {
    this.deadLetters.inc({ channel });
  }

  /** One MCP tool call ended (the tool host reports every call, whatever its outcome). */
  toolCall(r: { server: string; tool: string; outcome: string; seconds: number }): void {
    this.toolCalls.inc({ server: r.server, tool: r.tool, outcome: r.outcome });
    this.toolSeconds.observe({ server: r.server, outcome: r.outcome }, Math.max(0, r.seconds));
  }

  replied(agentId: string): void {
    this.replies.inc({ agent: agentId });
  }

  passed(agentId: string): void {
    this.passes.inc({ agent: agentId });
  }

  turnFailed(agentId: string, reason: string): void {
    this.failures.inc({ agent: agentId, reason });
  }

  /** Gauges are read when scraped, from the router and the channels, never kept in step by hand. */
  private gauges(): void {
    const registers = [this.registry];
    const self = this;
    new Gauge({
      name: 'chorus_queue_depth',
      help: 'Rounds waiting or running, across groups.',
      registers,
      collect() {
        this.set(self.sources?.load().queuedRounds ?? 0);
      },
    });
    new Gauge({
      name: 'chorus_llm_in_flight',
      help: 'Model calls waiting for a slot or running.',
      registers,
      collect() {
        this.set(self.sources?.load().llmCalls ?? 0);
      },
    });
    new Gauge({
      name: 'chorus_groups',
      help: 'Live (not dissolved) groups.',
      registers,
      collect() {
        this.set(self.sources?.load().groups ?? 0);
      },
    });
    new Gauge({
      name: 'chorus_store_writable',
      help: '1 when the store takes writes, 0 after a failed write until it recovers.',
      registers,
      collect() {
        const r = self.sources?.readiness();
        this.set(r ? (r.store.writable ? 1 : 0) : 0);
      },
    });
    new Gauge({
      name: 'chorus_channel_connected',
      help: '1 when the channel is connected with every bot / channel working, else 0.',
      labelNames: ['channel'],
      registers,
      collect() {
        this.reset();
        const channels = self.sources?.readiness().channels ?? {};
        for (const [channel, status] of Object.entries(channels)) this.set({ channel }, status.ok ? 1 : 0);
      },
    });
    new Gauge({
      name: 'chorus_tool_server_up',
      help: '1 when the MCP tool server is connected with its tools listed, else 0 (connecting, or down and waiting to retry).',
      labelNames: ['server'],
      registers,
      collect() {
        this.reset();
        for (const s of self.sources?.tools?.() ?? []) this.set({ server: s.name }, s.state === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'chorus_channel_part_connected',
      help: '1 when one part of a channel works: a Telegram agent bot (part = agent id) or a Discord channel (part = channel id).',
      labelNames: ['channel', 'part'],
      registers,
      collect() {
        this.reset();
        const channels = self.sources?.readiness().channels ?? {};
        for (const [channel, status] of Object.entries(channels)) {
          for (const [part, s] of Object.entries({ ...(status.bots ?? {}), ...(status.channels ?? {}) })) this.set({ channel, part }, s.ok ? 1 : 0);
        }
      },
    });
  }
}
