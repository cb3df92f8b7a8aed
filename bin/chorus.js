#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so `npx chorus` works without a build step.
import { register } from 'tsx/esm/api';

// Log syncs run in libuv's pool; more threads let the syncs of many groups share a disk flush.
process.env.UV_THREADPOOL_SIZE ??= '16';
register();
await import('../src/main.ts');
