/**
 * Config reload on SIGHUP, against the real daemon with a fake OpenAI-compatible
 * model: a good file changes personas, adds an agent and its aliases, and sets new group defaults
 * without a restart; a broken file is refused with the same problems `chorus check` prints and the
 * running config keeps answering; removing an agent is refused. The reloader is also driven
 * directly (the function the signal handler calls) for what needs no process.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { killAll, startDaemon } from '../reliability/daemon.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { ConfigReloader, planReload } from '../../src/config/reload.js';
import { createApp } from '../../src/app.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { silentLogger } from '../../src/core/silentLogger.js';
import type { Logger } from '../../src/core/ports.js';

let llm: FakeOpenAiServer;
const dirs: string[] = [];

beforeAll(async () => {
  llm = await startFakeOpenAi({
    reply: (req) => {
      const msgs = req.body['messages'] as Array<{ role: string; content: string }>;
      const id = /You are \w+ \(@([a-z0-9_-]+)\)/.exec(msgs[0]?.content ?? '')?.[1] ?? '?';
      return { text: `reply from ${id}` };
    },
  });
});

afterAll(async () => {
  killAll();
  await llm?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const ANALYST = (persona: string) => `  - { id: analyst, name: Analyst, persona: "${persona}" }`;
const WRITER = '  - { id: writer, name: Writer, persona: "You write prose." }';
const CRITIC = '  - { id: critic, name: Critic, persona: "You critique ideas.", aliases: [nitpick] }';

function configText(o: { dir: string; agents: string[]; extra?: string; lobby?: string }): string {
  return `data_dir: ${join(o.dir, 'data')}
log_level: info
llm: { provider: openai, api_key: sk-test, base_url: ${llm.url}, model: fake-model, summary_model: fake-small, max_retries: 0 }
agents:
${o.agents.join('\n')}
group_defaults: { cooldown_seconds: 0 }
channels:
  web: { host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [${o.lobby ?? 'analyst, writer'}] }
${o.extra ?? ''}`;
}

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface LogLine {
  msg: string;
  problems?: string[];
  applied?: string[];
  sections?: string[];
}
function logLines(out: string): LogLine[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** Problems as `chorus check` prints them for this file. */
function checkProblems(path: string): string[] {
  try {
    loadConfig(path, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('config reload on SIGHUP (real daemon)', () => {
  it('applies a good file without restart, refuses a broken one and keeps running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-reload-'));
    dirs.push(dir);
    const file = join(dir, 'chorus.yaml');
    writeFileSync(file, configText({ dir, agents: [ANALYST('You analyse numbers.'), WRITER] }));
    const d = await startDaemon(file);
    const api = (path: string, init?: RequestInit) => fetch(`${d.url}${path}`, { ...init, headers: { 'content-type': 'application/json' } });
    const agentIds = async () => ((await (await api('/api/agents')).json()) as { agents: Array<{ id: string }> }).agents.map((a) => a.id);
    const say = (group: string, text: string, id: string) =>
      api(`/api/groups/${group}/messages`, { method: 'POST', body: JSON.stringify({ text, client_id: id, author_name: 'Maya' }) });
    const systemPromptsFor = (agent: string) =>
      llm.requests.map((r) => (r.body['messages'] as Array<{ content: string }>)[0]?.content ?? '').filter((s) => s.includes(`(@${agent})`));
    const count = (msg: string) => logLines(d.output()).filter((l) => l.msg === msg).length;

    expect(await agentIds()).toEqual(['analyst', 'writer']);
    expect((await say('lobby', '@analyst how many?', 'm1')).status).toBe(202);
    await until('the first answer', () => systemPromptsFor('analyst').some((s) => s.includes('You analyse numbers.')));

    // A good file: new persona, a new agent with an alias, a group alias, new group defaults.
    writeFileSync(
      file,
      configText({
        dir,
        agents: [ANALYST('You answer in haiku.'), WRITER, CRITIC],
        extra: 'aliases: { reviewers: [critic, writer] }\n',
      }).replace('group_defaults: { cooldown_seconds: 0 }', 'group_defaults: { cooldown_seconds: 0, max_depth: 1 }'),
    );
    d.child.kill('SIGHUP');
    await until('"config reloaded"', () => count('config reloaded') === 1);
    const reloaded = logLines(d.output()).find((l) => l.msg === 'config reloaded')!;
    expect(reloaded.applied).toEqual(['agent analyst: persona', 'agent critic added', 'aliases', 'group_defaults (for groups created from now on)']);
    expect(await agentIds()).toEqual(['analyst', 'writer', 'critic']);

    // The new persona is in the next prompt; the new agent answers to its alias in a new group,
    // which gets the new defaults.
    expect((await say('lobby', '@analyst and now?', 'm2')).status).toBe(202);
    await until('the haiku persona', () => systemPromptsFor('analyst').some((s) => s.includes('You answer in haiku.')));
    const created = await api('/api/groups', { method: 'POST', body: JSON.stringify({ id: 'review', title: 'Review', participants: ['critic', 'writer'] }) });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { group: { config: { max_depth: number } } }).group.config.max_depth).toBe(1);
    expect((await say('review', '@nitpick thoughts?', 'm3')).status).toBe(202);
    await until('critic, addressed by its alias', () => systemPromptsFor('critic').length > 0);

    // A broken file: refused with the problems `chorus check` prints; everything keeps working.
    const good = configText({ dir, agents: [ANALYST('You answer in haiku.'), WRITER, CRITIC] });
    writeFileSync(file, good.replace('log_level: info', 'log_level: info\ncolour: red').replace('persona: "You write prose." }', 'persona: "You write prose.", talkativeness: 7 }'));
    const expected = checkProblems(file);
    expect(expected.length).toBe(2);
    d.child.kill('SIGHUP');
    await until('"config reload refused"', () => count('config reload refused; the running config is kept') === 1);
    const refused = logLines(d.output()).find((l) => l.msg === 'config reload refused; the running config is kept')!;
    expect(refused.problems).toEqual(expected);
    expect(await agentIds()).toEqual(['analyst', 'writer', 'critic']);
    const before = systemPromptsFor('critic').length;
    expect((await say('review', '@nitpick still there?', 'm4')).status).toBe(202);
    await until('critic after the refused reload', () => systemPromptsFor('critic').length > before);

    // Removing an agent is refused too (its groups still hold it); a restart does that.
    writeFileSync(file, configText({ dir, agents: [ANALYST('You answer in haiku.'), CRITIC], lobby: 'analyst' }));
    d.child.kill('SIGHUP');
    await until('the second refusal', () => count('config reload refused; the running config is kept') === 2);
    expect(logLines(d.output()).filter((l) => l.msg === 'config reload refused; the running config is kept')[1]!.problems).toEqual([
      'agents: agent "writer" was removed; removing an agent needs a restart (its groups still hold it), so put it back or restart',
    ]);
    expect(await agentIds()).toEqual(['analyst', 'writer', 'critic']);

    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(logLines(d.output()).at(-1)?.msg).toBe('stopped');
  }, 90_000);
});

