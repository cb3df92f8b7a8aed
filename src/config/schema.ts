/**
 * The config file's schema (SPEC §2). Strict: unknown keys are errors, so a typo never silently
 * falls back to a default. Cross-field rules live in `refineConfig` so each problem names its key.
 */
import { z } from 'zod';

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
    agent_reply_timeout_seconds: posNum.max(3600).default(30),
    voluntary_timeout_seconds: posNum.max(3600).default(15),
    max_voluntary_responders: nonNegInt.max(50).default(2),
    sticky: z.boolean().default(false),
    last_speaker: slug.nullable().default(null),
    execution: z.enum(['sequential', 'parallel']).default('sequential'),
    history_turns: z.number().int().min(2).max(1000).default(40),
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

/** USD per million tokens; cache write defaults to input × 1.25, cache read to input × 0.1. */
export const DEFAULT_PRICES: Record<string, z.infer<typeof priceSchema>> = {
  'claude-opus-4-5': { input: 5, output: 25 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-opus-4-1': { input: 15, output: 75 },
  'claude-sonnet-4': { input: 3, output: 15 },
};

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
    telegram: z.object({ token: z.string() }).strict().optional(),
    discord: z.object({ avatar_url: z.string().url().nullable().default(null) }).strict().optional(),
  })
  .strict();

const declaredGroupSchema = z
  .object({
    channel: z.enum(['web', 'telegram', 'discord']),
    chat_id: z.union([z.string().min(1), z.number()]).transform(String),
    title: z.string().min(1).max(100).optional(),
    participants: z.array(slug).min(1),
    config: groupConfigSchema.partial().optional(),
  })
  .strict();

