/**
 * Rules of a config that span several keys, checked after the schema has filled in the defaults:
 * agent ids and handles that collide, references to agents that do not exist, a channel a group
 * needs but that is off, Telegram webhook settings, MCP tool servers (toolRules.ts), and a web
 * server that would listen beyond this machine without a token. Each problem names the key to fix,
 * in file order.
 */
import type { ChorusConfig } from './schema.js';
import { toolProblems } from './toolRules.js';

/** One problem found in a config: where and what. */
export interface ConfigProblem {
  path: string;
  message: string;
}

/** Rules that span several keys. Returns problems in file order. */
export function refineConfig(cfg: ChorusConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (cfg.storage.kind === 'postgres' && !cfg.storage.url) {
    problems.push({ path: 'storage.url', message: 'required when storage.kind is "postgres" (e.g. url: ${DATABASE_URL})' });
  }
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
  // Every chat belongs to one declared group at most: its home or one chat of its room.
  const chats = new Map<string, string>();
  cfg.groups.forEach((g, i) => {
    g.participants.forEach((p, j) => {
      if (!ids.has(p)) problems.push({ path: `groups[${i}].participants[${j}]`, message: unknown(p) });
    });
    const listed = g.chats ?? [{ channel: g.channel, chat_id: g.chat_id }];
    listed.forEach((c, j) => {
      const at = g.chats ? `groups[${i}].chats[${j}]` : `groups[${i}]`;
      // A room's web chat is found by the group's id: it is no chat another group could claim.
      if (c.chat_id === undefined) return;
      const key = `${c.channel}:${c.chat_id}`;
      const prev = chats.get(key);
      if (prev) problems.push({ path: `${at}.chat_id`, message: `${key} is already a chat of ${prev}` });
      else chats.set(key, at);
      if (c.channel === 'web' && !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(c.chat_id)) {
        problems.push({ path: `${at}.chat_id`, message: g.chats && j === 0 && !g.chats[0]!.chat_id ? `the title makes no usable room id ("${c.chat_id}"); give chat_id (a slug)` : 'web rooms need a slug id (a-z 0-9 _ -)' });
      }
    });
    listed.forEach((c, j) => {
      if (c.channel !== 'web' && !cfg.channels[c.channel].enabled) problems.push({ path: g.chats ? `groups[${i}].chats[${j}].channel` : `groups[${i}].channel`, message: `channels.${c.channel}.enabled is false` });
    });
    if (g.config?.last_speaker && !ids.has(g.config.last_speaker)) {
      problems.push({ path: `groups[${i}].config.last_speaker`, message: unknown(g.config.last_speaker) });
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
    if (cfg.channels.telegram.mode === 'webhook') problems.push(...webhookProblems(cfg));
    const relay = cfg.channels.telegram.relay_token?.trim();
    if (relay && !/^\d+:[\w-]+$/.test(relay)) {
      problems.push({ path: 'channels.telegram.relay_token', message: 'does not look like a bot token from @BotFather ("123456:ABC...")' });
    } else if (relay) {
      // The relay bot's posts are never read as input; an agent's bot must read its chats.
      const i = cfg.agents.findIndex((a) => a.telegram?.token.trim() === relay);
      if (i >= 0) problems.push({ path: 'channels.telegram.relay_token', message: `is the bot token of agents[${i}] ("${cfg.agents[i]!.id}"); the relay needs a bot of its own from @BotFather` });
    }
  }
  if (cfg.llm.timeout_seconds !== undefined && cfg.llm.reply_timeout_seconds !== undefined) {
    problems.push({ path: 'llm.timeout_seconds', message: 'is the deprecated name of llm.reply_timeout_seconds; set only llm.reply_timeout_seconds' });
  }
  if (cfg.channels.web.headers_timeout_seconds > cfg.channels.web.request_timeout_seconds) {
    problems.push({ path: 'channels.web.headers_timeout_seconds', message: `must be at most channels.web.request_timeout_seconds (${cfg.channels.web.request_timeout_seconds}); the headers are part of the request` });
  }
  if (cfg.channels.discord.enabled && !cfg.channels.discord.token?.trim()) {
    problems.push({ path: 'channels.discord.token', message: 'required when channels.discord.enabled' });
  }
  problems.push(...toolProblems(cfg));
  if (cfg.channels.web.enabled && !cfg.channels.web.auth_token && !isLoopback(cfg.channels.web.host)) {
    problems.push({
      path: 'channels.web.host',
      message: `refusing to listen on ${cfg.channels.web.host} without channels.web.auth_token; set a token or use 127.0.0.1`,
    });
  }
  return problems;
}

/** Paths the web server answers itself; a webhook path may not hide them. */
const RESERVED_PATHS = ['/api', '/healthz', '/readyz', '/metrics'];

/** Telegram's rule for secret_token: 1–256 characters of A-Z a-z 0-9 _ -. */
const TELEGRAM_SECRET_RE = /^[A-Za-z0-9_-]{1,256}$/;

/** Telegram webhook mode: a public URL, a path of our own, a secret, and the HTTP server to serve it on. */
function webhookProblems(cfg: ChorusConfig): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  const wh = cfg.channels.telegram.webhook;
  const url = wh.url?.trim();
  if (!url) out.push({ path: 'channels.telegram.webhook.url', message: 'required when channels.telegram.mode is "webhook" (the public https base URL Telegram posts to)' });
  else {
    let u: URL | undefined;
    try {
      u = new URL(url);
    } catch {
      out.push({ path: 'channels.telegram.webhook.url', message: `"${url}" is not a URL (e.g. https://chorus.example.com)` });
    }
    if (u && u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopback(u.hostname.replace(/^\[|\]$/g, '')))) {
      out.push({ path: 'channels.telegram.webhook.url', message: 'must be an https URL (Telegram only posts to https; http is allowed for 127.0.0.1 in tests)' });
    } else if (u && (u.search || u.hash)) {
      out.push({ path: 'channels.telegram.webhook.url', message: 'must not have a query or fragment; put the path in channels.telegram.webhook.path' });
    }
  }
  const path = wh.path;
  if (!/^\/[A-Za-z0-9._~\/-]*[A-Za-z0-9._~-]$/.test(path) || path.includes('//')) {
    out.push({ path: 'channels.telegram.webhook.path', message: 'must start with "/" and contain only A-Z a-z 0-9 . _ ~ - / (e.g. /telegram)' });
  } else if (RESERVED_PATHS.some((r) => path === r || path.startsWith(`${r}/`))) {
    out.push({ path: 'channels.telegram.webhook.path', message: `must not be under ${RESERVED_PATHS.join(', ')}: the web server answers those itself` });
  }
  const secret = wh.secret_token;
  if (!secret) {
    out.push({ path: 'channels.telegram.webhook.secret_token', message: 'required when channels.telegram.mode is "webhook" (e.g. "${TELEGRAM_WEBHOOK_SECRET}"); Telegram sends it with every update' });
  } else if (!TELEGRAM_SECRET_RE.test(secret)) {
    out.push({ path: 'channels.telegram.webhook.secret_token', message: 'must be 1–256 characters of A-Z a-z 0-9 _ - (Telegram\'s rule)' });
  }
  if (!cfg.channels.web.enabled) {
    out.push({ path: 'channels.telegram.mode', message: '"webhook" needs channels.web.enabled: true; the webhook endpoints are served by the web channel\'s HTTP server' });
  }
  return out;
}

/** Loopback hosts are the only ones allowed without a web auth token. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
