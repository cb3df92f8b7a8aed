/**
 * Entry point of the forked benchmark processes (`node --import tsx --expose-gc bench/child.ts`).
 * Receives one task as JSON in argv[2], sends the result back over IPC and exits.
 */
import type { Fsync } from './lib.js';
import { rssMeasure, soakRun, throughputRun } from './scenarios/memory.js';

export type ChildTask =
  | { kind: 'rss'; dir: string }
  | { kind: 'throughput'; groups: number; messages: number; inFlight: number; fsync: Fsync }
  | { kind: 'soak'; groups: number; points: number[]; fsync: Fsync };

const task = JSON.parse(process.argv[2] ?? '{}') as ChildTask;
try {
  const result = task.kind === 'rss' ? await rssMeasure({ dir: task.dir }) : task.kind === 'throughput' ? await throughputRun(task) : await soakRun(task);
  process.send!({ ok: true, result }, () => process.exit(0));
} catch (err) {
  process.send!({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }, () => process.exit(1));
}
