/**
 * `chorus init`: from nothing to a config that runs. It asks which channels and which model, checks
 * each answer as it is given (a bot token against Telegram, a key or a local server by listing its
 * models, the Discord bot by logging in), then writes `config.yaml` and a private `.env` with the
 * secrets, and prints the next command. It never overwrites either file without being told to.
 *
 * Interactive by default; `--yes` takes every answer from flags, for scripts:
 *   chorus init --yes --telegram analyst=123:ABC --llm anthropic --api-key sk-ant-…
 *   chorus init --yes --llm openai --base-url http://127.0.0.1:11434/v1 --model llama3.1
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, parseConfigText } from '../config/load.js';
import { httpUrlProblem } from '../config/urls.js';
import { checkDiscord } from './checks/discord.js';
import { formatFinding } from './findings.js';
import { listModels, telegramBot } from './initChecks.js';
import { demoAgents, envOf, renderConfig, renderEnv, type InitAnswers, type ModelChoice } from './initConfig.js';
import { Prompter } from './prompter.js';

export const INIT_USAGE = `Usage: chorus init [--config PATH] [--force] [--yes …]

Asks which channels and model to use, checks each answer, then writes config.yaml and .env.
  -c, --config PATH            where to write the config (default ./config.yaml; .env goes beside it)
      --force                  replace files that exist (otherwise init asks, or stops with --yes)
      --yes                    ask nothing: take the answers below
      --telegram AGENT=TOKEN   a bot token from @BotFather for one agent (analyst, writer, critic); repeat
      --telegram-api-root URL  a Bot API server of your own (default Telegram's)
      --discord-token TOKEN    the Discord bot's token   --discord-api-base URL
      --llm PROVIDER           anthropic | openai (any OpenAI-compatible server) | scripted (canned replies)
      --api-key KEY            the model key (anthropic; optional for a local server)
      --base-url URL           the OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (Ollama)
      --model NAME             the model (default: the provider's, or the server's only one)
      --port N                 the web page's port (default 8787)`;

type Write = (...lines: string[]) => void;

/** The folder with package.json: this file is src/ops/init.ts or dist/ops/init.js. */
const CHORUS_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A mistake in the answers: init stops, writes nothing, exit 2 (a refused token or key: 1). */
class InitStop extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

export async function runInit(argv: string[], io: { input: NodeJS.ReadableStream; write: Write; cwd: string }): Promise<number> {
  let flags;
  try {
    flags = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c' },
        force: { type: 'boolean' },
        yes: { type: 'boolean' },
        telegram: { type: 'string', multiple: true },
        'telegram-api-root': { type: 'string' },
        'discord-token': { type: 'string' },
        'discord-api-base': { type: 'string' },
        llm: { type: 'string' },
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        model: { type: 'string' },
        port: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    io.write(`${err instanceof Error ? err.message : String(err)}\n\n${INIT_USAGE}`);
    return 2;
  }
  if (flags.help) {
    io.write(INIT_USAGE);
    return 0;
  }
  const configPath = resolve(io.cwd, flags.config ?? 'config.yaml');
  const envPath = join(dirname(configPath), '.env');
  const ask = flags.yes ? null : new Prompter(io.input, io.write);
  try {
    await mayWrite([configPath, envPath], Boolean(flags.force), ask, io.write);
    const answers = ask ? await interview(ask, flags, io.write) : await fromFlags(flags, io.write);
    await finalCheck(answers, configPath, io);
    mkdirSync(dirname(configPath), { recursive: true });
    writeFileSync(envPath, renderEnv(answers), { mode: 0o600 });
    chmodSync(envPath, 0o600);
    writeFileSync(configPath, renderConfig(answers));
    nextSteps(answers, configPath, envPath, io);
    return 0;
  } catch (err) {
    if (!(err instanceof InitStop)) throw err;
    io.write(`✘ ${err.message}`);
    io.write('Nothing was written.');
    return err.code;
  } finally {
    ask?.close();
  }
}

async function mayWrite(paths: string[], force: boolean, ask: Prompter | null, write: Write): Promise<void> {
  const there = paths.filter((p) => existsSync(p));
  if (there.length === 0 || force) return;
  const names = there.join(' and ');
  if (!ask) throw new InitStop(`${names} already exist(s); pass --force to replace, or --config to write elsewhere`, 2);
  write(`${names} already exist(s).`);
  if (!(await ask.yesNo('Replace them?', false))) throw new InitStop('kept the files as they are', 2);
}

type Flags = Record<string, string | boolean | string[] | undefined>;

