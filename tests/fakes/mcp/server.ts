/**
 * # Fake MCP tool server over stdio
 *
 *     node --import tsx tests/fakes/mcp/server.ts --stdio [--state FILE] [--page-size N]
 *
 * The tools of `tools.ts` on stdin/stdout, as a child process Chorus starts and supervises. The
 * state file may also come from `$MCP_FAKE_STATE`. It writes one line to stderr when it is ready
 * (`fake MCP server ready (pid N)`), and `crash` writes `crashing on request` and exits with 3.
 */
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createFakeMcpServer } from './tools.js';

const { values } = parseArgs({ options: { stdio: { type: 'boolean' }, state: { type: 'string' }, 'page-size': { type: 'string' } } });
if (!values.stdio) {
  process.stderr.write('usage: server.ts --stdio [--state FILE] [--page-size N] (HTTP: see http.ts)\n');
  process.exit(2);
}
const server = createFakeMcpServer({
  stateFile: values.state ?? process.env.MCP_FAKE_STATE,
  pageSize: values['page-size'] ? Number(values['page-size']) : undefined,
  onCrash: () => {
    process.stderr.write('crashing on request\n');
    process.exit(3);
  },
  stderr: (line) => process.stderr.write(`${line}\n`),
});
await server.connect(new StdioServerTransport());
// The client closing stdin is the request to stop.
process.stdin.on('end', () => process.exit(0));
process.stderr.write(`fake MCP server ready (pid ${process.pid})\n`);
