/**
 * Running the real daemon (`src/main.ts start`) as a child process for the end-to-end crash
 * tests: spawn with a config file, read the URL it prints, talk HTTP, kill it. Every child is
 * tracked so `killAll()` in `afterAll` never leaves one behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { onTestFailed } from 'vitest';

export const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'src/main.ts');
const live = new Set<ChildProcess>();

export interface Daemon {
  child: ChildProcess;
  url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Node options for every daemon the tests and benches start, from `CHORUS_DAEMON_NODE_ARGS`
 * (`--cpu-prof --cpu-prof-dir=…` to profile them: NODE_OPTIONS does not accept --cpu-prof).
 */
export function daemonNodeArgs(): string[] {
  return (process.env.CHORUS_DAEMON_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
}

/**
 * Start the daemon and wait for its URL. How long a start takes depends on the machine (about a
 * second and a half here, ten times that on a busy one), so by default there is no deadline of its
 * own: the test's time limit bounds a start that hangs, and its output is printed if the test
 * fails. `timeoutMs` sets one anyway.
 */
export async function startDaemon(configPath: string, env: Record<string, string> = {}, timeoutMs?: number): Promise<Daemon> {
  const child = spawn(process.execPath, [...daemonNodeArgs(), '--import', 'tsx', MAIN, 'start', '--config', configPath], {
    cwd: ROOT,
    env: { ...process.env, CHORUS_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    onTestFailed(() => console.log(`[daemon ${child.pid}] output:\n${out.slice(-8000)}`));
  } catch {
    // Not inside a test (a hook): nothing to attach the output to.
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('exit', (code, signal) => {
      live.delete(child);
      r({ code, signal });
    }),
  );
  const url = await new Promise<string>((resolveUrl, reject) => {
    const deadline =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill('SIGKILL');
            reject(new Error(`daemon did not print its URL within ${timeoutMs} ms:\n${out}`));
          }, timeoutMs);
    const probe = () => {
      const m = /Open (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) {
        clearTimeout(deadline);
        child.stdout!.off('data', probe);
        resolveUrl(m[1]!);
      }
    };
    child.stdout!.on('data', probe);
    void exited.then(() => {
      clearTimeout(deadline);
      reject(new Error(`daemon exited before it was ready:\n${out}`));
    });
  });
  return { child, url, output: () => out, exited, kill: (s = 'SIGKILL') => void child.kill(s) };
}

export function killAll(): void {
  for (const c of live) c.kill('SIGKILL');
}

/** Poll `/metrics` until no round is queued or running and no LLM call is in flight. */
export async function waitIdle(url: string, headers: Record<string, string>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (quiet < 3) {
    if (Date.now() > deadline) throw new Error('daemon did not become idle');
    const text = await (await fetch(`${url}/metrics`, { headers })).text();
    const depth = Number(/^chorus_queue_depth (\d+)/m.exec(text)?.[1] ?? NaN);
    const inFlight = Number(/^chorus_llm_in_flight (\d+)/m.exec(text)?.[1] ?? NaN);
    quiet = depth === 0 && inFlight === 0 ? quiet + 1 : 0;
    await new Promise((r) => setTimeout(r, 50));
  }
}
