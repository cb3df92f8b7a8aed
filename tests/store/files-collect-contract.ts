/**
 * What the stores that collect files promise (files-filestore.test.ts, files-postgres.test.ts),
 * through the Store API alone — records carrying files, deletions, restarts: a file goes once the
 * deletion of the last message carrying it is durable, and not before; the same bytes carried by
 * another message stay; a keep of the same bytes on its way holds them; a removal cut short (the
 * store failed, or the process died, between the deletion and the removal) is done at the next
 * start, which reads the whole log again; a file a tool returned stays; and while part of the log
 * cannot be read, nothing is collected at all.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports.js';
import type { Attachment } from '../../src/core/fileTypes.js';
import type { GroupRecord } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { HEAD, rec } from './store-contract.js';
import { metaOf, someBytes } from './files-contract.js';

export interface CollectPlace {
  /** A store on this place (one per "start"). */
  make(): Store;
  /** Whether the file's bytes are still where the store keeps them. */
  has(id: string): Promise<boolean>;
  /** Damage the record of group `g` whose entry says "words only", as a bad disk would. */
  damageLog(g: string): Promise<void>;
}

/** The next removal of a file fails, as when the process dies between a deletion and its removal. */
function failNextRemoval(store: Store): void {
  const backend = (store as unknown as { backend: { deleteFile(id: string): Promise<void> } }).backend;
  const real = backend.deleteFile.bind(backend);
  backend.deleteFile = async () => {
    backend.deleteFile = real;
    throw new Error('the process died before the removal');
  };
}

export interface CollectFactory {
  fresh(): Promise<CollectPlace>;
}

function withFile(seq: number, files: Attachment[], text = `message ${seq}`): TranscriptEntry {
  const who = { authorId: 'web:maya', authorName: 'Maya' };
  return { id: `g.${seq}`, seq, kind: 'human', ts: 1000 + seq, ...who, text, attachments: files };
}

function deletion(n: number, seq: number): GroupRecord {
  return rec(n, { edits: [{ seq, deleted: true, at: 5000 + n }] });
}

async function opened(place: CollectPlace): Promise<Store> {
  const store = place.make();
  await store.open();
  // Let the start's reading of the whole log finish (flush waits for it and its collections).
  await store.flush();
  return store;
}

export function collectContract(name: string, factory: CollectFactory): void {
  describe(`${name}: files no message carries are collected`, () => {
    it('a file goes once the deletion of its last message is durable; bytes another message carries stay', async () => {
      const place = await factory.fresh();
      const store = await opened(place);
      const shared = someBytes(2048, 11);
      const alone = someBytes(1024, 12);
      const a = metaOf(shared, 'a.png');
      const b = metaOf(shared, 'b.png');
      const c = metaOf(alone, 'c.png');
      for (const [m, bytes] of [[a, shared], [b, shared], [c, alone]] as const) await store.putFile(m, bytes);
      await store.append('g', rec(1, { head: HEAD, entries: [withFile(1, [a, c])] }));
      await store.append('g', rec(2, { entries: [withFile(2, [b])] }));
      await store.append('g', deletion(3, 1));
      await store.flush();
      expect(await place.has(c.id)).toBe(false);
      expect(await store.readFile(c.id)).toBeNull();
      // Message 2 still carries the shared bytes.
      expect(await place.has(a.id)).toBe(true);
      expect(store.fileReferenced?.(a.id)).toBe(true);
      expect(store.fileReferenced?.(c.id)).toBe(false);
      await store.append('g', deletion(4, 2));
      await store.flush();
      expect(await place.has(a.id)).toBe(false);
      await store.close();
    });

    it('a keep of the same bytes on its way holds them: deleting the other message leaves the file', async () => {
      const place = await factory.fresh();
      const store = await opened(place);
      const bytes = someBytes(4096, 21);
      const m = metaOf(bytes);
      await store.putFile(m, bytes);
      await store.append('g', rec(1, { head: HEAD, entries: [withFile(1, [m])] }));
      // A second message with the same bytes is kept, not recorded yet...
      await store.putFile(metaOf(bytes, 'again.png'), bytes);
      await store.append('g', deletion(2, 1));
      await store.flush();
      expect(await place.has(m.id)).toBe(true);
      // ...and recorded: it carries the file; once it is deleted too, the file goes.
      await store.append('g', rec(3, { entries: [withFile(3, [metaOf(bytes, 'again.png')])] }));
      await store.append('g', deletion(4, 3));
      await store.flush();
      expect(await place.has(m.id)).toBe(false);
      await store.close();
    });

    it('a removal cut short is done at the next start; files of live messages and tools are kept', async () => {
      const place = await factory.fresh();
      let store = await opened(place);
      const gone = someBytes(3000, 31);
      const live = someBytes(3000, 32);
      const tool = someBytes(3000, 33);
      const [mg, ml, mt] = [metaOf(gone, 'gone.png'), metaOf(live, 'live.png'), metaOf(tool, 'tool.png')];
      for (const [m, b] of [[mg, gone], [ml, live], [mt, tool]] as const) await store.putFile(m, b);
      await store.append('g', rec(1, { head: HEAD, entries: [withFile(1, [mg, ml, mt])] }));
      await store.append('g', rec(2, { entries: [withFile(2, [ml])] }));
      const result = { outcome: 'ok' as const, content: 'made', bytes: 4, attachments: [mt] };
      await store.append('g', rec(3, { changes: [{ t: 'tool', id: 'call-1', set: { result } }] }));
      failNextRemoval(store);
      await store.append('g', deletion(4, 1));
      await store.flush();
      expect(await place.has(mg.id)).toBe(true);
      await store.close();

      store = await opened(place);
      expect(await place.has(mg.id)).toBe(false);
      expect(await place.has(ml.id)).toBe(true);
      expect(await place.has(mt.id)).toBe(true);
      expect((await store.readFile(ml.id))?.bytes.byteLength).toBe(3000);
      await store.close();
    });

    it('while part of the log cannot be read, nothing is collected', async () => {
      const place = await factory.fresh();
      let store = await opened(place);
      const bytes = someBytes(2500, 41);
      const m = metaOf(bytes);
      await store.putFile(m, bytes);
      await store.append('g', rec(1, { head: HEAD, entries: [withFile(1, [m])] }));
      await store.append('g', rec(2, { entries: [withFile(2, [], 'words only')] }));
      failNextRemoval(store);
      await store.append('g', deletion(3, 1));
      await store.flush();
      await store.close();
      // A damaged record might name the file: the start leaves it, and answers "not known".
      await place.damageLog('g');
      store = await opened(place);
      expect(await place.has(m.id)).toBe(true);
      expect(store.fileReferenced?.(m.id)).toBeUndefined();
      await store.close();
    });
  });
}
