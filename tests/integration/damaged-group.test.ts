/**
 * A group whose log is empty (0 bytes) beside a valid checkpoint, as a power cut under
 * `fsync: never` or a broken file system can leave it: its history would be missing while its
 * seqs went on from the checkpoint. Chorus does not load it, leaves its files as they are, and
 * names it everywhere an operator looks: one error line, `/readyz` (still ready: the other groups
 * work), `chorus status` and `chorus doctor`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { parseConfigText, type LoadedConfig } from '../../src/config/load.js';
import type { GroupCheckpoint } from '../../src/core/records.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { runStatus } from '../../src/ops/status.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { HEAD, entry, rec } from '../store/store-contract.js';

let cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A data_dir with group `g` (three records, a checkpoint after them) whose log was then emptied. */
async function damagedDataDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-damaged-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
  await store.open();
  await store.append('g', rec(1, { head: HEAD }));
  await store.append('g', rec(2, { entries: [entry(1)] }));
  await store.append('g', rec(3, { entries: [entry(2)] }));
  const cp: GroupCheckpoint = { version: 2, n: 3, head: HEAD, nextSeq: 3, rounds: [], sessions: [], seen: [['p1', 1], ['p2', 1]], undelivered: [] };
  await store.checkpoint('g', cp);
  await store.close();
  truncateSync(join(dir, 'groups', 'g', 'log', '000000000001.jsonl'), 0);
  return dir;
}

function snapshot(dir: string): Record<string, string> {
  const root = join(dir, 'groups', 'g');
  return Object.fromEntries((readdirSync(root, { recursive: true }) as string[]).sort().map((n) => [n, statSync(join(root, n)).isFile() ? readFileSync(join(root, n), 'utf8') : 'dir']));
}

describe('a zero-length log beside a valid checkpoint', () => {
  it('is not loaded, left untouched, and named in the log, /readyz, chorus status and chorus doctor', async () => {
    const dir = await damagedDataDir();
    const before = snapshot(dir);
    const yaml = `
data_dir: ${JSON.stringify(dir)}
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: You analyse. }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
`;
    const { config } = parseConfigText(yaml, 'damaged-test');
    const logger = new CapturingLogger();
    const app = await createApp({ config, logger });
    cleanup.push(() => app.stop());
    await app.start();

    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toBe('group data is damaged; left untouched and not loaded');
    expect(JSON.stringify(errors[0]!.obj)).toContain(join('groups', 'g', 'log', '000000000001.jsonl'));
    expect((errors[0]!.obj as { problem: string }).problem).toMatch(/the log is empty \(0 bytes\), but the checkpoint .* covers records 1 to 3/);
    expect(app.gateway.listGroups().map((g) => g.id)).not.toContain('g');

    const res = await fetch(`${app.webUrl}/readyz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { store: { unreadableGroups?: Array<{ group: string; problem: string }> } };
    expect(body.store.unreadableGroups).toEqual([{ group: 'g', problem: expect.stringMatching(/000000000001\.jsonl: the log is empty \(0 bytes\)/) }]);

    const status: string[] = [];
    expect(await runStatus(config, (l) => status.push(l), { url: app.webUrl! })).toBe(0);
    expect(status.join('\n')).toMatch(/! group g is not loaded, its files are left untouched: .*the log is empty \(0 bytes\)/);

    await app.stop();
    expect(snapshot(dir)).toEqual(before);

    const loaded: LoadedConfig = { config, source: 'damaged-test.yaml', usedDefaults: false, missingEnv: [], overrides: [], envFiles: [] };
    const doctor: string[] = [];
    await runDoctor(loaded, (l) => doctor.push(l));
    expect(doctor.find((l) => l.startsWith('! data_dir: group g is damaged'))).toMatch(/its log holds no record .* covers records 1 to 3.* fix: restore groups\/g\/log from a backup/);
    expect(snapshot(dir)).toEqual(before);
  });
});
