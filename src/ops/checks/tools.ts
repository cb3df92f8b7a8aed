/**
 * Doctor check of the MCP tool servers: each is started (stdio) or reached (HTTP) once, the way the
 * daemon would, and its tools are listed — or the reason it cannot be reached is given with a fix.
 * Agent entries naming a tool the server does not list are warned about by their key; the config
 * check cannot know them, only the server can. Every started process is ended before returning.
 */
import type { ChorusConfig } from '../../config/schema.js';
import { silentLogger } from '../../core/silentLogger.js';
import { whereOf } from '../../tools/serverConfig.js';
import type { ToolServerStatus } from '../../tools/types.js';
import { fail, ok, warn, type Finding } from '../findings.js';

/** The doctor waits this long for one server's handshake and list. */
const CONNECT_TIMEOUT_MS = 10_000;

export async function checkTools(config: ChorusConfig): Promise<Finding[]> {
  if (Object.keys(config.tools).length === 0) return [];
  // The SDK is loaded only when there is a server to ask.
  const { McpHub } = await import('../../tools/McpHub.js');
  const hub = new McpHub({
    servers: config.tools,
    agents: config.agents.map((a) => ({ id: a.id, tools: a.tools })),
    logger: silentLogger,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
  });
  try {
    await hub.start();
    const out: Finding[] = hub.status().map((s) => serverFinding(s, config));
    for (const m of hub.missingTools()) {
      out.push(warn(`tools of agent ${m.agent}`, `${m.path} "${m.entry}": ${m.message}`, 'write the tool\'s exact name in agents[].tools (or the server\'s name for all its tools), or remove the entry'));
    }
    return out;
  } finally {
    await hub.stop();
  }
}

function serverFinding(s: ToolServerStatus, config: ChorusConfig): Finding {
  const cfg = config.tools[s.name]!;
  const subject = `tool server ${s.name}`;
  const where = whereOf(cfg);
  if (s.state === 'up') {
    const how = s.transport === 'stdio' ? `started \`${where}\`` : `reached ${where}`;
    return ok(subject, `${how}; ${s.tools.length} tool(s): ${s.tools.join(', ') || 'none'}`);
  }
  const fix =
    s.transport === 'stdio'
      ? `check tools.${s.name}.command, args, cwd and env; run the command by hand to see what it says`
      : /HTTP 40[13]/.test(s.error ?? '')
        ? `check tools.${s.name}.headers (the token, e.g. "Bearer \${TOKEN}", and that the variable is set)`
        : `check tools.${s.name}.url and that the server is running`;
  return fail(subject, `${s.transport === 'stdio' ? 'could not start it' : 'could not reach it'}: ${s.error ?? 'unknown reason'}; agents get none of its tools while it is down`, fix);
}
