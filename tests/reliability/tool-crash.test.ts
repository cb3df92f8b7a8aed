/**
 * Never twice, end to end: the real daemon, a real MCP server over stdio (tests/fakes/mcp) that
 * counts cancellations in a file, and an OpenAI-compatible fake model that calls `cancel_order`.
 * The tool makes its change, then takes three seconds to answer; the daemon is SIGKILLed in
 * between. After a restart the call is not run again (the counter stays at 1), the agent is told
 * its outcome is unknown, the room sees it, and the agent's reply follows. A read-only lookup in
 * the same position is run once more instead.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { readFakeState } from '../fakes/mcp/tools.js';
import { ROOT, killAll, startDaemon, waitIdle } from './daemon.js';

const API_KEY = 'sk-tools-crash-4f2a9c-SECRET';
const WEB_TOKEN = 'web-tools-crash-7b1d3e-SECRET';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };

let llm: FakeOpenAiServer;
const dirs: string[] = [];
/** What the model was sent as each tool result, in order. */
const toolResults: string[] = [];

beforeAll(async () => {
  llm = await startFakeOpenAi({
    apiKey: API_KEY,
    reply: (req) => {
      const msgs = req.body['messages'] as Array<{ role: string; content: string | null }>;
      const system = String(msgs[0]?.content ?? '');
      const last = msgs.at(-1)!;
      if (last.role === 'tool') {
        toolResults.push(String(last.content));
        return { text: `Noted: ${String(last.content).slice(0, 60)}` };
      }
      if (!system.includes('(@analyst)')) return { text: '[PASS]' };
      const turn = String(last.content);
      if (turn.includes('look up')) return callTool('orders__slow', { ms: 3000 });
      return callTool('orders__cancel_order', { id: '42', after_ms: 3000 });
    },
  });
});

afterAll(async () => {
  killAll();
  await llm?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string, state: string): string {
  const path = join(dir, 'chorus.yaml');
  writeFileSync(
    path,
    `data_dir: ${join(dir, 'data')}
log_level: info
llm: { provider: openai, api_key: ${API_KEY}, base_url: ${llm.url}, model: fake-model, summary_model: fake-small, max_retries: 0 }
tools:
  orders:
    command: ${process.execPath}
    args: [--import, tsx, ${join(ROOT, 'tests/fakes/mcp/server.ts')}, --stdio, --state, ${state}]
    cwd: ${ROOT}
    confirm: never
agents:
  - { id: analyst, name: Analyst, persona: "You look after orders.", tools: [orders] }
  - { id: writer, name: Writer, persona: "You write prose." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
channels:
  web: { host: 127.0.0.1, port: 0, auth_token: ${WEB_TOKEN} }
groups:
  - { channel: web, chat_id: room, title: Orders, participants: [analyst, writer] }
`,
  );
  return path;
}

async function post(url: string, text: string): Promise<void> {
  const res = await fetch(`${url}/api/groups/room/messages`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya' }) });
  expect(res.status).toBe(202);
}

async function transcript(url: string): Promise<Array<{ kind: string; text: string; tool?: { outcome: string; tool: string } }>> {
  const res = await fetch(`${url}/api/groups/room/messages?limit=500`, { headers: AUTH });
  return ((await res.json()) as { messages: Array<{ kind: string; text: string; tool?: { outcome: string; tool: string } }> }).messages;
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('tool calls across SIGKILL (real daemon, real MCP server over stdio)', () => {
  it('a changing call killed between its side effect and its result is not run again; a read-only one is retried once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-tools-crash-'));
    dirs.push(dir);
    const state = join(dir, 'orders.json');
    const config = writeConfig(dir, state);

    const first = await startDaemon(config);
    await post(first.url, '@analyst cancel order 42, please');
    // The server has made its change and is still answering: kill the daemon now.
    await until(() => existsSync(state) && readFakeState(state).cancelled === 1, 'the cancellation to happen');
    first.kill('SIGKILL');
    await first.exited;

    const second = await startDaemon(config);
    await until(async () => (await transcript(second.url)).some((e) => e.kind === 'agent'), 'the resumed turn to answer');
    await waitIdle(second.url, AUTH);
    expect(readFakeState(state).cancelled).toBe(1);
    expect(toolResults.at(-1)).toMatch(/whether it took effect is unknown/);
    const t = await transcript(second.url);
    expect(t.filter((e) => e.kind === 'tool').map((e) => [e.tool!.tool, e.tool!.outcome])).toEqual([['cancel_order', 'interrupted']]);
    expect(t.at(-1)).toMatchObject({ kind: 'agent', text: expect.stringContaining('Noted:') });

    // A read-only call in the same position is run once more, and its answer reaches the model.
    await post(second.url, '@analyst look up the slow thing');
    // The call is recorded as begun before the server sees it: once the server counts it, kill.
    await until(() => (readFakeState(state).slowStarted ?? 0) === 1, 'the slow call to begin');
    second.kill('SIGKILL');
    await second.exited;
    const third = await startDaemon(config);
    await until(async () => (await transcript(third.url)).filter((e) => e.kind === 'tool').length === 2, 'the retried read-only call');
    await waitIdle(third.url, AUTH);
    const after = await transcript(third.url);
    expect(after.filter((e) => e.kind === 'tool').map((e) => [e.tool!.tool, e.tool!.outcome])).toEqual([
      ['cancel_order', 'interrupted'],
      ['slow', 'ok'],
    ]);
    expect(toolResults.at(-1)).toMatch(/waited 3000 ms/);
    expect(readFakeState(state).slowStarted).toBe(2); // retried once, not more
    expect(readFakeState(state).cancelled).toBe(1);
    third.kill('SIGTERM');
    expect((await third.exited).code).toBe(0);
  }, 180_000);
});
