/**
 * The README's "Telegram in ten minutes" walk-through, followed step by step against the fake Bot
 * API and the fake Anthropic API. The commands and the chat messages are read from README.md
 * itself, so a change there that a person could no longer follow breaks this test:
 *
 * 1–2. BotFather and privacy mode: three bots made in the fake, privacy mode off.
 * 3.   The scripted `init --yes …` line, run as the real CLI in a fresh folder, with the tokens
 *      and key put in and only the flags that point at the local fakes added.
 * 4.   `doctor` in that folder.
 * 5.   `start` on the config init wrote.
 * 6.   A person makes a group and adds the bots: the group forms, Chorus says who is in,
 *      `/group list` shows the members.
 * 7.   The `@analyst …` message gets Analyst's answer; the open question ends its round with each
 *      agent posting or staying silent; `/stop` is answered.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropicServer, type LoggedRequest } from '../fakes/anthropic/index.js';
import { FakeTelegram, type FakeUser } from '../fakes/telegram/FakeTelegram.js';
import { killAll, ROOT, startDaemon, waitIdle, type Daemon } from '../reliability/daemon.js';

const AGENTS = ['analyst', 'writer', 'critic'] as const;
type AgentId = (typeof AGENTS)[number];
const NAMES: Record<AgentId, string> = { analyst: 'Analyst', writer: 'Writer', critic: 'Critic' };
const TOKENS: Record<AgentId, string> = {
  analyst: '700001:AAA-readme-analyst-token',
  writer: '700002:BBB-readme-writer-token',
  critic: '700003:CCC-readme-critic-token',
};
const USERNAMES: Record<AgentId, string> = { analyst: 'readme_analyst_bot', writer: 'readme_writer_bot', critic: 'readme_critic_bot' };
const API_KEY = 'sk-ant-readme-walkthrough-key';
const PERSON: FakeUser = { id: 7101, first_name: 'Maya', username: 'maya' };

/** What each agent's model says: an answer when it must answer; on a voluntary turn only Writer speaks. */
const ANSWER = (name: string) => `From ${name}'s side: a March launch costs about 40k for ads and support.`;
const VOLUNTEERED = 'April gives us time to finish the launch copy.';

// ---------------------------------------------------------------------------------------------
// The README, read as a person reads it

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The Telegram walk-through: from its heading to the next heading of the same level. */
function walkthrough(): string {
  const start = README.indexOf('## Telegram in ten minutes');
  if (start < 0) throw new Error('README.md has no "Telegram in ten minutes" section');
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** Numbered step `n` of the walk-through, up to the next numbered step or the section's end. */
function step(n: number): string {
  const text = walkthrough();
  const m = new RegExp(`^${n}\\. [\\s\\S]*?(?=^\\d+\\. |^###? |(?![\\s\\S]))`, 'm').exec(text);
  if (!m) throw new Error(`README.md's Telegram walk-through has no step ${n}`);
  return m[0];
}

/** The `code spans` of a step, in order. */
const spans = (text: string) => [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);

/** The one code span of step `n` that `pick` accepts. */
function spanOf(n: number, what: string, pick: (s: string) => boolean): string {
  const found = spans(step(n)).filter(pick);
  if (found.length !== 1) throw new Error(`README step ${n}: expected one ${what}, found ${JSON.stringify(found)}`);
  return found[0]!;
}

// ---------------------------------------------------------------------------------------------
// Running the CLI as a person would, in their own folder

/** The environment of a person's shell: no model key, no Chorus overrides from the test runner. */
function personEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k === 'ANTHROPIC_API_KEY' || k.startsWith('CHORUS_')) delete env[k];
  return env;
}

/** `node bin/chorus.js …` from a README line, run in `cwd`; the launcher is Chorus's own. */
function runCli(line: string, extra: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  const words = line.trim().split(/\s+/);
  expect(words.slice(0, 2), `README command: ${line}`).toEqual(['node', 'bin/chorus.js']);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, words[1]!), ...words.slice(2), ...extra], { cwd, env: personEnv() });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// ---------------------------------------------------------------------------------------------
// The model

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b) => (typeof b === 'object' && b && 'text' in b ? String((b as { text: unknown }).text) : '')).join('\n');
  return '';
}