describe('ConfigReloader (the function SIGHUP calls)', () => {
  function recordingLogger(lines: Array<{ level: string; msg: string; obj: Record<string, unknown> }>): Logger {
    const make = (): Logger => {
      const at = (level: string) => (obj: Record<string, unknown>, msg: string) => void lines.push({ level, msg, obj });
      return { ...silentLogger, info: at('info'), warn: at('warn'), error: at('error'), child: () => make() } as Logger;
    };
    return make();
  }

  it('a change to a start-only section is applied nowhere and reported as needing a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-reload-unit-'));
    dirs.push(dir);
    const file = join(dir, 'chorus.yaml');
    writeFileSync(file, configText({ dir, agents: [ANALYST('a'), WRITER] }));
    const initial = loadConfig(file, {}).config;
    const app = await createApp({ config: initial, store: new MemoryStore(), channels: [], logger: silentLogger });
    const lines: Array<{ level: string; msg: string; obj: Record<string, unknown> }> = [];
    const reloader = new ConfigReloader({ load: () => loadConfig(file, {}), apply: (c) => app.reconfigure(c), logger: recordingLogger(lines), initial });

    writeFileSync(file, configText({ dir, agents: [ANALYST('b'), WRITER] }).replace('max_retries: 0', 'max_retries: 1').replace('port: 0', 'port: 1'));
    const r = reloader.reload();
    expect(r).toEqual({ ok: true, source: file, applied: ['agent analyst: persona'], restartNeeded: ['llm', 'channels'] });
    expect(app.router.agentMap.get('analyst')!.persona).toBe('b');
    expect(reloader.config.llm.max_retries).toBe(0);
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual(['info config reloaded', 'warn config reload: these changes take effect after a restart']);
    // No secret goes into the log: only section names.
    expect(JSON.stringify(lines)).not.toContain('sk-test');

    writeFileSync(file, 'agents: [\n');
    const bad = reloader.reload();
    expect(bad.ok).toBe(false);
    expect(app.router.agentMap.get('analyst')!.persona).toBe('b');
  });

  it('planReload: renamed handles take effect, Telegram bot changes need a restart', () => {
    const base = (agents: string[], tg = false) => parseWith(`agents:\n${agents.join('\n')}\n${tg ? 'channels: { telegram: { enabled: true } }\n' : ''}`);
    const dir = mkdtempSync(join(tmpdir(), 'chorus-plan-'));
    dirs.push(dir);
    const parseWith = (text: string) => {
      writeFileSync(join(dir, 'c.yaml'), text);
      return loadConfig(join(dir, 'c.yaml'), {}).config;
    };
    const a = base(['  - { id: a, name: A, persona: p, telegram: { token: "1:x" } }'], true);
    const b = base(['  - { id: a, name: Alpha, persona: p, aliases: [first], telegram: { token: "2:y" } }', '  - { id: b, name: B, persona: q, telegram: { token: "3:z" } }'], true);
    expect(planReload(a, b)).toEqual({
      refused: [],
      applied: ['agent a: name, aliases', 'agent b added'],
      restartNeeded: ['agents[0].telegram (bots start with the daemon)', 'agents[1].telegram (its Telegram bot starts with the daemon)'],
    });
  });
});
