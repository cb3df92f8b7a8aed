/** Config loading — a table of broken files, each with the exact message expected. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfigText } from '../../src/config/load.js';
import { substituteEnv } from '../../src/config/envReferences.js';

const AGENT = `agents:\n  - { id: analyst, name: Analyst, persona: "numbers" }\n`;

function problems(yaml: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfigText(yaml, 'test.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('config', () => {
  it('config.example.yaml parses', () => {
    const { config } = parseConfigText(readFileSync('config.example.yaml', 'utf8'), 'config.example.yaml', {});
    expect(config.agents.map((a) => a.id)).toEqual(['analyst', 'writer', 'critic']);
    expect(config.group_defaults.reply_strategy).toBe('hybrid');
    expect(config.channels.web.port).toBe(8787);
  });

  it('built-in defaults give three demo agents on the web feed', () => {
    const loaded = loadConfig(null, {});
    expect(loaded.usedDefaults).toBe(true);
    expect(loaded.config.agents.map((a) => a.id)).toEqual(['analyst', 'writer', 'critic']);
    expect(loaded.config.channels.web).toMatchObject({ enabled: true, host: '127.0.0.1', port: 8787, auth_token: null });
    expect(loaded.config.llm.api_key).toBeNull();
  });

  it('channels.telegram.relay_token takes ${VAR} like the bot tokens, is unset when empty, and is a secret', async () => {
    const { configSecrets } = await import('../../src/redact.js');
    const yaml = 'agents:\n  - { id: a, name: A, persona: p, telegram: { token: "1:aaaa" } }\nchannels: { telegram: { enabled: true, relay_token: "${TG_RELAY:-}" } }\n';
    expect(parseConfigText(yaml, 'test.yaml', {}).config.channels.telegram.relay_token).toBeNull();
    const set = parseConfigText(yaml, 'test.yaml', { TG_RELAY: '999:relay-SECRET-token' }).config;
    expect(set.channels.telegram.relay_token).toBe('999:relay-SECRET-token');
    expect(configSecrets(set)).toContain('999:relay-SECRET-token');
  });

  it('substitutes ${VAR} and ${VAR:-default} in a value; $${ is a literal ${', () => {
    const r = substituteEnv('${A}/${B:-two}/${C}/$${D}', { A: 'one' });
    expect(r.text).toBe('one/two//${D}');
    expect(r.missing).toEqual(['C']);
  });

  const table: Array<[string, string, string[]]> = [
    ['no agents', 'data_dir: x\n', ['agents: required']],
    ['unknown key with suggestion', AGENT + 'llm: { modle: x }\n', ['llm.modle: unknown key (did you mean "model"?)']],
    // Only keys of the mapping the unknown key is in are suggested: `color` is an agent's key.
    ['unknown top-level key', AGENT + 'colour: red\n', ['colour: unknown key']],
    ['unknown agent key', 'agents:\n  - { id: a, name: A, persona: p, colour: red }\n', ['agents[0].colour: unknown key (did you mean "color"?)']],
    [
      'a declared group with an id',
      AGENT + 'groups:\n  - { channel: web, chat_id: room, id: room, participants: [analyst] }\n',
      ['groups[0].id: unknown key (a declared group is identified by "chat_id", together with "channel"; a web room\'s chat_id is also its group id)'],
    ],
    ['a declared group key misspelt', AGENT + 'groups:\n  - { channel: web, chatid: room, participants: [analyst] }\n', ['groups[0].chat_id: required', 'groups[0].chatid: unknown key (did you mean "chat_id"?)']],
    ['bad enum', AGENT + 'group_defaults: { reply_strategy: loud }\n', ['group_defaults.reply_strategy: must be one of: hybrid, mention_only, round_robin, selector']],
    ['wrong type', AGENT + 'group_defaults: { max_depth: two }\n', ['group_defaults.max_depth: expected number, got "two"']],
    ['negative number', AGENT + 'group_defaults: { cooldown_seconds: -1 }\n', ['group_defaults.cooldown_seconds: must be at least 0']],
    ['bad agent id', 'agents:\n  - { id: Bad Id, name: X, persona: p }\n', ['agents[0].id: must be a slug: lowercase letter first, then a-z 0-9 _ -, at most 32 characters']],
    ['missing persona', 'agents:\n  - { id: a, name: A }\n', ['agents[0].persona: required']],
    ['duplicate agent', AGENT + '  - { id: analyst, name: Other, persona: p }\n', ['agents[1].id: duplicate agent id "analyst" (also agents[0])']],
    ['alias to unknown agent', AGENT + 'aliases: { team: [analyst, ghost] }\n', ['aliases.team[1]: unknown agent "ghost" (known: analyst)']],
    ['group with unknown participant', AGENT + 'groups:\n  - { channel: web, chat_id: room, participants: [ghost] }\n', ['groups[0].participants[0]: unknown agent "ghost" (known: analyst)']],
    [
      'telegram token required when enabled',
      'agents:\n  - { id: a, name: A, persona: p, telegram: { token: "${TG_A}" } }\nchannels: { telegram: { enabled: true } }\n',
      ['agents[0].telegram.token: required when channels.telegram.enabled', '(environment): not set: TG_A'],
    ],
    ['malformed token', 'agents:\n  - { id: a, name: A, persona: p, telegram: { token: "abc" } }\nchannels: { telegram: { enabled: true } }\n', ['agents[0].telegram.token: does not look like a bot token from @BotFather ("123456:ABC...")']],
    ['malformed relay token', 'agents:\n  - { id: a, name: A, persona: p, telegram: { token: "1:a" } }\nchannels: { telegram: { enabled: true, relay_token: "relay" } }\n', ['channels.telegram.relay_token: does not look like a bot token from @BotFather ("123456:ABC...")']],
    ['relay token of an agent', 'agents:\n  - { id: a, name: A, persona: p, telegram: { token: "1:a" } }\nchannels: { telegram: { enabled: true, relay_token: "1:a" } }\n', ['channels.telegram.relay_token: is the bot token of agents[0] ("a"); the relay needs a bot of its own from @BotFather']],
    ['discord agent_reactions', AGENT + 'channels: { discord: { agent_reactions: emoji } }\n', ['channels.discord.agent_reactions: must be one of: off, bot']],
    ['discord token required', AGENT + 'channels: { discord: { enabled: true } }\n', ['channels.discord.token: required when channels.discord.enabled']],
    ['public bind without token', AGENT + 'channels: { web: { host: 0.0.0.0 } }\n', ['channels.web.host: refusing to listen on 0.0.0.0 without channels.web.auth_token; set a token or use 127.0.0.1']],
    ['bad colour', 'agents:\n  - { id: a, name: A, persona: p, color: blue }\n', ['agents[0].color: must be a colour like "#2563eb"']],
    ['yaml syntax', 'agents: [\n', ['line 2, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]']],
    ['not a mapping', '- just\n- a list\n', ['(root): expected a mapping of keys (data_dir, llm, agents, ...)']],
    ['several problems at once', 'agents:\n  - { id: a, name: A, persona: p, talkativeness: 2 }\nllm: { max_concurrency: 0 }\n', ['llm.max_concurrency: must be at least 1', 'agents[0].talkativeness: must be at most 1']],
  ];

  it.each(table)('%s', (_name, yaml, expected) => {
    expect(problems(yaml).sort()).toEqual([...expected].sort());
  });

  it('an unknown key is never told to be itself, and only keys of its own mapping are suggested', () => {
    const places: Array<{ keys: string[]; yaml: (k: string) => string; path: (k: string) => string }> = [
      { keys: ['channel', 'chat_id', 'title', 'participants', 'config'], yaml: (k) => `${AGENT}groups:\n  - { channel: web, chat_id: room, participants: [analyst], ${k}: x }\n`, path: (k) => `groups[0].${k}` },
      { keys: ['provider', 'api_key', 'base_url', 'model', 'max_tokens'], yaml: (k) => `${AGENT}llm: { ${k}: x }\n`, path: (k) => `llm.${k}` },
      { keys: ['enabled', 'host', 'port', 'auth_token'], yaml: (k) => `${AGENT}channels: { web: { ${k}: x } }\n`, path: (k) => `channels.web.${k}` },
    ];
    const unknownThere = (place: (typeof places)[number], k: string) => problems(place.yaml(k)).find((p) => p.startsWith(`${place.path(k)}: unknown key`));
    // Keys of other sections, and near spellings of keys.
    const tries = ['id', 'ids', 'name', 'persona', 'token', 'color', 'chat', 'titles', 'enable', 'group_id', 'hosts', 'modle', 'ports'];
    let hints = 0;
    for (const place of places) {
      for (const k of tries.filter((t) => !place.keys.includes(t))) {
        const line = unknownThere(place, k);
        expect(line, place.path(k)).toBeDefined();
        const hint = /did you mean "([^"]+)"/.exec(line!)?.[1];
        if (hint === undefined) continue;
        hints++;
        expect(hint, place.path(k)).not.toBe(k);
        // The suggested key is one that mapping takes.
        expect(unknownThere(place, hint), `${place.path(k)} → ${hint}`).toBeUndefined();
      }
    }
    expect(hints).toBeGreaterThan(3);
  });

  it('a missing file is one clear problem', () => {
    expect(() => loadConfig('/nonexistent/chorus.yaml', {})).toThrow(/file not found/);
  });
});
