import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // The web page's bundle, built once for all files (the servers under test serve it).
    globalSetup: ['tests/helpers/page-bundle.setup.ts'],
    // Fake servers bind real sockets; keep files isolated but bounded to the 2-core CI box.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
