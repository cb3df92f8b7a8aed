/**
 * The config file's schema. Strict: unknown keys are errors, so a typo never silently
 * falls back to a default. Rules that span several keys live in rules.ts (`refineConfig`), so each
 * problem names its key.
 */
import { z } from 'zod';
import { agentToolsSchema, maxToolResultBytesSchema, toolsSchema } from './toolsSchema.js';
import { declaredGroupSchema } from './groupsSchema.js';
import { httpUrl } from './urls.js';

const slug = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a slug: lowercase letter first, then a-z 0-9 _ -, at most 32 characters');

const nonNegInt = z.number().int().min(0);
const posNum = z.number().positive();

/** Connection limits of the web channel; also the defaults when a test builds the channel by hand. */
export const WEB_CONNECTION_DEFAULTS = {
  headers_timeout_seconds: 20,
  request_timeout_seconds: 60,
  idle_timeout_seconds: 10,
  max_connections_per_address: 64,
  sse_heartbeat_seconds: 15,
} as const;

/** Per-group tunables and their defaults; also what `/group config` validates against. */
export const groupConfigSchema = z
  .object({
    reply_strategy: z.enum(['hybrid', 'mention_only', 'round_robin', 'selector']).default('hybrid'),
    max_agent_turns_per_message: nonNegInt.max(50).default(3),
    max_depth: nonNegInt.max(20).default(2),
    cooldown_seconds: z.number().min(0).max(3600).default(2),
    // How long a turn may wait for the model's first token (the wait for a model slot included);
    // a reply that keeps streaming is bounded by llm.idle_timeout_seconds and llm.reply_timeout_seconds instead.
    agent_reply_timeout_seconds: posNum.max(3600).default(30),
    // The same for voluntary turns and the selector's call.
    voluntary_timeout_seconds: posNum.max(3600).default(15),
    max_voluntary_responders: nonNegInt.max(50).default(2),
    sticky: z.boolean().default(false),
    last_speaker: slug.nullable().default(null),
    execution: z.enum(['sequential', 'parallel']).default('sequential'),
    // parallel: every voluntary candidate is asked at once; the first max_voluntary_responders
    // replies in candidate order are delivered (a round costs about one model latency, not N).
    voluntary_execution: z.enum(['sequential', 'parallel']).default('sequential'),
    history_turns: z.number().int().min(2).max(1000).default(40),
    // Per UTC day; replaced whole by a config change (`/group config budget.daily_usd 5` keeps the other).
    budget: z
      .object({
        daily_usd: z.number().positive().max(1_000_000).nullable().default(null),
        daily_tokens: z.number().int().positive().max(1e12).nullable().default(null),
      })
      .strict()
      .prefault({}),
    // Model ↔ tool round trips in one turn; at the limit the model must answer without tools.
    max_tool_steps: z.number().int().min(1).max(100).default(8),
    tool_timeout_seconds: posNum.max(3600).default(30),
    // An approval not given in time is a denial.
    tool_approval_timeout_seconds: posNum.max(86_400).default(300),
    // Telegram and Discord; the web page always shows every step.
    show_tools: z.enum(['none', 'compact', 'full']).default('compact'),
  })
  .strict();

const priceSchema = z
  .object({
    input: z.number().min(0),
    output: z.number().min(0),
    cache_write: z.number().min(0).optional(),
    cache_read: z.number().min(0).optional(),
  })
  .strict();

/** The default models: current Anthropic ones (prices and source in DEFAULT_PRICES). */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';
export const DEFAULT_SUMMARY_MODEL = 'claude-haiku-5-5';

/** Defaults of the model-call time limits (`llm.idle_timeout_seconds`, `llm.reply_timeout_seconds`). */
const DEFAULT_IDLE_TIMEOUT_SECONDS = 30;
const DEFAULT_REPLY_TIMEOUT_SECONDS = 300;

/** The overall cap on one model call: `reply_timeout_seconds`, else its deprecated alias, else 300. */
export function replyTimeoutSeconds(llm: { reply_timeout_seconds?: number | undefined; timeout_seconds?: number | undefined }): number {
  return llm.reply_timeout_seconds ?? llm.timeout_seconds ?? DEFAULT_REPLY_TIMEOUT_SECONDS;
}

/** The longest silence between two chunks of a streaming reply (`llm.idle_timeout_seconds`). */
export function idleTimeoutSeconds(llm: { idle_timeout_seconds?: number | undefined }): number {
  return llm.idle_timeout_seconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS;
}

/**
 * The model that writes summaries and the selector's picks: `llm.summary_model`, else
 * DEFAULT_SUMMARY_MODEL for Anthropic, else null — each agent's own model (an OpenAI-compatible
 * server such as Ollama, llama.cpp or vLLM serves only the models it has; an Anthropic name would be refused).
 */
