/**
 * Cutting the torn tail of a group's newest log segment when it is opened: whatever follows the
 * last complete, parseable line cannot be replayed. The cut bytes are kept beside the segment
 * (`<segment>.torn-<time>`) and the log line says what is known about them, no more: after a
 * failed write in this process the store knows where its last acknowledged write ended, after a
 * crash it does not.
 */
import { readFile, truncate, writeFile } from 'node:fs/promises';
import type { Logger } from '../../core/ports.js';

/**
 * Cut the torn tail of `path`; returns its length afterwards. `ackedSize` is where the last
 * acknowledged write to this file ended, when the store knows it (a reopen in the same process).
 */
export async function cutTornTail(path: string, logger: Logger, ackedSize?: number): Promise<number> {
  const buf = await readFile(path);
  let end = buf.length;
  // An unterminated last line was being written when the process died (or, with an older
  // Chorus, it is NUL padding left by a truncate past the end of the file after a full disk).
  if (end > 0 && buf[end - 1] !== 0x0a) end = buf.lastIndexOf(0x0a, end - 1) + 1;
  // Complete last lines that do not parse (garbage left by a power cut, a line holding NUL bytes)
  // cannot be replayed.
  while (end > 0) {
    // (A negative offset would search from the end of the buffer.)
    const start = end >= 2 ? buf.lastIndexOf(0x0a, end - 2) + 1 : 0;
    if (parses(buf.subarray(start, end - 1))) break;
    end = start;
  }
  if (end === buf.length) return end;
  const tail = buf.subarray(end);
  const aside = `${path}.torn-${Date.now()}`;
  await writeFile(aside, tail);
  await truncate(path, end);
  let nul = 0;
  for (const b of tail) if (b === 0) nul++;
  const fields = { path, from: end, bytes: tail.length, keptIn: aside, ...(nul ? { nulBytes: nul } : {}) };
  const padded = nul ? '; it holds NUL bytes (the file was made longer than what was written to it)' : '';
  if (ackedSize === undefined) logger.warn(fields, `cut a torn last line of a log (its write never completed)${padded}`);
  else if (end >= ackedSize) logger.warn(fields, `cut a torn last line of a log (never acknowledged: it lies past the last acknowledged write)${padded}`);
  else logger.error({ ...fields, ackedSize }, `cut a damaged end of a log that reaches back into acknowledged writes${padded}`);
  return end;
}

function parses(line: Buffer): boolean {
  // JSON.parse would refuse a NUL anyway; saying so keeps the rule plain.
  if (line.includes(0)) return false;
  try {
    JSON.parse(line.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}
