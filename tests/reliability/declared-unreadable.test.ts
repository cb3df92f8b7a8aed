/**
 * A group declared in `groups:` whose data cannot be read must not stop the daemon: the real
 * `chorus start` comes up, the other groups work, the damaged group is named on /readyz and by
 * `chorus doctor`, one error line names its file and the problem, and its files are left
 * byte for byte as they were. Two kinds of damage: a log segment that cannot be read (chmod 000,
 * or — as root, who reads anything — a directory where the segment file was), and the group's
 * directory replaced by a file.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { silentLogger } from '../helpers/logger.js';
import { killAll, startDaemon } from './daemon.js';

const dirs: string[] = [];
const restore: Array<() => void> = [];

afterAll(() => {
  killAll();
  for (const f of restore.splice(0)) f();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function setUp(): { configPath: string; data: string } {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-declared-unreadable-'));
  dirs.push(dir);
  const configPath = join(dir, 'chorus.yaml');
  writeFileSync(
    configPath,
    `data_dir: ${join(dir, 'data')}
log_level: info
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse." }
  - { id: writer, name: Writer, persona: "You write." }
group_defaults: { cooldown_seconds: 0 }
channels:
  web: { host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer] }
  - { channel: web, chat_id: kept, title: Kept, participants: [analyst, writer] }
`,
  );
  return { configPath, data: join(dir, 'data') };
}

/** Run the app once so both declared groups exist on disk with a message each. */
async function firstRun(configPath: string): Promise<void> {
  const app = await createApp({ config: loadConfig(configPath, {}).config, logger: silentLogger });
  await app.start();
  try {
    for (const id of ['lobby', 'kept']) {
      const res = await fetch(`${app.webUrl}/api/groups/${id}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: `hello ${id}`, author_name: 'Maya' }) });
      expect(res.status).toBe(202);
    }
    await app.router.idle();
  } finally {
    await app.stop();
  }
}

/** Every file and directory under `path` (or the file itself): kind, mode and bytes. */
function snapshot(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (p: string, rel: string) => {
    const st = lstatSync(p);
    if (st.isDirectory()) {
      out[rel] = `dir ${st.mode.toString(8)}`;
      for (const name of readdirSync(p).sort()) visit(join(p, name), `${rel}/${name}`);
    } else {
      // An unreadable file (chmod 000) is read with its mode put back for a moment.
      const mode = st.mode & 0o777;
      if (mode === 0) chmodSync(p, 0o600);
      try {
        out[rel] = `file ${st.mode.toString(8)} ${readFileSync(p).toString('base64')}`;
      } finally {
        if (mode === 0) chmodSync(p, 0);
      }
    }
  };
  visit(path, '.');
  return out;
}

/** pino's JSON lines from the daemon's output. */
function logLines(output: string): Array<Record<string, unknown> & { level: number; msg: string }> {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown> & { level: number; msg: string });
}

const asRoot = process.getuid?.() === 0;

const damages: Array<{ name: string; damage: (groupDir: string) => string }> = [
  {
    name: asRoot ? 'its log segment replaced by a directory (running as root, where chmod 000 does not stop reads)' : 'its log segment unreadable (chmod 000)',
    damage: (groupDir) => {
      const logDir = join(groupDir, 'log');
      const segment = join(logDir, readdirSync(logDir).find((n) => n.endsWith('.jsonl'))!);
      if (asRoot) {
        rmSync(segment);
        mkdirSync(segment);
      } else {
        chmodSync(segment, 0);
        restore.push(() => chmodSync(segment, 0o600));
      }
      return groupDir;
    },
  },
  {
    name: 'its directory replaced by a file',
    damage: (groupDir) => {
      rmSync(groupDir, { recursive: true });
      writeFileSync(groupDir, 'not a directory\n');
      return groupDir;
    },
  },
];

describe('a declared group whose data cannot be read', () => {
  it.each(damages)('$name: the daemon starts without it, the others work, it is named on /readyz and by doctor, its files are untouched', async ({ damage }) => {
    const { configPath, data } = setUp();
    await firstRun(configPath);
    const damaged = damage(join(data, 'groups', 'lobby'));
    const before = snapshot(damaged);

    const daemon = await startDaemon(configPath);
    try {
      const groups = (await (await fetch(`${daemon.url}/api/groups`)).json()) as { groups: Array<{ id: string }> };
      expect(groups.groups.map((g) => g.id)).toEqual(['kept']);
      const posted = await fetch(`${daemon.url}/api/groups/kept/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'still here', author_name: 'Maya' }) });
      expect(posted.status).toBe(202);
      const page = (await (await fetch(`${daemon.url}/api/groups/kept/messages?limit=50`)).json()) as { messages: Array<{ text: string; kind: string }> };
      expect(page.messages.filter((m) => m.kind === 'human').map((m) => m.text)).toEqual(['hello kept', 'still here']);
      // Messages to the damaged group are refused, and create nothing in its place.
      expect((await fetch(`${daemon.url}/api/groups/lobby/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x', author_name: 'Maya' }) })).status).toBe(404);
      const created = await fetch(`${daemon.url}/api/groups`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'lobby', title: 'Lobby again', participants: ['writer'] }) });
      expect(created.status).toBe(409);

      const ready = await fetch(`${daemon.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(JSON.stringify(await ready.json())).toContain('"lobby"');

      // One error line, naming the group's files and the problem; the start is not an error.
      const errors = logLines(daemon.output()).filter((l) => l.level >= 50);
      expect(errors).toHaveLength(1);
      const line = JSON.stringify(errors[0]);
      expect(line).toContain(join(data, 'groups', 'lobby'));
      expect(line).toMatch(/EACCES|EISDIR|ENOTDIR/);
      expect(daemon.output()).not.toMatch(/could not start/);
    } finally {
      daemon.kill('SIGTERM');
      expect((await daemon.exited).code).toBe(0);
    }

    const lines: string[] = [];
    const { code } = await runDoctor(loadConfig(configPath, {}), (l) => lines.push(l));
    // A failure: the config declares a group that does not run.
    const about = lines.filter((l) => l.includes('lobby'));
    expect(about).toHaveLength(1);
    expect(about[0]).toMatch(/^✘ data_dir: group lobby is damaged: its files cannot be read \((EACCES|EISDIR|ENOTDIR).*\).* declared in groups: \(web lobby\) and left out at start — fix: /);
    expect(code).toBe(1);

    expect(snapshot(damaged)).toEqual(before);
  });
});
