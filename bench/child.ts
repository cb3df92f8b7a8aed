/**
 * Entry point of the forked benchmark processes (`node --import tsx --expose-gc bench/child.ts`).
 * Receives one task as JSON in argv[2], sends the result back over IPC and exits.
 */
import { rssMeasure, throughputRun } from './scenarios/memory.js';

type Task = { kind: 'rss'; dir: string } | { kind: 'throughput'; groups: number; messages: number };

const task = JSON.parse(process.argv[2] ?? '{}') as Task;
try {
  const result = task.kind === 'rss' ? await rssMeasure({ dir: task.dir }) : await throughputRun(task);
  process.send!({ ok: true, result }, () => process.exit(0));
} catch (err) {
  process.send!({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }, () => process.exit(1));
}
