/**
 * Tool results count against the context window: when a turn's steps do not fit what the fitted
 * prompt left, the longest results are cut, each with a marker saying so, and the rest is kept.
 */
import { describe, expect, it } from 'vitest';
import { fitSteps } from '../../src/core/router/toolTurn.js';
import type { ToolStep } from '../../src/core/toolTypes.js';

const tokens = (text: string) => Math.ceil(text.length / 4);
const step = (results: string[]): ToolStep => ({
  text: '',
  calls: results.map((_, i) => ({ id: `c${i}`, name: 'orders__lookup', input: { id: i } })),
  results: results.map((content, i) => ({ callId: `c${i}`, content, isError: false })),
});
const size = (steps: ToolStep[]) => steps.reduce((n, s) => n + s.results.reduce((m, r) => m + tokens(r.content), 0) + s.calls.reduce((m, c) => m + tokens(JSON.stringify(c.input)), 0), 0);

describe('tool results against the context window', () => {
  it('leaves steps that fit alone', () => {
    const steps = [step(['short answer', 'x'.repeat(4000)])];
    expect(fitSteps(steps, 5000, tokens)).toBe(steps);
  });

  it('cuts the longest result first, with a marker, until the steps fit', () => {
    const small = 'order 7 shipped';
    const steps = [step([small]), step(['y'.repeat(40_000)])];
    const fitted = fitSteps(steps, 2000, tokens);
    expect(size(fitted)).toBeLessThanOrEqual(2000);
    expect(fitted[0]!.results[0]!.content).toBe(small);
    const cut = fitted[1]!.results[0]!.content;
    // One marker, naming the whole result's size, however many times it was shrunk.
    expect(cut).toMatch(/^y+\n… \[cut to fit the context window: 40,000 bytes, showing the first [\d,]+\]$/);
    // The caller's steps (the recorded results) are not changed.
    expect(steps[1]!.results[0]!.content).toHaveLength(40_000);
  });

  it('stops at a floor rather than cutting every result to nothing', () => {
    const steps = [step(['z'.repeat(3000), 'w'.repeat(3000)])];
    const fitted = fitSteps(steps, 10, tokens);
    for (const r of fitted[0]!.results) expect(r.content.length).toBeGreaterThan(256);
  });
});
