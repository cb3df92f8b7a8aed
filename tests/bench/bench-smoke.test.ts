/**
 * The benchmark scenarios in a tiny configuration: every figure of bench/results.json is produced
 * and is a finite number. No timing is asserted here; timing belongs in `npm run bench`.
 */
import { describe, expect, it } from 'vitest';
import { runBench, TARGETS, TINY } from '../../bench/run.js';

describe('bench smoke', () => {
  it('produces every figure as a finite number', async () => {
    const r = await runBench(TINY);
    expect(Object.keys(r.figures).sort()).toEqual(Object.keys(TARGETS).sort());
    for (const [key, f] of Object.entries(r.figures)) {
      for (const v of [f.median, f.min, f.max]) expect(Number.isFinite(v), `${key} = ${v}`).toBe(true);
    }
    expect(r.machine['cores']).toBeGreaterThan(0);
    expect(Array.isArray(r.details['soak'])).toBe(true);
  }, 120_000);
});
