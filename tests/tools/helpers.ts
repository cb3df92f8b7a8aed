/**
 * What the tool-host tests share: the fake MCP server as a configured stdio server, a temporary
 * state file, and polling with generous limits (the machines are shared: nothing here asserts how
 * long something took, only that it happens).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ToolServerConfig } from '../../src/tools/types.js';
import { readFakeState, type FakeState } from '../fakes/mcp/tools.js';

export const FAKE_SERVER = resolve('tests/fakes/mcp/server.ts');

/** The fake over stdio, as `tools.<name>` would configure it. */
export function stdioServer(stateFile: string, opts: { pageSize?: number; env?: Record<string, string>; confirm?: ToolServerConfig['confirm'] } = {}): ToolServerConfig {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', FAKE_SERVER, '--stdio', '--state', stateFile, ...(opts.pageSize ? ['--page-size', String(opts.pageSize)] : [])],
    env: opts.env ?? {},
    cwd: process.cwd(),
    confirm: opts.confirm ?? 'auto',
    approvers: 'admins',
  };
}

export function tempDir(cleanup: Array<() => unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-mcp-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function state(file: string): FakeState {
  return readFakeState(file);
}

/** Poll `probe` until it returns a truthy value; fail with `what` after `timeoutMs`. */
export async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Is a process with this pid alive? */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const never = new AbortController().signal;
