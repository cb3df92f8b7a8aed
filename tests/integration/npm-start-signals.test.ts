/**
 * `npm start` the way pm2 or a plain service unit runs it: the compiled daemon
 * starts from dist/ (no tsx anywhere in the process tree), and SIGTERM or SIGINT sent to the npm
 * process itself stops everything — npm, shell, node — with a final "stopped" log line. The stop
 * time is compared with the start time measured in the same run, never with a fixed number.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
const spawned: ChildProcess[] = [];

beforeAll(() => {
  // Build once up front (what `npm start` does on a fresh clone), so start times measure starting.
  const r = spawnSync(process.execPath, ['scripts/build.cjs', '--if-stale'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`build failed:\n${r.stdout}${r.stderr}`);
}, 180_000);

afterAll(() => {
  for (const c of spawned) {
    // Each npm was started in its own process group; end whatever of that group is left.
    try {
      if (c.pid) process.kill(-c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A live process (zombies count as gone: they have exited and wait only to be reaped). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Every process below `root`, with its command line. */
function descendants(root: number): Array<{ pid: number; cmd: string }> {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // exited while we looked
    }
  }
  const out: Array<{ pid: number; cmd: string }> = [];
  const stack = [...(children.get(root) ?? [])];
  while (stack.length) {
    const pid = stack.pop()!;
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      // exited
    }
    out.push({ pid, cmd });
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function writeConfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-npm-start-'));
  dirs.push(dir);
  const file = join(dir, 'chorus.yaml');
  writeFileSync(
    file,
    `data_dir: ./data
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
channels:
  web: { host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst] }
`,
  );
  return file;
}

async function runAndSignal(signal: NodeJS.Signals, target: 'npm' | 'group' = 'npm') {
  const config = writeConfig();
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: { ...process.env, CHORUS_CONFIG: config, CHORUS_LOG_FORMAT: 'json', CHORUS_PORT: '', CHORUS_HOST: '', CHORUS_DATA_DIR: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  spawned.push(npm);
  let out = '';
  npm.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  npm.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => npm.on('exit', (code, sig) => r({ code, signal: sig })));
  const url = await until('the daemon URL', () => /Open (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1], 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${out}`);
  });
  await until('/healthz', async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok, 20_000);

  const tree = descendants(npm.pid!);
  const daemon = tree.find((p) => /\bnode\b.*bin\/chorus\.js start/.test(p.cmd));
  // 'group' is Ctrl-C in a terminal: npm and node both get it, and npm forwards its copy too.
  process.kill(target === 'group' ? -npm.pid! : npm.pid!, signal);
  const everyone = [npm.pid!, ...tree.map((p) => p.pid)];
  await until('every process to exit', () => everyone.every((pid) => !alive(pid)), 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; still running: ${tree.filter((p) => alive(p.pid)).map((p) => `${p.pid} ${p.cmd}`).join(' | ')}\n${out}`);
  });
  const exit = await exited;
  const healthAfter = await fetch(`${url}/healthz`).then(
    (r) => r.status,
    () => 'refused',
  );
  const logLines = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; signal?: string });
  return { tree, daemon, exit, healthAfter, logLines, config, out };
}

describe('npm start: compiled runtime and clean signals', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s to the npm process stops npm and the daemon, logging "stopped"', async (signal) => {
    const r = await runAndSignal(signal);
    // One node process runs the compiled daemon; nothing in the tree is tsx.
    expect(r.daemon, r.tree.map((p) => p.cmd).join(' | ')).toBeDefined();
    expect(r.tree.filter((p) => /tsx/.test(p.cmd))).toEqual([]);
    expect(r.tree.filter((p) => /\bnode\b/.test(p.cmd))).toHaveLength(1);
    // The last log lines: the signal was seen, writes finished, "stopped".
    const msgs = r.logLines.map((l) => l.msg);
    expect(msgs).toContain('chorus started');
    expect(r.logLines.find((l) => l.msg === 'stopping: finishing writes')?.signal).toBe(signal);
    expect(msgs.at(-1)).toBe('stopped');
    expect(r.exit.code === 0 || r.exit.signal === signal, JSON.stringify(r.exit)).toBe(true);
    expect(r.healthAfter).toBe('refused');
    // data_dir "./data" meant the config file's folder, not npm's working directory.
    expect(existsSync(join(r.config, '..', 'data'))).toBe(true);
  }, 120_000);

  it('Ctrl-C in a terminal (SIGINT to the whole process group: npm and node) stops cleanly, once', async () => {
    const r = await runAndSignal('SIGINT', 'group');
    const msgs = r.logLines.map((l) => l.msg);
    expect(msgs.filter((m) => m === 'stopping: finishing writes')).toHaveLength(1);
    expect(msgs.at(-1)).toBe('stopped');
    expect(r.out).not.toContain('second stop signal');
  }, 120_000);

  it('--version prints the package version', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = spawnSync(process.execPath, ['bin/chorus.js', '--version'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(`chorus ${pkg.version}`);
  }, 60_000);
});
