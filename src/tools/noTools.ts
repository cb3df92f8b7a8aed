/**
 * The tool host of a config without `tools:`: no agent has tools, and the MCP SDK (a quarter of a
 * second to load) is never loaded.
 */
import type { ToolServers } from './types.js';

export const noTools: ToolServers = {
  toolsFor: () => [],
  call: (req) => {
    const content = `no MCP server "${req.server}" is configured under tools:`;
    return Promise.resolve({ outcome: 'unavailable', content, bytes: Buffer.byteLength(content, 'utf8') });
  },
  status: () => [],
  resolveName: () => undefined,
  missingTools: () => [],
  start: () => Promise.resolve(),
  stop: () => Promise.resolve(),
  setAgents: () => undefined,
};
