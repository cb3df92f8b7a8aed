/**
 * What `chorus init` writes: a `config.yaml` that names every secret by a `${VAR}` reference, and
 * a `.env` beside it with the values. The config can then be shown, shared or committed; the `.env`
 * is written readable by its owner only. The agents are the demo's three personas, so a new
 * set-up starts from the same room people tried first.
 */
import { parseDocument } from 'yaml';
import { DEFAULT_CONFIG_YAML } from '../config/defaults.js';

export type ModelChoice =
  | { provider: 'anthropic'; apiKey: string; model?: string | undefined; baseUrl?: string | undefined }
  | { provider: 'openai'; baseUrl: string; apiKey?: string | undefined; model: string }
  | { provider: 'scripted' };

/** Everything `chorus init` asked for, checked. */
export interface InitAnswers {
  /** Bot tokens by agent id; an agent left out has no Telegram bot. */
  telegram: Record<string, string>;
  telegramApiRoot?: string | undefined;
  discordToken?: string | undefined;
  discordApiBase?: string | undefined;
  model: ModelChoice;
  port?: number | undefined;
}

/** The demo's agents: the ones `init` sets up. */
export interface DemoAgent {
  id: string;
  name: string;
  persona: string;
  avatar: string;
  color: string;
  aliases: string[];
}

export function demoAgents(): DemoAgent[] {
  const doc = parseDocument(DEFAULT_CONFIG_YAML).toJS() as { agents: DemoAgent[] };
  return doc.agents;
}

/** The variable a secret is kept in. */
export const envName = {
  telegram: (agentId: string) => `TELEGRAM_TOKEN_${agentId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`,
  discord: 'DISCORD_TOKEN',
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'LLM_API_KEY',
};

/** A YAML scalar that reads back as exactly `s`. */
const q = (s: string) => JSON.stringify(s);

export function renderConfig(a: InitAnswers): string {
  const lines: string[] = ['# Written by `chorus init`. Every key is explained in config.example.yaml.', '# Secrets are in .env next to this file.', ''];
  lines.push(...modelLines(a.model), '');
  lines.push('agents:');
  for (const agent of demoAgents()) {
    lines.push(`  - id: ${agent.id}`, `    name: ${q(agent.name)}`, '    persona: |');
    for (const l of agent.persona.trimEnd().split('\n')) lines.push(`      ${l.trim()}`);
    lines.push(`    avatar: ${q(agent.avatar)}`, `    color: ${q(agent.color)}`, `    aliases: [${agent.aliases.join(', ')}]`);
    if (a.telegram[agent.id]) lines.push(`    telegram: { token: "\${${envName.telegram(agent.id)}}" }`);
  }
  lines.push('', 'channels:', '  web:', '    enabled: true', '    host: 127.0.0.1', `    port: ${a.port ?? 8787}`);
  if (Object.keys(a.telegram).length > 0) {
    lines.push('  telegram:', '    enabled: true', '    # Add the bots to a group: the group forms by itself.', '    auto_create_groups: true');
    if (a.telegramApiRoot) lines.push(`    api_root: ${q(a.telegramApiRoot)}`);
  }
  if (a.discordToken) {
    lines.push('  discord:', '    enabled: true', `    token: "\${${envName.discord}}"`);
    if (a.discordApiBase) lines.push(`    api_base: ${q(a.discordApiBase)}`);
  }
  const ids = demoAgents().map((x) => x.id);
  lines.push('', 'groups:', `  - { channel: web, chat_id: lobby, title: Lobby, participants: [${ids.join(', ')}] }`, '');
  return lines.join('\n');
}

function modelLines(m: ModelChoice): string[] {
  if (m.provider === 'scripted') return ['llm:', '  # Canned demo replies, on purpose: no model is asked anything.', '  provider: scripted'];
  if (m.provider === 'anthropic') {
    return [
      'llm:',
      '  provider: anthropic',
      `  api_key: "\${${envName.anthropic}}"`,
      ...(m.baseUrl ? [`  base_url: ${q(m.baseUrl)}`] : []),
      ...(m.model ? [`  model: ${q(m.model)}`] : []),
    ];
  }
  return [
    'llm:',
    '  provider: openai',
    `  base_url: ${q(m.baseUrl)}`,
    ...(m.apiKey ? [`  api_key: "\${${envName.openai}}"`] : []),
    `  model: ${q(m.model)}`,
    `  summary_model: ${q(m.model)}`,
    '  # A local model costs nothing per token.',
    `  prices: { ${q(m.model)}: { input: 0, output: 0 } }`,
  ];
}

/** The `.env` lines: one per secret, quoted so no character of a token is read as syntax. */
export function renderEnv(a: InitAnswers): string {
  const vars: Array<[string, string]> = Object.entries(a.telegram).map(([id, token]) => [envName.telegram(id), token]);
  if (a.discordToken) vars.push([envName.discord, a.discordToken]);
  if (a.model.provider === 'anthropic') vars.push([envName.anthropic, a.model.apiKey]);
  if (a.model.provider === 'openai' && a.model.apiKey) vars.push([envName.openai, a.model.apiKey]);
  return ['# Secrets for config.yaml, written by `chorus init`. Keep this file private.', ...vars.map(([k, v]) => `${k}=${q(v)}`), ''].join('\n');
}

/** The secrets as the environment the config is checked with before anything is written. */
export function envOf(a: InitAnswers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of renderEnv(a).split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) out[m[1]!] = JSON.parse(m[2]!) as string;
  }
  return out;
}