export function summaryModelOf(llm: { provider: string; summary_model?: string | null | undefined }): string | null {
  if (llm.summary_model) return llm.summary_model;
  return llm.provider === 'openai' ? null : DEFAULT_SUMMARY_MODEL;
}

/** Keys that still work but should be renamed; logged as warnings at start. */
export function configDeprecations(cfg: ChorusConfig): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  if (cfg.llm.timeout_seconds !== undefined) {
    out.push({
      path: 'llm.timeout_seconds',
      message:
        `deprecated: read as llm.reply_timeout_seconds (${cfg.llm.timeout_seconds}), the overall cap on one model call; rename it. ` +
        'How long a turn may wait for the first token is the group\'s agent_reply_timeout_seconds / voluntary_timeout_seconds, ' +
        'and the longest silence while a reply streams is llm.idle_timeout_seconds',
    });
  }
  return out;
}

/** USD per million tokens; cache write defaults to input × 1.25, cache read to input × 0.1. */
export const DEFAULT_PRICES: Record<string, z.infer<typeof priceSchema>> = {
  // Current models, checked 2026-11-23 against https://platform.claude.com/docs/en/about-claude/pricing
  // and the model pages https://platform.claude.com/docs/en/models/sonnet-5-5/overview,
  // …/models/haiku-5-5/overview, …/about-claude/models/whats-new-opus-5. Cache writes are the
  // 5-minute rate (the only one Chorus uses).
  // Sonnet 5.5: cache hits cut from $0.20 to $0.10 on 2026-10-07 (0.05 × input).
  'claude-sonnet-5-5': { input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 },
  'claude-opus-5-5': { input: 4, output: 20, cache_write: 5, cache_read: 0.2 },
  // Haiku 5.5 bills prompts over 100,000 tokens (input + cache) at 5×; this row is the rate up to
  // there, so a longer prompt's cost here is a lower bound (summaries and selector calls are short).
  'claude-haiku-5-5': { input: 0.1, output: 0.5, cache_write: 0.125, cache_read: 0.01 },
  'claude-sonnet-5': { input: 2, output: 10, cache_write: 2.5, cache_read: 0.2 },
  'claude-opus-5': { input: 5, output: 25, cache_write: 6.25, cache_read: 0.5 },
  // Older models still served (same pricing page).
  'claude-opus-4-8': { input: 5, output: 25 },
  'claude-opus-4-7': { input: 5, output: 25 },
  'claude-opus-4-6': { input: 5, output: 25 },
  'claude-sonnet-4-6': { input: 3, output: 15 },
  'claude-opus-4-5': { input: 5, output: 25 },
  // End of life 2026-11-30 (the SDK warns on every call).
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-opus-4-1': { input: 15, output: 75 },
  'claude-sonnet-4': { input: 3, output: 15 },
};

/** A context window in tokens: at least room for a small prompt and reply, at most any model's. */
const contextTokens = z.number().int().min(512).max(10_000_000).nullish();

const agentSchema = z
  .object({
    id: slug,
    name: z.string().trim().min(1).max(64),
    persona: z.string().trim().min(1),
    model: z.string().min(1).nullable().default(null),
    avatar: z.string().min(1).nullable().default(null),
    color: z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour like "#2563eb"')
      .nullable()
      .default(null),
    aliases: z.array(z.string().regex(/^@?[\p{L}\p{N}_-]{1,32}$/u, 'must be a single word (letters, digits, _ or -)')).default([]),
    talkativeness: z.number().min(0).max(1).default(0.5),
    // This agent's model's context window, in tokens; unset: llm.context_tokens, else the model's known one.
    context_tokens: contextTokens,
    telegram: z.object({ token: z.string() }).strict().optional(),
    discord: z.object({ avatar_url: httpUrl().nullable().default(null) }).strict().optional(),
    // MCP servers (all their tools) or `server.tool` names from `tools:` this agent may call.
    tools: agentToolsSchema,
    // The model can see images; unset: yes for Claude models, no for provider openai (see visionOf).
    vision: z.boolean().nullish(),
  })
  .strict();