/** Which agent a turn is for (its system prompt says "You are Name (@id)"), or null (doctor's probe, summaries). */
function agentOf(req: LoggedRequest): AgentId | null {
  const id = /You are \w+ \(@([a-z0-9_-]+)\)/.exec(textOf(req.body['system']))?.[1];
  return AGENTS.find((a) => a === id) ?? null;
}

function lastAsk(req: LoggedRequest): string {
  const msgs = (req.body['messages'] as Array<{ role: string; content: unknown }> | undefined) ?? [];
  return textOf(msgs.at(-1)?.content);
}

function modelReply(req: LoggedRequest): string {
  const agent = agentOf(req);
  if (!agent) return 'ok';
  if (!lastAsk(req).includes('You were not addressed')) return ANSWER(NAMES[agent]);
  return agent === 'writer' ? VOLUNTEERED : '[PASS]';
}

// ---------------------------------------------------------------------------------------------

let tg: FakeTelegram;
let model: FakeAnthropicServer;
let dir: string;
let daemon: Daemon | undefined;

beforeAll(async () => {
  // What the launcher does before a first start; done once here so no step below waits for it.
  const built = spawnSync(process.execPath, ['scripts/build.cjs', '--if-stale'], { cwd: ROOT, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`build failed:\n${built.stdout}${built.stderr}`);
  tg = await FakeTelegram.start();
  model = await startFakeAnthropic({ apiKey: API_KEY, reply: modelReply });
  dir = mkdtempSync(join(tmpdir(), 'chorus-readme-tg-'));
}, 300_000);

afterAll(async () => {
  killAll();
  if (daemon) await daemon.exited;
  await tg?.close();
  await model?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('README: Telegram in ten minutes, followed literally against the fakes', { timeout: 180_000 }, () => {
  it('steps 1–2: three bots from BotFather, privacy mode off', () => {
    const made = step(1);
    for (const id of AGENTS) expect(made).toContain(`**${NAMES[id]}**`);
    expect(step(2)).toContain('/setprivacy');
    for (const id of AGENTS) tg.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: NAMES[id], canReadAll: true });
  });

  it('step 3: the scripted init line writes config.yaml and .env in the folder it runs in', async () => {
    const line = step(3)
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.startsWith('node bin/chorus.js init --yes --telegram analyst=TOKEN'));
    expect(line, 'README step 3 shows the scripted init line').toBeDefined();
    let filled = line!.replace('sk-ant-…', API_KEY);
    for (const id of AGENTS) {
      expect(filled).toContain(`--telegram ${id}=TOKEN`);
      filled = filled.replace(`${id}=TOKEN`, `${id}=${TOKENS[id]}`);
    }
    expect(filled).not.toContain('TOKEN');
    expect(filled).not.toContain('…');

    // Only what points at the local fakes (and a free port) is added to the README's line.
    const r = await runCli(filled, ['--telegram-api-root', tg.apiRoot, '--base-url', model.url, '--port', '0'], dir);
    expect(r.code, r.out).toBe(0);
    for (const id of AGENTS) expect(r.out).toContain(`✔ telegram ${id}: @${USERNAMES[id]} (${NAMES[id]}); privacy mode off`);
    expect(existsSync(join(dir, 'config.yaml'))).toBe(true);
    expect(existsSync(join(dir, '.env'))).toBe(true);
    const env = readFileSync(join(dir, '.env'), 'utf8');
    for (const secret of [...Object.values(TOKENS), API_KEY]) expect(env).toContain(secret);
  });

  it('step 4: doctor, run in that folder, finds nothing that will not work', async () => {
    const command = spanOf(4, 'doctor command', (s) => s.includes('doctor'));
    expect(command).toBe('node bin/chorus.js doctor');
    const r = await runCli(command, [], dir);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(join(dir, 'config.yaml'));
    for (const id of AGENTS) expect(r.out).toContain(`@${USERNAMES[id]}`);
  });

  it('step 5: start on the written config; it becomes ready', async () => {
    // `npm start` is the launcher's `start`; it reads the config of the folder it runs in, so it
    // is started here on that folder's config (Chorus's own folder gets none).
    expect(spans(step(5))).toContain('npm start');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['start']).toMatch(/\bnode bin\/chorus\.js start$/);
    daemon = await startDaemon(join(dir, 'config.yaml'));
    await until('/readyz 200', async () => (await fetch(`${daemon!.url}/readyz`)).status === 200);
    for (const id of AGENTS) await until(`${id}'s bot polls`, () => tg.calls.some((c) => c.method === 'getUpdates' && c.bot === USERNAMES[id]));
  });

  let chatId = 0;

  it('step 6: adding the three bots to a new group forms it; Chorus says who is in; /group list shows them', async () => {
    const listCommand = spanOf(6, '/group list', (s) => s.startsWith('/group'));
    expect(listCommand).toBe('/group list');
    chatId = tg.createGroup('Launch plan').id;
    for (const id of AGENTS) tg.addBotToChat(chatId, TOKENS[id], PERSON);

    // Who is in, as the chat shows it: the greeting names every bot that was added.
    const greeting = await until('the group forms and Chorus greets it', () => tg.postsIn(chatId).find((p) => p.text.includes('is ready')), 30_000);
    for (const id of AGENTS) expect(greeting.text, JSON.stringify(tg.transcript(chatId))).toContain(`${NAMES[id]} (@${id})`);
    await waitIdle(daemon!.url, {}, 60_000);

    const before = tg.postsIn(chatId).length;
    tg.humanSays(chatId, PERSON, listCommand);
    const listing = await until('the /group list answer', () => tg.postsIn(chatId).slice(before)[0]);
    for (const id of AGENTS) expect(listing.text).toContain(NAMES[id]);
    expect(listing.text).not.toMatch(/^⚠/);
    await waitIdle(daemon!.url, {}, 60_000);

    // Step 4 again, as it says: once the group exists doctor checks each bot is in it.
    expect(step(4)).toContain('Once the group exists');
    const doctor = await runCli(spanOf(4, 'doctor command', (s) => s.includes('doctor')), [], dir);
    expect(doctor.code, doctor.out).toBe(0);
    for (const id of AGENTS) expect(doctor.out).toContain(`✔ telegram ${id} in "Launch plan" (${chatId}): @${USERNAMES[id]} is a member and reads every message`);
  });

  it('step 7: @analyst is answered by Analyst; the open question ends with posts or silence; /stop is answered', async () => {
    const talk = step(7);
    const addressed = spanOf(7, '@analyst message', (s) => s.startsWith('@analyst '));
    const open = spanOf(7, 'open question', (s) => s.endsWith('?') && !s.includes('@'));
    const stop = spanOf(7, '/stop', (s) => s.startsWith('/stop'));
    expect(talk).toContain('Analyst must answer');

    // The addressed message: Analyst's bot answers it, as a reply to it.
    let before = tg.postsIn(chatId).length;
    const asked = tg.humanSays(chatId, PERSON, addressed);
    const answer = await until('Analyst answers', () => tg.postsIn(chatId).slice(before).find((p) => p.bot === USERNAMES.analyst));
    expect(answer.text).toBe(ANSWER(NAMES.analyst));
    expect(answer.replyToMessageId).toBe(asked.messageId);
    await waitIdle(daemon!.url, {}, 60_000);
    expect(tg.postsIn(chatId).slice(before).filter((p) => p.text.startsWith('⚠'))).toEqual([]);

    // The open question: each agent asked replies or passes; whatever was said reached the chat
    // from its own bot, and the round ends without an error notice.
    before = tg.postsIn(chatId).length;
    const turnsBefore = model.messages().length;
    tg.humanSays(chatId, PERSON, open);
    await until('Writer chimes in', () => tg.postsIn(chatId).slice(before).some((p) => p.bot === USERNAMES.writer));
    await waitIdle(daemon!.url, {}, 60_000);
    const turns = model.messages().slice(turnsBefore).filter((r) => agentOf(r) && lastAsk(r).includes(open));
    expect(turns.length).toBeGreaterThan(0);
    const spoken = turns.map((r) => ({ agent: agentOf(r)!, text: modelReply(r) })).filter((t) => t.text !== '[PASS]');
    const posts = tg.postsIn(chatId).slice(before);
    expect(posts.map((p) => [p.bot, p.text]).sort()).toEqual(spoken.map((t) => [USERNAMES[t.agent], t.text]).sort());

    // /stop with nothing running: Chorus says so, not an error.
    before = tg.postsIn(chatId).length;
    tg.humanSays(chatId, PERSON, stop);
    const stopped = await until('the /stop answer', () => tg.postsIn(chatId).slice(before)[0]);
    expect(stopped.text).not.toMatch(/^⚠/);
    expect(stopped.text).toContain('Stopped');
  });
});
