/**
 * Dead letters of the file store: one JSON-lines file per channel part under
 * `data_dir/dead-letters/` (`telegram-analyst.jsonl`: the updates the analyst's bot received that
 * could never be handed over). Appended, never rewritten; one line per item, with the time, the
 * reason and the item as it arrived, so an operator can read it with any JSON tool.
 */
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { DeadLetter, DeadLetters } from '../../core/ports.js';

/** Channel kinds and agent ids are slugs; anything else never becomes part of a path. */
const SAFE_NAME = /^[a-z0-9][a-z0-9_-]{0,79}$/;

export class FileDeadLetters implements DeadLetters {
  /** Appends one after another, so lines of one file never interleave. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: { dataDir: string; fsync: 'always' | 'never' }) {}

  /** The file a channel part's dead letters go to. */
  pathOf(channel: string, part: string): string {
    const name = `${channel}-${part}`;
    if (!SAFE_NAME.test(name)) throw new Error(`dead letters of "${name}" cannot be kept in a file: not a safe file name`);
    return join(this.o.dataDir, 'dead-letters', `${name}.jsonl`);
  }

  keep(letter: DeadLetter): Promise<string> {
    const done = this.last.then(() => this.append(letter));
    this.last = done.catch(() => undefined);
    return done;
  }

  private async append(letter: DeadLetter): Promise<string> {
    const path = this.pathOf(letter.channel, letter.part);
    await mkdir(join(this.o.dataDir, 'dead-letters'), { recursive: true });
    const line = `${JSON.stringify({ at: new Date().toISOString(), channel: letter.channel, part: letter.part, id: letter.id, reason: letter.reason, raw: letter.raw })}\n`;
    const fh = await open(path, 'a');
    try {
      await fh.write(line);
      // Only once it is on disk may the platform be told it was taken (it will not send it again).
      if (this.o.fsync === 'always') await fh.datasync();
    } finally {
      await fh.close();
    }
    return path;
  }
}