export const configSchema = z
  .object({
    data_dir: z.string().min(1).default('./data'),
    storage: z
      .object({
        /** `files`: logs under data_dir. `postgres`: one PostgreSQL database at `url` (several instances may share it). */
        kind: z.enum(['files', 'postgres']).default('files'),
        /** `always`: an acknowledged message survives power loss (group commit keeps it fast). Files only. */
        fsync: z.enum(['always', 'never']).default('always'),
        /** Connection string for `kind: postgres`, e.g. "${DATABASE_URL}"; empty counts as unset. */
        url: z
          .preprocess(
            (v) => (typeof v === 'string' && v.trim() === '' ? null : v),
            z.string().trim().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// connection string').nullable(),
          )
          .default(null),
      })
      .strict()
      .prefault({}),
    /**
     * Several instances on one database (storage.kind "postgres"): each group is run by one live
     * instance at a time, under a lease; another takes its groups over within `lease_seconds`
     * after it dies. `instance_id` names this instance (default: host name and process id).
     */
    cluster: z
      .object({
        instance_id: z.string().trim().min(1).max(100).regex(/^[A-Za-z0-9_.:@-]+$/, 'letters, digits and _ . : @ - only').nullable().default(null),
        lease_seconds: z.number().min(1).max(600).default(10),
      })
      .strict()
      .prefault({}),
    log_level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    llm: z
      .object({
        provider: z.enum(['anthropic', 'openai', 'scripted']).default('anthropic'),
        api_key: z.string().nullable().default(null),
        base_url: httpUrl().nullable().default(null),
        // Current Anthropic models (see DEFAULT_PRICES for the source): claude-sonnet-4-5 reaches
        // end of life on 2026-11-30.
        model: z.string().min(1).default(DEFAULT_MODEL),
        // Unset: DEFAULT_SUMMARY_MODEL for anthropic, each agent's own model for openai (see summaryModelOf).
        summary_model: z.string().min(1).nullish(),
        // The context window of the model(s), in tokens. Unset: the known window of
        // the model (Claude: 200k), else 4096 for openai (see src/core/session/contextBudget.ts).
        context_tokens: contextTokens,
        max_concurrency: z.number().int().min(1).max(4096).default(16),
        /**
         * Share of `max_concurrency` one group / one agent may hold. Absent or null: the defaults of
         * `defaultShares` (a quarter per group; half per agent when there are several),
         * filled in by the composition root. Optional rather than defaulted so configs built in code
         * stay valid without them.
         */
        max_concurrency_per_group: z.number().int().min(1).max(4096).nullish(),
        max_concurrency_per_agent: z.number().int().min(1).max(4096).nullish(),
        /**
         * Time limits of a model call (see src/core/router/LlmGate.ts). The time to the
         * first token is the group's `agent_reply_timeout_seconds` (`voluntary_timeout_seconds` for
         * voluntary turns); once output flows, these two apply. Thinking counts as output.
         * `idle_timeout_seconds`: the longest silence between two chunks of a reply; absent: 30
         * (`idleTimeoutSeconds`). Optional so configs built in code stay valid without it.
         */
        idle_timeout_seconds: posNum.max(3600).optional(),
        /**
         * The overall cap on one call, the wait for a slot included; a reply still streaming there
         * is kept as far as it got and marked cut. Absent: `timeout_seconds` if that is set, else
         * 300 (`replyTimeoutSeconds`). Optional so the deprecated alias can be told apart.
         */
        reply_timeout_seconds: posNum.max(3600).optional(),
        /** Deprecated alias of `reply_timeout_seconds` (a warning at start; see `configDeprecations`). */
        timeout_seconds: posNum.max(3600).optional(),
        max_retries: nonNegInt.max(10).default(2),
        max_tokens: z.number().int().min(16).max(64000).default(1024),
        /**
         * Longest reply kept, in UTF-8 bytes; longer ones are cut while streaming and marked. 32 KiB
         * is eight times a typical 1,024-token reply (so a normal answer is never cut, even with a
         * larger max_tokens) while a runaway model's reply stays small in the log, in every
         * session and in later prompts (history_turns × 32 KiB at worst). Absent: 32 KiB
         * (`DEFAULT_MAX_REPLY_BYTES`).
         */
        max_reply_bytes: z.number().int().min(1024).max(1024 * 1024).optional(),
        // The newest this many images and PDFs of a prompt go to a model that can see in full; older ones as a line.
        // Absent: 4 (DEFAULT_MAX_IMAGES). Optional so configs built in code stay valid without it.
        max_images_in_prompt: z.number().int().min(0).max(100).optional(),
        prices: z.record(z.string(), priceSchema).default({}),
      })
      .strict()
      .prefault({}),
    agents: z.array(agentSchema).min(1),
    aliases: z.record(z.string().regex(/^[\p{L}\p{N}_-]{1,32}$/u, 'must be a single word'), z.array(slug).min(1)).default({}),
    group_defaults: groupConfigSchema.prefault({}),
    limits: z
      .object({
        user_messages_per_minute: z.number().int().min(1).max(10000).default(20),
        // Reactions added or removed, per person per group (web: per client address).
        reactions_per_minute: z.number().int().min(1).max(10000).default(30),
        max_message_chars: z.number().int().min(1).max(100000).default(8000),
        // A tool's answer is cut to this many UTF-8 bytes (with a visible marker) before the model sees it.
        max_tool_result_bytes: maxToolResultBytesSchema,
        // A file is held in memory while it is checked and kept: 100 MB at most.
        max_file_bytes: z.number().int().min(1024).max(100 * 1024 * 1024).default(10 * 1024 * 1024),
        max_files_per_message: z.number().int().min(1).max(20).default(4),
        // An image whose header states more pixels is refused (a small file can decode to gigabytes).
        max_image_pixels: z.number().int().min(10_000).max(1_000_000_000).default(40_000_000),
        // Bytes of uploaded files held in memory at once while they are checked and kept (all
        // uploads together); past it an upload waits, its bytes on disk. At least one file's worth.
        upload_bytes_in_flight: z.number().int().min(1024 * 1024).max(4 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
        // What a bot that is not an agent gets from Chorus per partner (an agent's answers, the copies of its
        // messages in a room's other chats) a minute; needing more stops bots in the group until a person writes.
        bot_pair_events_per_minute: z.number().int().min(1).max(10000).default(10),
        // ... and so do this many for bots while no person writes in the group (a slow loop).
        bot_pair_events_without_person: z.number().int().min(1).max(100000).default(30),
      })
      .strict()
      .prefault({}),
    channels: z
      .object({
        web: z
          .object({
            enabled: z.boolean().default(true),
            host: z.string().min(1).default('127.0.0.1'),
            port: z.number().int().min(0).max(65535).default(8787),
            auth_token: z.string().nullable().default(null),
            // Slow clients are cut: time to send the headers, to send the whole
            // request, and with nothing moving either way (a silent new or kept-alive connection,
            // a client that stops reading).
            headers_timeout_seconds: posNum.max(3600).default(WEB_CONNECTION_DEFAULTS.headers_timeout_seconds),
            request_timeout_seconds: posNum.max(3600).default(WEB_CONNECTION_DEFAULTS.request_timeout_seconds),
            idle_timeout_seconds: posNum.max(3600).default(WEB_CONNECTION_DEFAULTS.idle_timeout_seconds),
            // Open connections one address may hold; 0 = no cap (e.g. behind a reverse proxy).
            max_connections_per_address: nonNegInt.max(1_000_000).default(WEB_CONNECTION_DEFAULTS.max_connections_per_address),
            // SSE comment lines; a stream that cannot take them for two intervals is closed.
            sse_heartbeat_seconds: posNum.max(3600).default(WEB_CONNECTION_DEFAULTS.sse_heartbeat_seconds),
          })
          .strict()
          .prefault({}),
        telegram: z
          .object({
            enabled: z.boolean().default(false),
            api_root: httpUrl().default('https://api.telegram.org'),
            auto_create_groups: z.boolean().default(true),
            admins: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
            // A bot that only posts: people's messages from the room's other chats, under their
            // names. Unset: those go through the first participant agent's bot of the chat.
            relay_token: z.string().nullable().default(null),
            // polling: each bot long-polls getUpdates; webhook: Telegram POSTs updates to the web
            // channel's HTTP server (any instance behind a load balancer can take them).
            mode: z.enum(['polling', 'webhook']).default('polling'),
            webhook: z
              .object({
                // Public base URL Telegram posts to, e.g. https://chorus.example.com (https; http only for loopback).
                url: z.string().nullable().default(null),
                // Each bot gets <path>/<agent id> on the web channel's server.
                path: z.string().default('/telegram'),
                // Sent back by Telegram in X-Telegram-Bot-Api-Secret-Token; required in webhook mode.
                secret_token: z.string().nullable().default(null),
              })
              .strict()
              .prefault({}),
          })
          .strict()
          .prefault({}),
        discord: z
          .object({
            enabled: z.boolean().default(false),
            token: z.string().nullable().default(null),
            api_base: httpUrl().nullable().default(null),
            channels: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
            admins: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
            allow_bots: z.boolean().default(false),
            webhook_name: z.string().min(1).max(80).default('Chorus'),
            emoji_avatar_base: httpUrl().nullable().default(null),
            // Webhooks cannot react: bot = the gateway bot shows agents' reactions (under its own
            // name); off = they are recorded and shown on the web page only.
            agent_reactions: z.enum(['off', 'bot']).default('off'),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    groups: z.array(declaredGroupSchema(slug, groupConfigSchema.partial())).default([]),
    /** MCP servers by name (see toolsSchema.ts); agents name them in `agents[].tools`. */
    tools: toolsSchema,
  })
  .strict();

/** A validated config, defaults filled in. */
export type ChorusConfig = z.infer<typeof configSchema>;
export type DeclaredGroup = ChorusConfig['groups'][number];
