/**
 * The `chorus` command: `start` runs the daemon, `check` validates a config and says what would
 * start. Config mistakes print one line per problem and exit 2, never a stack trace.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { ConfigError, loadRunConfig, type LoadedConfig } from './config/load.js';
import { ConfigReloader } from './config/reload.js';
import { agentsFromConfig, chooseProvider, createApp } from './app.js';
import { addLogSecrets, createLogger } from './logger.js';
import { configSecrets, redactSecrets } from './redact.js';
import { describeError } from './core/errors.js';
import { silentLogger } from './core/silentLogger.js';
import { configWarnings } from './ops/configWarnings.js';
import { formatFinding } from './ops/findings.js';
import { configDeprecations, summaryModelOf } from './config/schema.js';
import { whereOf } from './tools/serverConfig.js';

const USAGE = `Usage: chorus <command> [--config PATH]

Commands:
  init     set up: asks which channels and model, checks each token and key, writes config.yaml
           and .env (chorus init --help for the flags that answer it in a script)
  start    run the gateway (default)
  check    validate the config and print what would start
  doctor   try what check cannot: data_dir, port, model, Telegram bots, Discord login and
           permissions; one line per finding with its fix, exit 1 on a problem
  status   ask the running daemon's /readyz and print it per channel and bot; exit 1 if not ready

Options:
  -c, --config PATH   config file (default: $CHORUS_CONFIG, else ./config.yaml, else built-in demo)
  -h, --help          show this help
  -v, --version       print the version
      --url URL       status: the daemon's address (default: the config's web host and port)
      --json          status: print the /readyz answer as it came

Signals: SIGTERM or SIGINT stop cleanly; SIGHUP reloads agents, aliases and group defaults.`;

/** The package's version, read next to src/ or dist/ (both sit one level below package.json). */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}

async function main(argv: string[]): Promise<number> {
  // `init` has flags of its own and needs no config: it writes one.
  if (argv[0] === 'init') {
    const write = (...lines: string[]) => void process.stdout.write(lines.map((l) => `${l}\n`).join(''));
    return (await import('./ops/init.js')).runInit(argv.slice(1), { input: process.stdin, write, cwd: process.cwd() });
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' }, url: { type: 'string' }, json: { type: 'boolean' } } });
  } catch (err) {
    process.stderr.write(`${describeError(err)}\n\n${USAGE}\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (parsed.values.version) {
    process.stdout.write(`chorus ${version()}\n`);
    return 0;
  }
  const command = parsed.positionals[0] ?? 'start';
  if (command !== 'start' && command !== 'check' && command !== 'doctor' && command !== 'status') {
    process.stderr.write(`unknown command "${command}"\n\n${USAGE}\n`);
    return 2;
  }
  let loaded: LoadedConfig;
  // The same path, `.env` files and overrides at start and on every reload.
  // Running for real (and checking what would run) also refuses canned replies on a chat platform.
  const live = { requireModel: command === 'start' || command === 'check' };
  const load = () => loadRunConfig({ cliPath: parsed.values.config, env: process.env, cwd: process.cwd(), live });
  try {
    loaded = load();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Config error in ${err.source}:\n${err.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}\n`);
      return 2;
    }
    throw err;
  }
  const print = (line: string) => void process.stdout.write(line + '\n');
  if (command === 'doctor') return (await (await import('./ops/doctor.js')).runDoctor(loaded, print)).code;
  if (command === 'status') return (await import('./ops/status.js')).runStatus(loaded.config, print, { url: parsed.values.url, json: parsed.values.json });
  return command === 'check' ? check(loaded) : start(loaded, load);
}

