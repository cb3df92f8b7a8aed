/**
 * Finding, reading and validating the config file. Every problem becomes one readable line that
 * names its key path; callers print them and exit 2 (never a stack trace).
 *
 * `${VAR}` references are replaced after the YAML is parsed and only inside string values, so a
 * value from the environment is never read as YAML: `#`, quotes, numbers and newlines in it stay
 * as they are and cannot add keys. Where the schema wants a number or true/false and the value
 * came from a reference, the text is converted (`port: ${PORT}`).
 *
 * The steps have files of their own: envReferences.ts (the `${VAR}` syntax and its masking),
 * schemaWalk.ts (what the schema wants at a key), issues.ts (zod's issues as readable problems)
 * and rules.ts (the rules across keys). This file puts them in order.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { parseDocument } from 'yaml';
import { MaskedReferences } from './envReferences.js';
import { childSchema, coerce, type SchemaNode } from './schemaWalk.js';
import { configSchema, type ChorusConfig } from './schema.js';
import type { ConfigProblem } from './rules.js';
import { validateConfig, type LiveRules } from './validate.js';
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
  /** `CHORUS_*` variables that replaced a value of the file (names only: one may be a token). */
  overrides: string[];
  /** `.env` files that were read, in order of precedence (the real environment wins over all). */
  envFiles: string[];
}

/**
 * Environment variables that win over the file's value, so one config works on a laptop, in a
 * container and under systemd. Applied after `${VAR}` replacement; `CHORUS_DATA_DIR` is relative
 * to the working directory, like any path typed in a shell.
 */
const ENV_OVERRIDES: ReadonlyArray<{ env: string; path: readonly string[] }> = [
  { env: 'CHORUS_DATA_DIR', path: ['data_dir'] },
  { env: 'CHORUS_LOG_LEVEL', path: ['log_level'] },
  { env: 'CHORUS_HOST', path: ['channels', 'web', 'host'] },
  { env: 'CHORUS_PORT', path: ['channels', 'web', 'port'] },
  { env: 'CHORUS_WEB_TOKEN', path: ['channels', 'web', 'auth_token'] },
];

/** `--config PATH`, else `$CHORUS_CONFIG`, else `./config.yaml`, else built-in defaults. */
function resolveConfigPath(cliPath: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string | null {
  if (cliPath) return resolve(cwd, cliPath);
  if (env.CHORUS_CONFIG) return resolve(cwd, env.CHORUS_CONFIG);
  const local = resolve(cwd, 'config.yaml');
  return existsSync(local) ? local : null;
}

/**
 * What the daemon and `chorus check` load: the config file found as `resolveConfigPath` says, with
 * variables from `.env` files — the config file's folder first, then the working directory — under
 * the real environment, which always wins. A `.env` is optional; one that cannot be read is an error.
 */
export function loadRunConfig(
  opts: { cliPath?: string | undefined; env?: NodeJS.ProcessEnv; cwd?: string; live?: LiveRules } = {},
): LoadedConfig {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const files: string[] = [];
  const cwdFile = join(cwd, '.env');
  const cwdVars = readDotEnv(cwdFile);
  // CHORUS_CONFIG may itself come from the working directory's .env.
  const path = resolveConfigPath(opts.cliPath, { ...cwdVars, ...env }, cwd);
  let dirVars: Record<string, string> = {};
  if (path !== null && resolve(dirname(path)) !== resolve(cwd)) {
    const dirFile = join(dirname(path), '.env');
    dirVars = readDotEnv(dirFile);
    if (existsSync(dirFile)) files.push(dirFile);
  }
  if (existsSync(cwdFile)) files.push(cwdFile);
  const loaded = loadConfig(path, { ...cwdVars, ...dirVars, ...env }, { cwd, live: opts.live });
  return { ...loaded, envFiles: files };
}

/** Variables of a `.env` file (`KEY=value`, quotes and `export` allowed); none when it is absent. */
function readDotEnv(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return {};
    throw new ConfigError(file, [{ path: '(file)', message: `cannot read file (${code ?? 'error'})` }]);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parseEnv(text))) if (v !== undefined) out[k] = v;
  return out;
}

/** Options for loading: where relative paths in the file start from. */
export interface LoadOptions {
  /** The working directory: base of the built-in defaults' paths and of `CHORUS_DATA_DIR`. */
  cwd?: string;
  /** What running for real asks beyond the file's shape (see validate.ts). */
  live?: LiveRules;
}

