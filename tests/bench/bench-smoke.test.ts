/**
 * The benchmark scenarios in a tiny configuration: every figure of bench/results.json is produced
 * and is a finite number. No timing is asserted here; timing belongs in `npm run bench`.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBench, TARGETS, TINY } from '../../bench/run.js';
import { HAVE_CHROMIUM } from '../../bench/scenarios/page.js';

describe('bench smoke', () => {
  // The daemon scenario runs the built daemon: build it once here, so the test's own time is the
  // scenarios' (a cold build under load is most of a minute by itself).
  beforeAll(() => {
    const r = spawnSync(process.execPath, ['scripts/build.cjs', '--if-stale'], { cwd: resolve(import.meta.dirname, '../..'), encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`build failed:\n${r.stdout}${r.stderr}`);
  }, 180_000);

  it('produces every figure as a finite number', async () => {
    const r = await runBench(TINY);
    // The Postgres figures are absent only where no PostgreSQL server can run (never in CI).
    const pgSkipped = r.details['postgres'] === 'skipped: no PostgreSQL' && process.env.CHORUS_REQUIRE_POSTGRES !== '1';
    // The cluster figures (real daemons, SIGKILL) are left out of the tiny profile.
    const clusterSkipped = typeof r.details['cluster'] === 'string';
    expect(Object.keys(r.figures).sort()).toEqual(Object.keys(TARGETS).filter((k) => !(pgSkipped && k.endsWith('_postgres')) && !(clusterSkipped && k.startsWith('cluster_')) && !(!HAVE_CHROMIUM && k.startsWith('page_'))).sort());
    for (const [key, f] of Object.entries(r.figures)) {
      for (const v of [f.median, f.min, f.max]) expect(Number.isFinite(v), `${key} = ${v}`).toBe(true);
    }
    expect(r.machine['cores']).toBeGreaterThan(0);
    expect(Array.isArray(r.details['soak'])).toBe(true);
  }, 120_000);
});
