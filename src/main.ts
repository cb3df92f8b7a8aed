/**
 * The `chorus` command: `start` runs the daemon, `check` validates a config and says what would
 * start. Config mistakes print one line per problem and exit 2, never a stack trace.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, resolveConfigPath, type LoadedConfig } from './config/load.js';
import { agentsFromConfig, chooseProvider, createApp } from './app.js';
import { createLogger } from './logger.js';
import { describeError } from './core/errors.js';
import { silentLogger } from './core/silentLogger.js';

const USAGE = `Usage: chorus <command> [--config PATH]

Commands:
  start    run the gateway (default)
  check    validate the config and print what would start

Options:
  -c, --config PATH   config file (default: $CHORUS_CONFIG, else ./config.yaml, else built-in demo)
  -h, --help          show this help`;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } });
  } catch (err) {
    process.stderr.write(`${describeError(err)}\n\n${USAGE}\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const command = parsed.positionals[0] ?? 'start';
  if (command !== 'start' && command !== 'check') {
    process.stderr.write(`unknown command "${command}"\n\n${USAGE}\n`);
    return 2;
  }
  let loaded: LoadedConfig;
  try {
    loaded = loadConfig(resolveConfigPath(parsed.values.config, process.env, process.cwd()));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Config error in ${err.source}:\n${err.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}\n`);
      return 2;
    }
    throw err;
  }
  return command === 'check' ? check(loaded) : start(loaded);
}

function check(loaded: LoadedConfig): number {
  const { config } = loaded;
  const agents = agentsFromConfig(config);
  const { scriptedReason } = chooseProvider(config, silentLogger);
  const out: string[] = [`✔ ${loaded.source} is valid.`, '', 'Would start:'];
  out.push(
    scriptedReason
      ? `  LLM: scripted (offline canned replies) — ${scriptedReason}`
      : `  LLM: ${config.llm.provider} ${config.llm.base_url ? `at ${config.llm.base_url} ` : ''}model ${config.llm.model}, summaries ${config.llm.summary_model}, ${config.llm.max_concurrency} calls at once`,
  );
  out.push(`  Agents (${agents.length}):`);
  for (const a of agents) out.push(`    ${a.avatar ?? '•'} ${a.name} (@${a.id}${a.aliases.length ? ', @' + a.aliases.join(', @') : ''}) model ${a.model ?? config.llm.model}${config.channels.telegram.enabled ? (a.telegram ? ', Telegram bot' : ', no Telegram bot') : ''}`);
  const ch = config.channels;
  out.push('  Channels:');
  if (ch.web.enabled) out.push(`    web feed at http://${ch.web.host}:${ch.web.port}/${ch.web.auth_token ? ' (token required)' : ' (loopback only, no token)'}`);
  if (ch.telegram.enabled) out.push(`    telegram: ${agents.filter((a) => a.telegram).length} bot(s) via ${ch.telegram.api_root}${ch.telegram.auto_create_groups ? ', groups form when bots are added' : ''}`);
  if (ch.discord.enabled) out.push(`    discord: one bot${ch.discord.channels.length ? `, channels ${ch.discord.channels.join(', ')}` : ', all channels it can see'}`);
  if (!ch.web.enabled && !ch.telegram.enabled && !ch.discord.enabled) out.push('    none enabled — nothing would reach the agents');
  out.push(`  Groups declared: ${config.groups.length ? config.groups.map((g) => `${g.title ?? g.chat_id} (${g.channel}: ${g.participants.join(', ')})`).join('; ') : 'none'}`);
  out.push(`  Data directory: ${config.data_dir}`);
  if (loaded.missingEnv.length) out.push('', `Note: environment variables not set: ${[...new Set(loaded.missingEnv)].join(', ')}`);
  process.stdout.write(out.join('\n') + '\n');
  return 0;
}

async function start(loaded: LoadedConfig): Promise<number> {
  const logger = createLogger(loaded.config.log_level);
  const app = await createApp({ config: loaded.config, logger });
  if (app.scriptedReason) {
    logger.warn({ reason: app.scriptedReason }, 'using the scripted provider: replies are canned');
    process.stderr.write(`\n  ⚠  DEMO MODE: agents give canned replies — ${app.scriptedReason}.\n\n`);
  }
  try {
    await app.start();
  } catch (err) {
    process.stderr.write(`Chorus could not start: ${describeError(err)}\n`);
    await app.stop().catch(() => undefined);
    return 1;
  }
  logger.info({ config: loaded.source, web: app.webUrl ?? null }, 'chorus started');
  if (app.webUrl) process.stdout.write(`\n  Chorus is running. Open ${app.webUrl}/ in your browser.\n\n`);
  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const onSignal = (sig: string) => {
      if (stopping) {
        process.stderr.write('forced exit\n');
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal: sig }, 'stopping: finishing writes');
      app.stop().then(
        () => {
          logger.info({}, 'stopped');
          resolveExit(0);
        },
        (err: unknown) => {
          logger.error({ err: describeError(err) }, 'stop failed');
          resolveExit(1);
        },
      );
    };
    process.on('SIGINT', () => onSignal('SIGINT'));
    process.on('SIGTERM', () => onSignal('SIGTERM'));
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Give pino's async destination a moment to flush, then leave even if a handle lingers.
    setTimeout(() => process.exit(code), 200).unref();
  },
  (err: unknown) => {
    process.stderr.write(`Chorus crashed: ${describeError(err)}\n`);
    process.exit(1);
  },
);
