/**
 * The `tools:` section and `agents[].tools`: every mistake is one line naming its key, `${VAR}`
 * works in env and headers, relative paths mean what they say next to the config file, and a
 * reload that changes `tools:` says a restart is needed.
 */
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentsFromConfig } from '../../src/app.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { planReload } from '../../src/config/reload.js';
import { configSecrets } from '../../src/redact.js';

const TOOLS = `tools:
  orders:
    command: node
    args: [servers/orders.js]
    env: { ORDERS_KEY: "\${ORDERS_KEY}", REGION: eu-west-1, PORT: 9000 }
  search:
    url: http://127.0.0.1:9000/mcp
    headers: { authorization: "Bearer \${SEARCH_TOKEN}" }
    confirm: never
    approvers: anyone
`;
const agent = (tools: string) => `agents:\n  - { id: analyst, name: Analyst, persona: p, tools: ${tools} }\n`;

function problems(yaml: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfigText(yaml, 'test.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('tools config', () => {
  it('reads both kinds of server, expands ${VAR} and fills the defaults', () => {
    const env = { ORDERS_KEY: 'orders-secret-key-123', SEARCH_TOKEN: 'search-token-abcdef' };
    const { config } = parseConfigText(TOOLS + agent('[orders, search.web_search]') + 'limits: { max_tool_result_bytes: 2048 }\n', '/etc/chorus/config.yaml', env, { baseDir: '/etc/chorus' });
    expect(config.tools.orders).toEqual({
      command: 'node',
      args: ['servers/orders.js'],
      env: { ORDERS_KEY: 'orders-secret-key-123', REGION: 'eu-west-1', PORT: '9000' },
      cwd: '/etc/chorus',
      confirm: 'auto',
      approvers: 'admins',
    });
    expect(config.tools.search).toEqual({ url: 'http://127.0.0.1:9000/mcp', headers: { authorization: 'Bearer search-token-abcdef' }, confirm: 'never', approvers: 'anyone' });
    expect(config.limits.max_tool_result_bytes).toBe(2048);
    expect(agentsFromConfig(config)[0]!.tools).toEqual(['orders', 'search.web_search']);
    // Credentials given to tool servers are kept out of logs like every other secret; plain values are not.
    const secrets = configSecrets(config);
    expect(secrets).toEqual(expect.arrayContaining(['orders-secret-key-123', 'search-token-abcdef']));
    expect(secrets).not.toContain('eu-west-1');
  });

  it('defaults: no servers, 64 KiB results, agents without tools', () => {
    const { config } = parseConfigText(agent('[]').replace(', tools: []', ''), 'test.yaml', {});
    expect(config.tools).toEqual({});
    expect(config.limits.max_tool_result_bytes).toBe(65536);
    expect(agentsFromConfig(config)[0]!.tools).toBeUndefined();
  });

  it('a relative cwd is taken from the config file\'s folder', () => {
    const path = resolve('/srv/chorus/config.yaml');
    const yaml = 'tools:\n  a: { command: ./run.sh, cwd: servers }\n  b: { command: node }\n' + agent('[a]');
    const { config } = parseConfigText(yaml, path, {}, { baseDir: dirname(path) });
    expect(config.tools.a!.cwd).toBe('/srv/chorus/servers');
    expect(config.tools.b!.cwd).toBe('/srv/chorus');
  });

  const table: Array<[string, string, string[]]> = [
    ['unknown server in an agent list', TOOLS + agent('[orders, serch]'), ['agents[0].tools[1]: no MCP server "serch" in tools (known: orders, search)']],
    ['unknown server of a server.tool entry', TOOLS + agent('[serch.web_search]'), ['agents[0].tools[0]: no MCP server "serch" in tools (known: orders, search)']],
    ['an agent with tools but none configured', agent('[orders]'), ['agents[0].tools[0]: no MCP server "orders" in tools (no server is configured under tools:)']],
    ['a malformed entry', TOOLS + agent('["orders lookup"]'), ['agents[0].tools[0]: must be a server name from tools:, or server.tool']],
    ['neither command nor url', 'tools:\n  orders: { confirm: auto }\n' + agent('[orders]'), ['tools.orders: needs "command" (a program Chorus starts and speaks to over stdio) or "url" (a Streamable HTTP server)']],
    ['both command and url', 'tools:\n  orders: { command: node, url: "http://127.0.0.1:1/mcp" }\n' + agent('[orders]'), ['tools.orders: has both "command" and "url"; a server is reached one way, keep one']],
    ['a bad server name', 'tools:\n  "or ders": { command: node }\n' + agent('[]'), ['tools.or ders: a server name may use only letters, digits, _ and - (at most 64 characters)']],
    ['args with a url', 'tools:\n  s: { url: "http://127.0.0.1:1/mcp", args: [x] }\n' + agent('[s]'), ['tools.s.args: only for a server started by "command"; this one is reached by "url"']],
    ['headers with a command', 'tools:\n  s: { command: node, headers: { a: b } }\n' + agent('[s]'), ['tools.s.headers: only for a server reached by "url"; give a started program its secrets through "env"']],
    ['a url that is not http', 'tools:\n  s: { url: "ftp://example.com/mcp" }\n' + agent('[s]'), ['tools.s.url: must be an http:// or https:// URL (MCP Streamable HTTP)']],
    ['a misspelt key', 'tools:\n  s: { comand: node }\n' + agent('[s]'), ['tools.s.comand: unknown key (did you mean "command"?)']],
    ['a bad confirm', 'tools:\n  s: { command: node, confirm: sometimes }\n' + agent('[s]'), ['tools.s.confirm: must be one of: auto, always, never']],
    ['a bad approvers', 'tools:\n  s: { command: node, approvers: everyone }\n' + agent('[s]'), ['tools.s.approvers: must be one of: admins, anyone']],
    ['a tiny result limit', agent('[]') + 'limits: { max_tool_result_bytes: 10 }\n', ['limits.max_tool_result_bytes: must be at least 1024']],
  ];

  it.each(table)('%s', (_name, yaml, expected) => {
    expect(problems(yaml, { ORDERS_KEY: 'k', SEARCH_TOKEN: 't' }).sort()).toEqual([...expected].sort());
  });

  it('a reload that changes tools: says a restart is needed; agents\' lists apply at once', () => {
    const before = parseConfigText(TOOLS + agent('[orders]'), 'a.yaml', {}).config;
    const after = parseConfigText(TOOLS.replace('confirm: never', 'confirm: always') + agent('[orders, search]'), 'a.yaml', {}).config;
    const plan = planReload(before, after);
    expect(plan.restartNeeded).toEqual(['tools (MCP servers are started and connected with the daemon)']);
    expect(plan.applied).toEqual(['agent analyst: tools']);
  });
});