async function fromFlags(flags: Flags, write: Write): Promise<InitAnswers> {
  const apiRoot = urlFlag(flags['telegram-api-root'], '--telegram-api-root') ?? 'https://api.telegram.org';
  const telegram: Record<string, string> = {};
  const ids = demoAgents().map((a) => a.id);
  for (const pair of (flags.telegram as string[] | undefined) ?? []) {
    const m = /^([a-z0-9_-]+)=(.+)$/i.exec(pair);
    if (!m || !ids.includes(m[1]!.toLowerCase())) throw new InitStop(`--telegram ${pair.split('=')[0]}: give AGENT=TOKEN, AGENT one of ${ids.join(', ')}`, 2);
    const bot = await telegramBot(m[2]!.trim(), apiRoot);
    if (!bot.ok) throw new InitStop(`--telegram ${m[1]}: ${bot.problem}`, 1);
    write(botLine(m[1]!, bot.value));
    telegram[m[1]!.toLowerCase()] = m[2]!.trim();
  }
  const model = await modelFromFlags(flags, write);
  const port = flags.port === undefined ? undefined : portOf(String(flags.port));
  return {
    telegram,
    telegramApiRoot: flags['telegram-api-root'] ? apiRoot : undefined,
    discordToken: (flags['discord-token'] as string | undefined)?.trim() || undefined,
    discordApiBase: urlFlag(flags['discord-api-base'], '--discord-api-base'),
    model,
    port,
  };
}

async function modelFromFlags(flags: Flags, write: Write): Promise<ModelChoice> {
  const llm = (flags.llm as string | undefined) ?? 'anthropic';
  const apiKey = (flags['api-key'] as string | undefined)?.trim() || undefined;
  const baseUrl = urlFlag(flags['base-url'], '--base-url');
  const model = (flags.model as string | undefined)?.trim() || undefined;
  if (llm === 'scripted') return { provider: 'scripted' };
  if (llm === 'anthropic') {
    if (!apiKey) throw new InitStop('--llm anthropic needs --api-key (a key from console.anthropic.com)', 2);
    const models = await listModels('anthropic', { apiKey, baseUrl });
    if (!models.ok) throw new InitStop(`--api-key: ${models.problem}`, 1);
    write(`✔ model: the key works; ${models.value.length} model(s) available`);
    if (model && !models.value.includes(model)) throw new InitStop(`--model ${model}: not offered (${models.value.slice(0, 8).join(', ')})`, 1);
    return { provider: 'anthropic', apiKey, model, baseUrl };
  }
  if (llm !== 'openai') throw new InitStop(`--llm ${llm}: give anthropic, openai or scripted`, 2);
  if (!baseUrl) throw new InitStop('--llm openai needs --base-url (e.g. http://127.0.0.1:11434/v1 for Ollama)', 2);
  const models = await listModels('openai', { apiKey, baseUrl });
  if (!models.ok) throw new InitStop(`--base-url: ${models.problem}`, 1);
  write(`✔ model server ${baseUrl}: serves ${models.value.slice(0, 8).join(', ')}`);
  const chosen = model ?? (models.value.length === 1 ? models.value[0] : undefined);
  if (!chosen) throw new InitStop(`--model: the server serves several models; name one (${models.value.slice(0, 8).join(', ')})`, 2);
  if (!models.value.includes(chosen)) throw new InitStop(`--model ${chosen}: the server does not serve it (${models.value.slice(0, 8).join(', ')})`, 1);
  return { provider: 'openai', baseUrl, apiKey, model: chosen };
}

async function interview(ask: Prompter, flags: Flags, write: Write): Promise<InitAnswers> {
  const apiRoot = (flags['telegram-api-root'] as string | undefined) ?? 'https://api.telegram.org';
  const telegram: Record<string, string> = {};
  write('Chorus serves a web page on this machine. It can also run in a Telegram group and on Discord.');
  if (await ask.yesNo('Set up Telegram (one bot per agent, made with @BotFather → /newbot)?', false)) {
    for (const agent of demoAgents()) {
      for (;;) {
        const token = await ask.line(`  ${agent.name}'s bot token (Enter to leave ${agent.name} off Telegram):`);
        if (!token) break;
        const bot = await telegramBot(token, apiRoot);
        if (bot.ok) {
          write(botLine(agent.id, bot.value));
          telegram[agent.id] = token;
          break;
        }
        write(`  ✘ ${bot.problem}; try again`);
      }
    }
  }
  let discordToken: string | undefined;
  if (await ask.yesNo('Set up Discord (one bot with the Message Content intent)?', false)) {
    discordToken = (await ask.line('  The bot token (Discord developer portal → Bot → Reset Token):')) || undefined;
  }
  const model = await askModel(ask, write, urlFlag(flags['base-url'], '--base-url'));
  return { telegram, telegramApiRoot: flags['telegram-api-root'] ? apiRoot : undefined, discordToken, discordApiBase: flags['discord-api-base'] as string | undefined, model };
}

