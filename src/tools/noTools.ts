/**
 * The tool host of a config without `tools:`: the core's host with no tools (no agent has any),
 * plus nothing to start, stop or report — and the MCP SDK (a quarter of a second to load) is never
 * loaded.
 */
import { noTools as none } from '../core/router/toolTurn.js';
import type { ToolServers } from './types.js';

export const noTools: ToolServers = {
  ...none,
  status: () => [],
  resolveName: () => undefined,
  missingTools: () => [],
  start: () => Promise.resolve(),
  stop: () => Promise.resolve(),
  setAgents: () => undefined,
};