export const configSchema = z
  .object({
    data_dir: z.string().min(1).default('./data'),
    storage: z
      .object({
        kind: z.enum(['files']).default('files'),
        /** `always`: an acknowledged message survives power loss (group commit keeps it fast). */
        fsync: z.enum(['always', 'never']).default('always'),
      })
      .strict()
      .prefault({}),
    log_level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    llm: z
      .object({
        provider: z.enum(['anthropic', 'openai', 'scripted']).default('anthropic'),
        api_key: z.string().nullable().default(null),
        base_url: z.string().url().nullable().default(null),
        model: z.string().min(1).default('claude-sonnet-4-5'),
        summary_model: z.string().min(1).default('claude-haiku-4-5'),
        max_concurrency: z.number().int().min(1).max(4096).default(16),
        /**
         * Share of `max_concurrency` one group / one agent may hold. Absent or null: the defaults of
         * `defaultShares` (a quarter per group; half per agent when there are several),
         * filled in by the composition root. Optional rather than defaulted so configs built in code
         * stay valid without them.
         */
        max_concurrency_per_group: z.number().int().min(1).max(4096).nullish(),
        max_concurrency_per_agent: z.number().int().min(1).max(4096).nullish(),
        timeout_seconds: posNum.max(3600).default(60),
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
        max_message_chars: z.number().int().min(1).max(100000).default(8000),
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
            // Slow clients are cut (issue 13): time to send the headers, to send the whole
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
            api_root: z.string().url().default('https://api.telegram.org'),
            auto_create_groups: z.boolean().default(true),
            admins: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
          })
          .strict()
          .prefault({}),
        discord: z
          .object({
            enabled: z.boolean().default(false),
            token: z.string().nullable().default(null),
            api_base: z.string().url().nullable().default(null),
            channels: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
            admins: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
            allow_bots: z.boolean().default(false),
            webhook_name: z.string().min(1).max(80).default('Chorus'),
            emoji_avatar_base: z.string().url().nullable().default(null),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    groups: z.array(declaredGroupSchema).default([]),
  })
  .strict();

/** A validated config, defaults filled in. */
export type ChorusConfig = z.infer<typeof configSchema>;
export type AgentConfig = ChorusConfig['agents'][number];
export type DeclaredGroup = ChorusConfig['groups'][number];

/** One problem found in a config: where and what. */
export interface ConfigProblem {
  path: string;
  message: string;
}

/** Rules that span several keys. Returns problems in file order. */
export function refineConfig(cfg: ChorusConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const ids = new Map<string, number>();
  cfg.agents.forEach((a, i) => {
    if (ids.has(a.id)) problems.push({ path: `agents[${i}].id`, message: `duplicate agent id "${a.id}" (also agents[${ids.get(a.id)}])` });
    else ids.set(a.id, i);
  });
  const known = [...ids.keys()];
  const unknown = (id: string) => `unknown agent "${id}" (known: ${known.join(', ')})`;

  // Handles must be unambiguous: an alias may not shadow another agent's id or name.
  const handleOwner = new Map<string, string>();
  const claim = (handle: string, owner: string, path: string) => {
    const h = handle.replace(/^@/, '').toLowerCase();
    const prev = handleOwner.get(h);
    if (prev && prev !== owner) problems.push({ path, message: `handle "@${h}" is already used by "${prev}"` });
    else handleOwner.set(h, owner);
  };
  cfg.agents.forEach((a, i) => {
    claim(a.id, a.id, `agents[${i}].id`);
    claim(a.name.replace(/\s+/g, ''), a.id, `agents[${i}].name`);
    a.aliases.forEach((al, j) => claim(al, a.id, `agents[${i}].aliases[${j}]`));
  });
  for (const [alias, members] of Object.entries(cfg.aliases)) {
    const lower = alias.toLowerCase();
    if (lower === 'all' || lower === 'everyone') problems.push({ path: `aliases.${alias}`, message: '"all" and "everyone" are built in' });
    else claim(alias, `alias:${alias}`, `aliases.${alias}`);
    members.forEach((m, j) => {
      if (!ids.has(m)) problems.push({ path: `aliases.${alias}[${j}]`, message: unknown(m) });
    });
  }
  for (const key of ['max_concurrency_per_group', 'max_concurrency_per_agent'] as const) {
    const v = cfg.llm[key];
    if (v != null && v > cfg.llm.max_concurrency) {
      problems.push({ path: `llm.${key}`, message: `must be at most llm.max_concurrency (${cfg.llm.max_concurrency}); it is a share of it` });
    }
  }
  if (cfg.group_defaults.last_speaker && !ids.has(cfg.group_defaults.last_speaker)) {
    problems.push({ path: 'group_defaults.last_speaker', message: unknown(cfg.group_defaults.last_speaker) });
  }
  const chats = new Set<string>();
  cfg.groups.forEach((g, i) => {
    g.participants.forEach((p, j) => {
      if (!ids.has(p)) problems.push({ path: `groups[${i}].participants[${j}]`, message: unknown(p) });
    });
    const key = `${g.channel}:${g.chat_id}`;
    if (chats.has(key)) problems.push({ path: `groups[${i}].chat_id`, message: `another group is already declared for ${key}` });
    chats.add(key);
    if (g.channel === 'web' && !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(g.chat_id)) {
      problems.push({ path: `groups[${i}].chat_id`, message: 'web rooms need a slug id (a-z 0-9 _ -)' });
    }
    if (g.config?.last_speaker && !ids.has(g.config.last_speaker)) {
      problems.push({ path: `groups[${i}].config.last_speaker`, message: unknown(g.config.last_speaker) });
    }
    if (g.channel !== 'web' && !cfg.channels[g.channel].enabled) {
      problems.push({ path: `groups[${i}].channel`, message: `channels.${g.channel}.enabled is false` });
    }
  });

  if (cfg.channels.telegram.enabled) {
    let withToken = 0;
    cfg.agents.forEach((a, i) => {
      if (a.telegram === undefined) return;
      if (!a.telegram.token.trim()) problems.push({ path: `agents[${i}].telegram.token`, message: 'required when channels.telegram.enabled' });
      else if (!/^\d+:[\w-]+$/.test(a.telegram.token.trim())) {
        problems.push({ path: `agents[${i}].telegram.token`, message: 'does not look like a bot token from @BotFather ("123456:ABC...")' });
      } else withToken++;
    });
    if (withToken === 0 && !problems.some((p) => p.path.endsWith('.telegram.token'))) {
      problems.push({ path: 'channels.telegram.enabled', message: 'no agent has a telegram.token; give each agent its own bot token' });
    }
  }
  if (cfg.channels.web.headers_timeout_seconds > cfg.channels.web.request_timeout_seconds) {
    problems.push({ path: 'channels.web.headers_timeout_seconds', message: `must be at most channels.web.request_timeout_seconds (${cfg.channels.web.request_timeout_seconds}); the headers are part of the request` });
  }
  if (cfg.channels.discord.enabled && !cfg.channels.discord.token?.trim()) {
    problems.push({ path: 'channels.discord.token', message: 'required when channels.discord.enabled' });
  }
  if (cfg.channels.web.enabled && !cfg.channels.web.auth_token && !isLoopback(cfg.channels.web.host)) {
    problems.push({
      path: 'channels.web.host',
      message: `refusing to listen on ${cfg.channels.web.host} without channels.web.auth_token; set a token or use 127.0.0.1`,
    });
  }
  return problems;
}

/** Loopback hosts are the only ones allowed without a web auth token. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
