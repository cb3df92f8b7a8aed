import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
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