/** Load from a path (or the built-in defaults when `path` is null). Throws ConfigError. */
export function loadConfig(path: string | null, env: NodeJS.ProcessEnv = process.env, opts: LoadOptions = {}): LoadedConfig {
  const cwd = opts.cwd ?? process.cwd();
  if (path === null) {
    const r = parseConfigText(DEFAULT_CONFIG_YAML, 'built-in defaults', env, { baseDir: cwd, cwd, live: opts.live });
    return { config: r.config, source: 'built-in defaults', usedDefaults: true, missingEnv: r.missing, overrides: r.overrides, envFiles: [] };
  }
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(path, [{ path: '(file)', message: code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? 'error'})` }]);
  }
  // Paths in a file mean what they say next to that file, wherever the daemon is started from.
  const r = parseConfigText(raw, path, env, { baseDir: dirname(resolve(cwd, path)), cwd, live: opts.live });
  return { config: r.config, source: path, usedDefaults: false, missingEnv: r.missing, overrides: r.overrides, envFiles: [] };
}

/** Parse and validate config text. Throws ConfigError with every problem found. */
export function parseConfigText(
  raw: string,
  source: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: { baseDir?: string; cwd?: string; live?: LiveRules } = {},
): { config: ChorusConfig; missing: string[]; overrides: string[] } {
  const masked = new MaskedReferences(raw);
  const doc = parseDocument(masked.text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        const where = pos ? `line ${pos.line}, column ${masked.column(pos.line, pos.col)}` : '(yaml)';
        return { path: where, message: masked.original(firstLine(e.message)).replace(/ at line \d+, column \d+:?$/, '') };
      }),
    );
  }
  const data: unknown = doc.toJS() ?? {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError(source, [{ path: '(root)', message: 'expected a mapping of keys (data_dir, llm, agents, ...)' }]);
  }
  const missing: string[] = [];
  const filled = fillReferences(data, configSchema as unknown as SchemaNode, masked, env, missing) as Record<string, unknown>;
  const overrides = applyOverrides(filled, env);
  const checked = validateConfig(normalizeEmpty(filled), opts.live);
  if (!checked.ok) throw new ConfigError(source, withOverrideHint(withEnvHint(checked.problems, missing), overrides));
  const config = checked.config;
  if (opts.baseDir !== undefined && !isAbsolute(config.data_dir)) {
    const base = overrides.includes('CHORUS_DATA_DIR') ? (opts.cwd ?? process.cwd()) : opts.baseDir;
    config.data_dir = resolve(base, config.data_dir);
  }
  // A started MCP server runs next to the config file unless told otherwise, so a relative
  // `args: [servers/orders.js]` means what it says there, wherever the daemon is started from.
  if (opts.baseDir !== undefined) {
    for (const s of Object.values(config.tools)) if (s.command !== undefined) s.cwd = resolve(opts.baseDir, s.cwd ?? '.');
  }
  return { config, missing, overrides };
}

/** Put the environment's values into the parsed strings; convert them where the schema wants a number or true/false. */
function fillReferences(value: unknown, schema: SchemaNode | undefined, masked: MaskedReferences, env: NodeJS.ProcessEnv, missing: string[]): unknown {
  if (Array.isArray(value)) return value.map((v, i) => fillReferences(v, childSchema(schema, i), masked, env, missing));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [masked.original(k), fillReferences(v, childSchema(schema, k), masked, env, missing)]),
    );
  }
  if (typeof value !== 'string' || !masked.has(value)) return value;
  return coerce(masked.substitute(value, env, missing), schema);
}

/** Apply `CHORUS_*` overrides to the parsed file; returns the names used. */
function applyOverrides(data: Record<string, unknown>, env: NodeJS.ProcessEnv): string[] {
  const used: string[] = [];
  for (const o of ENV_OVERRIDES) {
    const value = env[o.env];
    if (value === undefined || value === '') continue;
    let node: Record<string, unknown> = data;
    let schema: SchemaNode | undefined = configSchema as unknown as SchemaNode;
    for (const key of o.path.slice(0, -1)) {
      const next = node[key];
      if (!next || typeof next !== 'object' || Array.isArray(next)) node[key] = {};
      node = node[key] as Record<string, unknown>;
      schema = childSchema(schema, key);
    }
    const last = o.path[o.path.length - 1]!;
    node[last] = coerce(value, childSchema(schema, last));
    used.push(o.env);
  }
  return used;
}

/** A problem in a value that came from a `CHORUS_*` variable says so: the file is not where to look. */
function withOverrideHint(problems: ConfigProblem[], overrides: string[]): ConfigProblem[] {
  if (overrides.length === 0) return problems;
  return problems.map((p) => {
    const o = ENV_OVERRIDES.find((x) => overrides.includes(x.env) && p.path === x.path.join('.'));
    if (!o) return p;
    const extra = o.env === 'CHORUS_HOST' ? '; set CHORUS_WEB_TOKEN to a long random token' : '';
    return { ...p, message: `${p.message} (value from ${o.env}${extra})` };
  });
}

/** An empty `${VAR}` leaves `key: ""` or `key:`; treat both as "not set" for optional secrets. */
function normalizeEmpty(data: object): unknown {
  const visit = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => visit(x, ''));
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x, k)]));
    }
    if (v === '' && (key === 'api_key' || key === 'auth_token' || key === 'relay_token' || key === 'base_url' || key === 'api_base')) return null;
    if (v === null && key === 'token') return '';
    return v;
  };
  return visit(data, '');
}

function withEnvHint(problems: ConfigProblem[], missing: string[]): ConfigProblem[] {
  if (missing.length === 0) return problems;
  return [...problems, { path: '(environment)', message: `not set: ${[...new Set(missing)].join(', ')}` }];
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
