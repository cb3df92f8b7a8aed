/**
 * Finding, reading and validating the config file. Every problem becomes one readable line that
 * names its key path; callers print them and exit 2 (never a stack trace).
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { configSchema, refineConfig, type ChorusConfig, type ConfigProblem } from './schema.js';
import { DEFAULT_CONFIG_YAML } from './defaults.js';

/** A config that could not be loaded; `problems` has one entry per mistake. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly source: string,
    readonly problems: ConfigProblem[],
  ) {
    super(`${source}: ${problems.length} problem(s)\n` + problems.map((p) => `  ${p.path}: ${p.message}`).join('\n'));
  }
}

/** Where the config came from and what it says. */
export interface LoadedConfig {
  config: ChorusConfig;
  /** File path, or "built-in defaults". */
  source: string;
  usedDefaults: boolean;
  /** Environment variables referenced without a default and not set. */
  missingEnv: string[];
}

/** `--config PATH`, else `$CHORUS_CONFIG`, else `./config.yaml`, else built-in defaults (SPEC §2). */
export function resolveConfigPath(cliPath: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string | null {
  if (cliPath) return resolve(cwd, cliPath);
  if (env.CHORUS_CONFIG) return resolve(cwd, env.CHORUS_CONFIG);
  const local = resolve(cwd, 'config.yaml');
  return existsSync(local) ? local : null;
}

/** Replace `${VAR}` and `${VAR:-default}` from the environment. `$${` escapes a literal `${`. */
export function substituteEnv(text: string, env: NodeJS.ProcessEnv): { text: string; missing: string[] } {
  const missing: string[] = [];
  const replace = (part: string) =>
    part.replace(/\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (whole, name: string, fallback: string | undefined) => {
      if (whole.startsWith('$$')) return whole.slice(1);
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      missing.push(name);
      return '';
    });
  // Comments are left alone: documentation like "${VAR}" must not count as a missing variable.
  const out = text
    .split('\n')
    .map((line) => {
      const at = commentStart(line);
      return at < 0 ? replace(line) : replace(line.slice(0, at)) + line.slice(at);
    })
    .join('\n');
  return { text: out, missing };
}

/** Index of a YAML comment's `#` (at line start or after whitespace, outside quotes), or -1. */
function commentStart(line: string): number {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return i;
  }
  return -1;
}

