import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // Files whose one timing bound is what they test run afterwards on their own, on an otherwise
    // idle machine (vitest.timing.config.ts): beside other test files a browser's main thread waits
    // for a core, and that wait would count as the page's own work.
    exclude: ['**/node_modules/**', 'tests/**/*.timing.test.ts'],
    // The web page's bundle, built once for all files (the servers under test serve it).
    globalSetup: ['tests/helpers/page-bundle.setup.ts'],
    // Fake servers bind real sockets; keep files isolated but bounded to the 2-core CI box.
    pool: 'forks',
    maxWorkers: 2,
    // Every group's one writer is checked (src/core/groups/GroupMailbox.ts): off in production for speed.
    env: { CHORUS_CHECK_WRITERS: '1' },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
