/**
 * What every Store promises of shared files, run against each implementation
 * (files-filestore.test.ts, files-postgres.test.ts, files-memory.test.ts): kept bytes read back
 * whole with their meta, also after a restart; the same bytes kept twice are one file under the
 * first name; an unknown or malformed id is none; damaged bytes are never served; a store that
 * cannot write refuses with StoreUnavailableError and keeps nothing.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Logger, Store } from '../../src/core/ports.js';
import type { Attachment } from '../../src/core/fileTypes.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { CapturingLogger } from '../helpers/logger.js';

export interface FilesPlace {
  /** A store on this place (one per "start"); open it before use. */
  make(logger?: Logger): Store;
  /** How many files the place holds (rows, files on disk). */
  count(): Promise<number>;
  /** Change the kept bytes of `id` where they are kept, as a damaged disk would. Absent in memory. */
  damage?(id: string): Promise<void>;
  /** Make writes of `store` fail as on a full or read-only disk; resolves with the way back. */
  breakWrites(store: Store): Promise<() => Promise<void>>;
}

export interface FilesFactory {
  fresh(): Promise<FilesPlace>;
}

/** `n` bytes that differ from run to run of `seed`, the same for one seed. */
export function someBytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export function metaOf(bytes: Uint8Array, name = 'chart.png', extra: Partial<Attachment> = {}): Attachment {
  const sha = createHash('sha256').update(bytes).digest('hex');
  return { id: sha, name, type: 'image/png', size: bytes.byteLength, sha256: sha, width: 640, height: 480, ...extra };
}

export function filesContract(name: string, factory: FilesFactory): void {
  describe(`${name}: the Store contract for files`, () => {
    it('reads kept bytes back whole with their meta, also after a restart', async () => {
      const place = await factory.fresh();
      const store = place.make();
      await store.open();
      const big = someBytes(5 * 1024 * 1024 + 3, 7);
      const small = someBytes(10, 8);
      const text = new TextEncoder().encode('plain text, not an image\n');
      const metas = [metaOf(big, 'photo.jpg', { type: 'image/jpeg', width: 4000, height: 3000 }), metaOf(small, 'tiny.gif', { type: 'image/gif' }), metaOf(text, 'notes.txt', { type: 'text/plain', width: undefined, height: undefined })];
      await Promise.all([store.putFile(metas[0]!, big), store.putFile(metas[1]!, small), store.putFile(metas[2]!, text)]);
      const check = async (s: Store) => {
        const got = await s.readFile(metas[0]!.id);
        expect(got?.meta).toEqual(metas[0]);
        expect(Buffer.from(got!.bytes).equals(Buffer.from(big))).toBe(true);
        expect(Buffer.from((await s.readFile(metas[1]!.id))!.bytes)).toEqual(Buffer.from(small));
        const t = await s.readFile(metas[2]!.id);
        expect(t?.meta).toEqual({ id: metas[2]!.id, name: 'notes.txt', type: 'text/plain', size: text.byteLength, sha256: metas[2]!.id });
        expect(new TextDecoder().decode(t!.bytes)).toBe('plain text, not an image\n');
      };
      await check(store);
      await store.close();
      const again = place.make();
      await again.open();
      await check(again);
      expect(await place.count()).toBe(3);
      await again.close();
    });

    it('keeps the same bytes once: the first name stays, also when both arrive at once', async () => {
      const place = await factory.fresh();
      const store = place.make();
      await store.open();
      const bytes = someBytes(300_000, 3);
      await store.putFile(metaOf(bytes, 'first.png'), bytes);
      await store.putFile(metaOf(bytes, 'second.png'), bytes);
      expect((await store.readFile(metaOf(bytes).id))?.meta.name).toBe('first.png');
      const other = someBytes(200_000, 4);
      await Promise.all([store.putFile(metaOf(other, 'a.png'), other), store.putFile(metaOf(other, 'b.png'), other), store.putFile(metaOf(other, 'c.png'), other)]);
      const name = (await store.readFile(metaOf(other).id))?.meta.name;
      expect(['a.png', 'b.png', 'c.png']).toContain(name);
      expect(await place.count()).toBe(2);
      await store.close();
      const again = place.make();
      await again.open();
      expect((await again.readFile(metaOf(bytes).id))?.meta.name).toBe('first.png');
      expect((await again.readFile(metaOf(other).id))?.meta.name).toBe(name);
      await again.close();
    });

    it('an unknown or malformed id is none', async () => {
      const place = await factory.fresh();
      const store = place.make();
      await store.open();
      const bytes = someBytes(100, 5);
      await store.putFile(metaOf(bytes), bytes);
      expect(await store.readFile('0'.repeat(64))).toBeNull();
      for (const id of ['', 'abc', '../../chorus-data.json', metaOf(bytes).id.toUpperCase(), `${metaOf(bytes).id}/..`, `${metaOf(bytes).id.slice(0, 62)}/x`]) {
        expect(await store.readFile(id), id).toBeNull();
      }
      await store.close();
    });

    it('refuses to keep bytes under an id that is not their SHA-256 (a caller mistake, not an outage)', async () => {
      const place = await factory.fresh();
      const store = place.make();
      await store.open();
      const bytes = someBytes(1000, 6);
      const wrong = { ...metaOf(someBytes(1000, 66)) };
      const err = await store.putFile(wrong, bytes).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(StoreUnavailableError);
      expect(await store.readFile(wrong.id)).toBeNull();
      await expect(store.putFile({ ...metaOf(bytes), size: 999 }, bytes)).rejects.toThrow(/size/);
      await expect(store.putFile({ ...metaOf(bytes), id: '../x' }, bytes)).rejects.toThrow(/SHA-256/);
      expect(await place.count()).toBe(0);
      await store.close();
    });

    it('a store that cannot write refuses with StoreUnavailableError, keeps nothing, and keeps again once it can', async () => {
      const place = await factory.fresh();
      const store = place.make();
      await store.open();
      const bytes = someBytes(2 * 1024 * 1024, 9);
      const restore = await place.breakWrites(store);
      await expect(store.putFile(metaOf(bytes), bytes)).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await store.readFile(metaOf(bytes).id)).toBeNull();
      await restore();
      expect(await place.count()).toBe(0);
      const fresh = place.make();
      await fresh.open();
      expect(await fresh.readFile(metaOf(bytes).id)).toBeNull();
      await fresh.putFile(metaOf(bytes, 'later.png'), bytes);
      expect((await fresh.readFile(metaOf(bytes).id))?.meta.name).toBe('later.png');
      await fresh.close();
      await store.close();
    });

    it('damaged bytes are never served: none, with an error line; keeping the same bytes again mends it (under its first name)', async (ctx) => {
      const place = await factory.fresh();
      if (!place.damage) return ctx.skip();
      const logger = new CapturingLogger();
      const store = place.make(logger);
      await store.open();
      const bytes = someBytes(50_000, 10);
      const meta = metaOf(bytes, 'kept-first.png');
      await store.putFile(meta, bytes);
      await place.damage(meta.id);
      expect(await store.readFile(meta.id)).toBeNull();
      expect(logger.text()).toMatch(new RegExp(`error .*damaged.*${meta.id}`));
      await store.close();
      const again = place.make(logger);
      await again.open();
      expect(await again.readFile(meta.id)).toBeNull();
      await again.putFile(metaOf(bytes, 'sent-again.png'), bytes);
      const mended = await again.readFile(meta.id);
      expect(Buffer.from(mended!.bytes).equals(Buffer.from(bytes))).toBe(true);
      expect(mended!.meta.name).toBe('kept-first.png');
      await again.close();
    });
  });
}