/** Load from a path (or the built-in defaults when `path` is null). Throws ConfigError. */
export function loadConfig(path: string | null, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  if (path === null) {
    const { config, missing } = parseConfigText(DEFAULT_CONFIG_YAML, 'built-in defaults', env);
    return { config, source: 'built-in defaults', usedDefaults: true, missingEnv: missing };
  }
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(path, [{ path: '(file)', message: code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? 'error'})` }]);
  }
  const { config, missing } = parseConfigText(raw, path, env);
  return { config, source: path, usedDefaults: false, missingEnv: missing };
}

/** Parse and validate config text. Throws ConfigError with every problem found. */
export function parseConfigText(raw: string, source: string, env: NodeJS.ProcessEnv = process.env): { config: ChorusConfig; missing: string[] } {
  const { text, missing } = substituteEnv(raw, env);
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return { path: pos ? `line ${pos.line}, column ${pos.col}` : '(yaml)', message: firstLine(e.message).replace(/ at line \d+, column \d+:?$/, '') };
      }),
    );
  }
  const data: unknown = doc.toJS() ?? {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError(source, [{ path: '(root)', message: 'expected a mapping of keys (data_dir, llm, agents, ...)' }]);
  }
  const parsed = configSchema.safeParse(normalizeEmpty(data), { reportInput: true });
  if (!parsed.success) {
    throw new ConfigError(source, withEnvHint(formatIssues(parsed.error.issues), missing));
  }
  const problems = refineConfig(parsed.data);
  if (problems.length > 0) throw new ConfigError(source, withEnvHint(problems, missing));
  return { config: parsed.data, missing };
}

/** An empty `${VAR}` leaves `key: ""` or `key:`; treat both as "not set" for optional secrets. */
function normalizeEmpty(data: object): unknown {
  const visit = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => visit(x, ''));
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x, k)]));
    }
    if (v === '' && (key === 'api_key' || key === 'auth_token' || key === 'base_url' || key === 'api_base')) return null;
    if (v === null && key === 'token') return '';
    return v;
  };
  return visit(data, '');
}

function withEnvHint(problems: ConfigProblem[], missing: string[]): ConfigProblem[] {
  if (missing.length === 0) return problems;
  return [...problems, { path: '(environment)', message: `not set: ${[...new Set(missing)].join(', ')}` }];
}

/** Zod path → `agents[1].telegram.token`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out || '(root)';
}

/** One readable problem per zod issue; unknown keys get one line each with a suggestion. */
export function formatIssues(issues: ReadonlyArray<z.core.$ZodIssue>, prefix: ReadonlyArray<PropertyKey> = []): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    switch (issue.code) {
      case 'unrecognized_keys':
        for (const key of issue.keys) out.push({ path: formatPath([...path, key]), message: unknownKeyMessage(key, issue) });
        break;
      case 'invalid_type':
        out.push({
          path: formatPath(path),
          message: issue.input === undefined ? 'required' : `expected ${issue.expected}, got ${describeValue(issue.input)}`,
        });
        break;
      case 'invalid_value':
        out.push({ path: formatPath(path), message: `must be one of: ${issue.values.map(String).join(', ')}` });
        break;
      case 'too_small':
        out.push({ path: formatPath(path), message: issue.origin === 'array' ? `needs at least ${String(issue.minimum)} item(s)` : issue.origin === 'string' ? 'must not be empty' : `must be at least ${String(issue.minimum)}` });
        break;
      case 'too_big':
        out.push({ path: formatPath(path), message: issue.origin === 'string' || issue.origin === 'array' ? `must have at most ${String(issue.maximum)} characters/items` : `must be at most ${String(issue.maximum)}` });
        break;
      case 'invalid_union':
        out.push({ path: formatPath(path), message: `has an unexpected type (${describeValue(issue.input)})` });
        break;
      default:
        out.push({ path: formatPath(path), message: issue.message });
    }
  }
  return out;
}

const KNOWN_KEYS = [
  'data_dir', 'log_level', 'llm', 'agents', 'aliases', 'group_defaults', 'limits', 'channels', 'groups',
  'provider', 'api_key', 'base_url', 'model', 'summary_model', 'max_concurrency', 'timeout_seconds', 'max_retries', 'max_tokens', 'prices',
  'id', 'name', 'persona', 'avatar', 'color', 'talkativeness', 'telegram', 'discord', 'token', 'avatar_url',
  'reply_strategy', 'max_agent_turns_per_message', 'max_depth', 'cooldown_seconds', 'agent_reply_timeout_seconds',
  'voluntary_timeout_seconds', 'max_voluntary_responders', 'sticky', 'last_speaker', 'execution', 'history_turns',
  'user_messages_per_minute', 'max_message_chars', 'web', 'enabled', 'host', 'port', 'auth_token', 'api_root',
  'auto_create_groups', 'admins', 'api_base', 'channels', 'allow_bots', 'webhook_name', 'emoji_avatar_base',
  'channel', 'chat_id', 'title', 'participants', 'config', 'input', 'output', 'cache_write', 'cache_read',
];

function unknownKeyMessage(key: string, _issue: unknown): string {
  let best: string | null = null;
  let bestD = 3;
  for (const k of KNOWN_KEYS) {
    const d = editDistance(key.toLowerCase(), k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best ? `unknown key (did you mean "${best}"?)` : 'unknown key';
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `"${v.length > 30 ? v.slice(0, 30) + '…' : v}"`;
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${String(v)}`;
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
