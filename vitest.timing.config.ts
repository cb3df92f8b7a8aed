import { defineConfig } from 'vitest/config';

/**
 * The second pass of `npm test`: the few tests that assert a time (the page's longest main-thread
 * task while a reply streams), one file at a time, after every other test has finished.
 */
export default defineConfig({
  test: {
    include: ['tests/**/*.timing.test.ts'],
    globalSetup: ['tests/helpers/page-bundle.setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    // Every group's one writer is checked (src/core/groups/GroupMailbox.ts): off in production for speed.
    env: { CHORUS_CHECK_WRITERS: '1' },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