/** `anthropicUrl`: an Anthropic-compatible address of one's own (`--base-url`), else Anthropic's. */
async function askModel(ask: Prompter, write: Write, anthropicUrl: string | undefined): Promise<ModelChoice> {
  write('Which model should the agents use?');
  write('  1) Anthropic (Claude), with an API key');
  write('  2) a local or OpenAI-compatible server (Ollama, llama.cpp, vLLM, OpenAI)');
  write('  3) none for now: canned demo replies');
  for (;;) {
    const pick = await ask.line('Choose 1, 2 or 3:');
    if (pick === '3') return { provider: 'scripted' };
    if (pick === '1') {
      const apiKey = await ask.line('  API key (console.anthropic.com → API keys):');
      const models = await listModels('anthropic', { apiKey, baseUrl: anthropicUrl });
      if (models.ok) return { provider: 'anthropic', apiKey, baseUrl: anthropicUrl };
      write(`  ✘ ${models.problem}`);
    } else if (pick === '2') {
      const baseUrl = await ask.line('  Server address (Ollama: http://127.0.0.1:11434/v1, llama.cpp: http://127.0.0.1:8080/v1):');
      const bad = httpUrlProblem(baseUrl);
      if (bad) {
        write(`  ✘ the address ${bad}`);
        continue;
      }
      const apiKey = (await ask.line('  API key (Enter for none):')) || undefined;
      const models = await listModels('openai', { apiKey, baseUrl });
      if (!models.ok) {
        write(`  ✘ ${models.problem}`);
        continue;
      }
      models.value.slice(0, 20).forEach((m, i) => write(`    ${i + 1}) ${m}`));
      const n = Number(await ask.line('  Which model (number)?'));
      const model = models.value[n - 1] ?? models.value[0]!;
      return { provider: 'openai', baseUrl, apiKey, model };
    }
  }
}

/** The file as it will be written, checked as `chorus start` will check it; Discord logs in once. */
async function finalCheck(answers: InitAnswers, configPath: string, io: { write: Write; cwd: string }): Promise<void> {
  let config;
  try {
    config = parseConfigText(renderConfig(answers), configPath, envOf(answers), { baseDir: dirname(configPath), cwd: io.cwd, live: { requireModel: true } }).config;
  } catch (err) {
    if (err instanceof ConfigError) throw new InitStop(`the config would not start:\n${err.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`, 2);
    throw err;
  }
  if (config.channels.discord.enabled) {
    const findings = await checkDiscord(config, []);
    for (const f of findings) io.write(formatFinding(f));
    if (findings.some((f) => f.level === 'fail')) throw new InitStop('the Discord bot is not ready (see above)', 1);
  }
}

function nextSteps(a: InitAnswers, configPath: string, envPath: string, io: { write: Write; cwd: string }): void {
  const shown = relative(io.cwd, configPath) || configPath;
  io.write(`✔ wrote ${shown} and ${relative(io.cwd, envPath) || envPath} (the secrets; readable by you only)`);
  // `npm start` works in Chorus's own folder; elsewhere the launcher is named by its path.
  const here = resolve(io.cwd) === CHORUS_ROOT;
  const start = here ? (shown === 'config.yaml' ? 'npm start' : `npm start -- --config ${shown}`) : `node ${join(CHORUS_ROOT, 'bin', 'chorus.js')} start --config ${configPath}`;
  io.write('', 'Next:', `  ${start}`, `  then open http://127.0.0.1:${a.port ?? 8787}/`);
  if (Object.keys(a.telegram).length) io.write('  add the bots to a Telegram group; the group forms by itself (type /group list there)');
  if (a.discordToken) io.write('  in a Discord channel the bot can see, type /group create analyst writer critic');
}

function botLine(agentId: string, bot: { username: string; name: string; readsAll: boolean }): string {
  const privacy = bot.readsAll
    ? 'privacy mode off: it reads the whole group'
    : 'privacy mode ON: in a group it only sees messages that @mention it or reply to it (@BotFather → /setprivacy → Disable, then re-add it)';
  return `✔ telegram ${agentId}: @${bot.username} (${bot.name}); ${privacy}`;
}

function urlFlag(value: unknown, flag: string): string | undefined {
  if (typeof value !== 'string' || !value.trim()) return undefined;
  const bad = httpUrlProblem(value.trim());
  if (bad) throw new InitStop(`${flag} ${bad}`, 2);
  return value.trim();
}

function portOf(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InitStop(`--port ${text}: give a port from 0 to 65535`, 2);
  return n;
}
