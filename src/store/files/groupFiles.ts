/**
 * Reading a group's checkpoint at open, and checking it against the group's log. A damaged
 * checkpoint is only a lost shortcut (it is moved aside and the whole log replayed); a log that
 * holds less than its checkpoint covers has lost records, and the group is not loaded.
 */
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../core/ports.js';
import type { GroupCheckpoint } from '../../core/records.js';
import { StoreFormatError } from '../../core/errors.js';
import { parseCheckpoint } from '../logSchema.js';
import type { GroupLog } from './GroupLog.js';

/** A group whose files contradict each other: it is not loaded, and never written. */
export class DamagedGroupError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

/** The checkpoint at `path`; null when there is none or it is damaged (then it is moved aside). */
export async function readCheckpoint(path: string, logger: Logger): Promise<GroupCheckpoint | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let problem: string;
  try {
    const res = parseCheckpoint(JSON.parse(text), path);
    if ('checkpoint' in res) return res.checkpoint;
    problem = res.problem;
  } catch (err) {
    if (err instanceof StoreFormatError) throw err;
    problem = 'not valid JSON';
  }
  const aside = `${path}.corrupt-${Date.now()}`;
  await rename(path, aside);
  logger.error({ path, problem, movedTo: aside }, 'checkpoint is damaged; moved aside, replaying the whole log');
  return null;
}

/**
 * Throws DamagedGroupError when the log ends before record `n` of its checkpoint. A checkpoint is
 * written only after the records it covers are durable, so such a log (empty, missing, cut short)
 * has lost acknowledged records. Loading the group anyway would hide that: its history would
 * start late, or be empty, while its seqs went on from the checkpoint.
 */
export async function checkLogReaches(log: GroupLog, n: number): Promise<void> {
  const last = await log.lastN();
  if (last >= n) return;
  const cp = join(log.dir, 'state.json');
  // (The store refuses every write to a group it could not load.)
  if (log.segments.length === 0) throw new DamagedGroupError(log.logDir, `the log is missing, but the checkpoint ${cp} covers records 1 to ${n}`);
  if (log.segments.length === 1 && log.size === 0) throw new DamagedGroupError(log.activePath!, `the log is empty (0 bytes), but the checkpoint ${cp} covers records 1 to ${n}`);
  if (last === 0) throw new DamagedGroupError(log.activePath!, `the log holds no record, but the checkpoint ${cp} covers records 1 to ${n}`);
  throw new DamagedGroupError(log.activePath!, `the log ends at record ${last}, but the checkpoint ${cp} covers records up to ${n}`);
}
