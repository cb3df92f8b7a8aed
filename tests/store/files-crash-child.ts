/**
 * Child process of the files crash test (files-crash.test.ts): keeps ~5 MB photos through the
 * real FileKeeper, one after another, on the file store (`fsync: always`) or PostgreSQL, and
 * prints `KEPT <id> <size>` the moment each `keep` resolved. The parent kills it with SIGKILL on
 * the first such line, while the next photo is being written.
 *
 * Usage: node --import tsx tests/store/files-crash-child.ts files <dataDir> | postgres <url>
 */
import type { Store } from '../../src/core/ports.js';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { silentLogger } from '../helpers/logger.js';
import { bigPhoto } from '../files/images.js';

const [kind, where, seedArg] = process.argv.slice(2);
if ((kind !== 'files' && kind !== 'postgres') || !where) {
  process.stderr.write('usage: files-crash-child.ts files <dataDir> | postgres <url> [seed]\n');
  process.exit(2);
}

async function main(): Promise<void> {
  const store: Store = kind === 'files' ? new FileStore({ dataDir: where!, fsync: 'always', logger: silentLogger }) : new PostgresStore({ url: where!, logger: silentLogger });
  await store.open();
  const keeper = new FileKeeper(store);
  const seed = Number(seedArg ?? 1);
  // Made before the first keep, so the kill falls while the second one is being written.
  const photos = [bigPhoto(seed), bigPhoto(seed + 1000)];
  process.stdout.write('READY\n');
  for (const [i, bytes] of photos.entries()) {
    const kept = await keeper.keep({ name: `IMG_${i}.JPG`, bytes });
    if (!kept.ok) throw new Error(kept.reason);
    // A pipe write is synchronous on Linux: the line is out before the next keep starts.
    process.stdout.write(`KEPT ${kept.attachment.id} ${kept.attachment.size}\n`);
  }
  // Not killed yet: wait for it.
  setInterval(() => undefined, 1000);
}

main().catch((err: unknown) => {
  process.stderr.write(`files-crash-child failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
