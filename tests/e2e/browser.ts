/**
 * What every browser test shares: where Chromium is, whether the suite runs (CI sets
 * CHORUS_REQUIRE_BROWSER=1, where a missing browser is a failure, not a skip), its launch flags,
 * where screenshots go and how long polls wait.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { describe } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAVE_BROWSER = existsSync(CHROMIUM);
export const REQUIRE_BROWSER = process.env.CHORUS_REQUIRE_BROWSER === '1';
export const SHOTS = join(process.cwd(), 'test-output', 'screenshots');
export const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const POLL = { timeout: 15_000, interval: 50 };

/** `describe`, or `describe.skip` with a line saying why when there is no browser (and none is required). */
export function browserSuite(name: string): typeof describe | typeof describe.skip {
  if (HAVE_BROWSER || REQUIRE_BROWSER) return describe;
  console.warn(`[${name} e2e] skipped: no Chromium at ${CHROMIUM} (install the "chromium" package or set CHROMIUM_PATH; CI sets CHORUS_REQUIRE_BROWSER=1)`);
  return describe.skip;
}

/**
 * Pages of `context` start with a name already chosen, as a returning reader's do: the page asks
 * a newcomer for a name before the first message, which tests about other things skip this way.
 */
export async function withName(context: BrowserContext, name = 'Tester'): Promise<BrowserContext> {
  await context.addInitScript((n: string) => {
    if (!localStorage.getItem('chorus.name')) localStorage.setItem('chorus.name', n);
  }, name);
  return context;
}