function check(loaded: LoadedConfig): number {
  const { config } = loaded;
  const agents = agentsFromConfig(config);
  const { scriptedReason } = chooseProvider(config, silentLogger);
  const out: string[] = [`✔ ${loaded.source} is valid.`, '', 'Would start:'];
  out.push(
    scriptedReason
      ? `  LLM: scripted (offline canned replies) — ${scriptedReason}`
      : `  LLM: ${config.llm.provider} ${config.llm.base_url ? `at ${config.llm.base_url} ` : ''}model ${config.llm.model}, summaries ${summaryModelOf(config.llm) ?? "each agent's own model"}, ${config.llm.max_concurrency} calls at once`,
  );
  out.push(`  Agents (${agents.length}):`);
  for (const a of agents) out.push(`    ${a.avatar ?? '•'} ${a.name} (@${a.id}${a.aliases.length ? ', @' + a.aliases.join(', @') : ''}) model ${a.model ?? config.llm.model}${config.channels.telegram.enabled ? (a.telegram ? ', Telegram bot' : ', no Telegram bot') : ''}`);
  const ch = config.channels;
  out.push('  Channels:');
  if (ch.web.enabled) out.push(`    web feed at http://${ch.web.host}:${ch.web.port}/${ch.web.auth_token ? ' (token required)' : ' (loopback only, no token)'}`);
  if (ch.telegram.enabled) out.push(`    telegram: ${agents.filter((a) => a.telegram).length} bot(s) via ${ch.telegram.api_root}${ch.telegram.auto_create_groups ? ', groups form when bots are added' : ''}`);
  if (ch.discord.enabled) out.push(`    discord: one bot${ch.discord.channels.length ? `, channels ${ch.discord.channels.join(', ')}` : ', all channels it can see'}`);
  if (!ch.web.enabled && !ch.telegram.enabled && !ch.discord.enabled) out.push('    none enabled — nothing would reach the agents');
  const servers = Object.entries(config.tools);
  if (servers.length) {
    out.push(`  Tool servers (${servers.length}), started with the daemon:`);
    for (const [name, s] of servers) out.push(`    ${name}: ${s.url !== undefined ? `Streamable HTTP ${whereOf(s)}` : `stdio \`${whereOf(s)}\``}, confirm ${s.confirm}, approvers ${s.approvers}`);
  }
  out.push(`  Groups declared: ${config.groups.length ? config.groups.map((g) => `${g.title ?? g.chat_id} (${g.channel}: ${g.participants.join(', ')})`).join('; ') : 'none'}`);
  if (config.storage.kind === 'postgres' && config.storage.url) {
    // Host, port and database only: the user and password stay out of the output.
    const u = new URL(config.storage.url);
    out.push(`  Storage: PostgreSQL at ${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`);
  } else out.push(`  Data directory: ${config.data_dir}`);
  if (loaded.envFiles.length) out.push(`  Variables also read from: ${loaded.envFiles.join(', ')}`);
  if (loaded.overrides.length) out.push(`  Overridden by the environment: ${loaded.overrides.join(', ')}`);
  if (loaded.missingEnv.length) out.push('', `Note: environment variables not set: ${[...new Set(loaded.missingEnv)].join(', ')}`);
  for (const d of configDeprecations(config)) out.push('', `Note: ${d.path} is ${d.message}`);
  const findings = scriptedReason ? [] : configWarnings(config);
  if (findings.length) out.push('', ...findings.map(formatFinding));
  process.stdout.write(out.join('\n') + '\n');
  return 0;
}

/** A second SIGINT/SIGTERM this soon after the first is the same request delivered twice: Ctrl-C in a
 * terminal reaches both npm and node, and npm forwards its copy. Later ones force the exit. */
const DUPLICATE_SIGNAL_MS = 1000;
/** The running config's secrets, for the last words written straight to stderr. */
let startSecrets: string[] = [];
/** A stop that takes longer than this (a hung socket, a stuck disk) gives up and exits non-zero. */
const STOP_DEADLINE_MS = 10_000;

async function start(loaded: LoadedConfig, load: () => LoadedConfig): Promise<number> {
  // Secrets from the start, so nothing logged before the app exists (or on a failed start) leaks.
  const secrets = configSecrets(loaded.config);
  startSecrets = secrets;
  const logger = createLogger(loaded.config.log_level, undefined, secrets);
  const app = await createApp({ config: loaded.config, logger, builtInDemo: loaded.usedDefaults });
  if (app.scriptedReason) {
    logger.warn({ reason: app.scriptedReason }, 'using the scripted provider: replies are canned');
    process.stderr.write(`\n  ⚠  DEMO MODE: agents give canned replies — ${app.scriptedReason}.\n\n`);
  }
  const reloader = new ConfigReloader({
    load,
    apply: (next) => {
      // A reload may bring new tokens: they are secrets from now on too.
      addLogSecrets(logger, configSecrets(next));
      startSecrets = [...startSecrets, ...configSecrets(next)];
      app.reconfigure(next);
    },
    logger,
    initial: loaded.config,
  });
  return new Promise<number>((resolveExit) => {
    let stopRequestedAt = 0;
    // Handlers go in before start-up, so a stop requested while channels connect is still clean.
    const starting = app.start().then(
      () => {
        logger.info({ config: loaded.source, web: app.webUrl ?? null, pid: process.pid }, 'chorus started');
        if (app.webUrl && !stopRequestedAt) process.stdout.write(`\n  Chorus is running. Open ${app.webUrl}/ in your browser.\n\n`);
        return true;
      },
      async (err: unknown) => {
        process.stderr.write(`Chorus could not start: ${redactSecrets(describeError(err), secrets)}\n`);
        await app.stop().catch(() => undefined);
        resolveExit(1);
        return false;
      },
    );
    const onStop = (sig: NodeJS.Signals) => {
      if (stopRequestedAt) {
        if (Date.now() - stopRequestedAt < DUPLICATE_SIGNAL_MS) return;
        logger.warn({ signal: sig }, 'second stop signal: exiting without finishing writes');
        process.exit(130);
      }
      stopRequestedAt = Date.now();
      logger.info({ signal: sig }, 'stopping: finishing writes');
      const deadline = setTimeout(() => {
        logger.error({ afterMs: STOP_DEADLINE_MS }, 'stop did not finish in time; exiting');
        resolveExit(1);
      }, STOP_DEADLINE_MS);
      deadline.unref();
      void starting.then(async (ok) => {
        if (!ok) return;
        try {
          await app.stop();
          logger.info({}, 'stopped');
          resolveExit(0);
        } catch (err) {
          logger.error({ err: describeError(err) }, 'stop failed');
          resolveExit(1);
        } finally {
          clearTimeout(deadline);
        }
      });
    };
    process.on('SIGINT', onStop);
    process.on('SIGTERM', onStop);
    process.on('SIGHUP', () => {
      if (stopRequestedAt) return;
      try {
        reloader.reload();
      } catch (err) {
        logger.error({ err: describeError(err) }, 'config reload failed; the running config is kept');
      }
    });
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Give pino's async destination a moment to flush, then leave even if a handle lingers.
    setTimeout(() => process.exit(code), 200).unref();
  },
  (err: unknown) => {
    process.stderr.write(`Chorus crashed: ${redactSecrets(describeError(err), startSecrets)}\n`);
    process.exit(1);
  },
);
