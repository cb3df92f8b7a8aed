/**
 * What only the file store's layout defines: the format file that says which layout a data
 * directory has (`chorus-data.json`), and how log segments are named. The records and checkpoints
 * inside the files follow the log schema both stores share (../logSchema.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreFormatError } from '../../core/errors.js';
import { replaceFile, type WriteFn } from './writeFully.js';

/** The data directory format this version reads and writes. */
export const DATA_FORMAT = 2;

/** A log segment's file name: the first entry seq it may hold, 12 digits, `.jsonl`. */
export const SEGMENT_FILE = /^\d{12}\.jsonl$/;

export function segmentName(startSeq: number): string {
  return `${String(startSeq).padStart(12, '0')}.jsonl`;
}

/**
 * Stamp a new data directory with the format, or check an existing one's: a directory of a newer
 * Chorus is refused rather than misread or written over.
 */
export async function checkFormat(dataDir: string, write: WriteFn): Promise<void> {
  const path = join(dataDir, 'chorus-data.json');
  let text: string | null = null;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text === null) {
    await replaceFile(path, `${JSON.stringify({ format: DATA_FORMAT })}\n`, write);
    return;
  }
  let format: unknown;
  try {
    format = (JSON.parse(text) as { format?: unknown }).format;
  } catch {
    throw new StoreFormatError(`${path} is damaged (not JSON); fix or remove it (it only holds {"format": ${DATA_FORMAT}})`);
  }
  if (typeof format !== 'number') throw new StoreFormatError(`${path} has no format number; fix or remove it (it only holds {"format": ${DATA_FORMAT}})`);
  if (format > DATA_FORMAT) throw new StoreFormatError(`data_dir ${dataDir} was written by a newer Chorus (format ${format}); this version reads format ${DATA_FORMAT}. Upgrade Chorus or point data_dir elsewhere.`);
}
