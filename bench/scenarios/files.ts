/**
 * Keeping a 5 MB photo: the latency of `FileKeeper.keep` — the type from the bytes, the JPEG's
 * segments walked and its GPS taken out, the SHA-256, then the store's durable write (it checks
 * the hash again) — on the file store with `fsync: always` (temporary file, fdatasync, rename,
 * the folder synced) and on PostgreSQL (one INSERT, committed).
 *
 * The photo is a real ~5 MB JPEG (noise at quality 95, 1660×1245) with a phone's EXIF and GPS.
 * Each sample keeps different bytes (a comment segment naming the sample is added before the
 * clock starts), so every keep writes a new file rather than finding it kept.
 *
 * PostgreSQL is the bench's throwaway server (tests/helpers/postgres.ts: fsync off, so its figure
 * is the round trip, the server's work and the WAL write to the page cache, not a disk flush) or
 * the one in `BENCH_PG_URL`.
 *
 * Run alone: `npx tsx bench/scenarios/files.ts` (`BENCH_QUICK=1` for the small sizes).
 */
import { fileURLToPath } from 'node:url';
import type { Store } from '../../src/core/ports.js';
import { createHash } from 'node:crypto';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { inspectFile } from '../../src/files/inspect.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { bigPhoto, segment, withSegments } from '../../tests/files/images.js';
import { silentLogger } from '../../tests/helpers/logger.js';
import { now, percentile, round, tempDir } from '../lib.js';

export interface FileKeepResult {
  p50: number;
  p99: number;
  samples: number;
  /** The photo's size in bytes. */
  bytes: number;
  /** p50 of the part before the store: inspect (type, GPS out) and the SHA-256, timed alone. */
  intakeP50: number;
}

let photo: Buffer | null = null;

/** The same photo, made once per process (encoding it takes most of a second). */
function thePhoto(): Buffer {
  photo ??= bigPhoto(7);
  return photo;
}

/** `warmup` unmeasured keeps, then `samples` measured ones, each of bytes not kept before. */
export async function keepRun(store: Store, o: { samples: number; warmup: number }): Promise<FileKeepResult> {
  const base = thePhoto();
  const keeper = new FileKeeper(store);
  const times: number[] = [];
  const intake: number[] = [];
  const tag = `${process.pid}-${Date.now()}`;
  for (let i = 0; i < o.warmup + o.samples; i++) {
    const bytes = withSegments(base, segment(0xfe, Buffer.from(`bench ${tag} sample ${i}`)));
    const c0 = now();
    const seen = await inspectFile(bytes);
    if (seen.ok) createHash('sha256').update(seen.bytes).digest('hex');
    if (i >= o.warmup) intake.push(now() - c0);
    const t0 = now();
    const kept = await keeper.keep({ name: `IMG_${i}.JPG`, bytes });
    const ms = now() - t0;
    if (!kept.ok) throw new Error(`files bench: the photo was refused: ${kept.reason}`);
    if (i >= o.warmup) times.push(ms);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99), samples: times.length, bytes: base.length, intakeP50: percentile(intake, 50) };
}

/** One run on a fresh file store (`fsync: always`) under the bench's data root. */
export async function fileStoreKeepRun(o: { samples: number; warmup: number }): Promise<FileKeepResult> {
  const tmp = await tempDir('files');
  const store = new FileStore({ dataDir: tmp.dir, fsync: 'always', logger: silentLogger });
  try {
    await store.open();
    return await keepRun(store, o);
  } finally {
    await store.close();
    await tmp.remove();
  }
}

/** `npx tsx bench/scenarios/files.ts`: the file store and PostgreSQL, side by side. */
async function main(): Promise<void> {
  const { FULL, QUICK } = await import('../run.js');
  const { benchPostgres, pgFileKeepRun } = await import('./postgres.js');
  const p = process.env['BENCH_QUICK'] ? QUICK : FULL;
  const log = (s: string) => process.stderr.write(s + '\n');
  log(`keeping a 5 MB photo (${p.name}: ${p.runs} runs of ${p.files.samples} keeps after ${p.files.warmup} unmeasured)`);
  const files: FileKeepResult[] = [];
  for (let i = 0; i < p.runs; i++) files.push(await fileStoreKeepRun(p.files));
  const server = await benchPostgres();
  const pg: FileKeepResult[] = [];
  try {
    if (server) for (let i = 0; i < p.runs; i++) pg.push(await pgFileKeepRun(server.url, p.files));
  } finally {
    await server?.stop();
  }
  const med = (xs: number[]) => (xs.length ? String(round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!, 2)) : 'skipped');
  console.log(`\nphoto: ${thePhoto().length} bytes\n\n| figure (median of runs) | files (fsync always) | postgres |\n|---|---|---|`);
  console.log(`| file_keep_5mb_p50_ms | ${med(files.map((r) => r.p50))} | ${med(pg.map((r) => r.p50))} |`);
  console.log(`| file_keep_5mb_p99_ms | ${med(files.map((r) => r.p99))} | ${med(pg.map((r) => r.p99))} |`);
  console.log(`intake alone (inspect + SHA-256), p50: ${files.map((r) => round(r.intakeP50, 1)).join(' / ')} ms`);
  console.log(`runs: files p50 ${files.map((r) => round(r.p50, 1)).join(' / ')} ms, p99 ${files.map((r) => round(r.p99, 1)).join(' / ')} ms; postgres p50 ${pg.map((r) => round(r.p50, 1)).join(' / ')} ms, p99 ${pg.map((r) => round(r.p99, 1)).join(' / ')} ms`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
