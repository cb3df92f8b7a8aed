/**
 * Storage crash test: a child process runs a real router on FileStore and is
 * killed with SIGKILL at seeded random moments, then restarted; unacknowledged messages are sent
 * again (as a platform would redeliver them). Afterwards every file parses, every acknowledged
 * message is in its transcript once, every round is finished, no round turn was answered twice,
 * and each agent was shown each observation at most once.
 *
 * Seed: CHORUS_CRASH_SEED (default fixed) — a failure prints it so it can be replayed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkInvariants, collectAcks, prng, readDataDir } from './invariants.js';
import { CRASH_GROUPS } from './workload.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CHILD = join(ROOT, 'tests/reliability/crash-child.ts');
const SEED = Number(process.env.CHORUS_CRASH_SEED ?? 4242);
const TOTAL = 80;
const MAX_KILLS = 6;

const live = new Set<ChildProcess>();
const dirs: string[] = [];

afterAll(() => {
  for (const c of live) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Run the child; kill it with SIGKILL once `killAfterAcks` acks were seen plus `delayMs` (if given). */
function runChild(args: string[], kill: { afterAcks: number; delayMs: number } | null): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    let acks = 0;
    let armed = false;
    const arm = () => {
      if (armed || !kill) return;
      armed = true;
      setTimeout(() => child.kill('SIGKILL'), kill.delayMs);
    };
    child.stdout!.on('data', (d: Buffer) => {
      const s = d.toString();
      stdout += s;
      acks += (s.match(/^ACK /gm) ?? []).length;
      if (kill && acks >= kill.afterAcks) arm();
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    if (kill && kill.afterAcks === 0) arm();
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      live.delete(child);
      resolveRun({ stdout, stderr, code, signal });
    });
  });
}

describe('storage crash test (SIGKILL at random moments, FileStore)', () => {
  it('keeps every acknowledged message, finishes every round, answers nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-crash-'));
    dirs.push(dir);
    const rand = prng(SEED);
    const acked = new Map<string, Set<string>>(CRASH_GROUPS.map((g) => [g, new Set<string>()]));
    const isAcked = (i: number) => acked.get(CRASH_GROUPS[i % CRASH_GROUPS.length]!)!.has(`m${i}`);
    let kills = 0;
    let next = 0;
    let runs = 0;
    // Sending phase: kill after a random number of acknowledgements, at a random moment.
    while (next < TOTAL && runs < 40) {
      runs++;
      const kill = kills < MAX_KILLS ? { afterAcks: 1 + Math.floor(rand() * 24), delayMs: Math.floor(rand() * 25) } : null;
      const run = await runChild([dir, 'send', String(next), String(TOTAL)], kill);
      if (run.signal === 'SIGKILL') kills++;
      else expect(run.code, `child failed (seed ${SEED}):\n${run.stderr}`).toBe(0);
      collectAcks(run.stdout, acked);
      expect(run.stdout, `seed ${SEED}`).not.toContain('REFUSED');
      while (next < TOTAL && isAcked(next)) next++;
    }
    expect(next, `seed ${SEED}: not every message was acknowledged after ${runs} runs`).toBe(TOTAL);
    // Kill a couple of times while only resumed rounds run, then let it finish.
    for (let k = 0; k < 2; k++) {
      const run = await runChild([dir, 'idle'], { afterAcks: 0, delayMs: 20 + Math.floor(rand() * 150) });
      if (run.signal === 'SIGKILL') kills++;
    }
    const final = await runChild([dir, 'idle'], null);
    expect(final.code, final.stderr).toBe(0);
    expect(final.stdout).toContain('DONE');
    expect(kills, 'the child was never killed: the test would prove nothing').toBeGreaterThanOrEqual(3);

    const snap = await readDataDir(dir);
    expect(snap.groups.map((g) => g.id).sort()).toEqual([...CRASH_GROUPS]);
    const violations = checkInvariants(snap, { acked, finished: true });
    expect(violations, `seed ${SEED}, ${kills} kills`).toEqual([]);
    // Work really happened: agents replied in every group.
    for (const g of snap.groups) expect(g.transcript.filter((e) => e.kind === "agent").length).toBeGreaterThan(0);
  }, 90_000);
});
