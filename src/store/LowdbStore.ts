/**
 * The Store on lowdb (SPEC §6): one JSON file per group and one per session, so a write costs the
 * same with 10 groups or 10,000. lowdb's file adapter (steno) writes a temp file and renames it,
 * so a file is always either the old or the new version, even after kill -9. Saves made in the
 * same tick are coalesced into one serialisation and one write per file.
 */
import { mkdir, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { DataFile } from 'lowdb/node';
import type { GroupDoc, Logger, SessionDoc, Store } from '../core/ports.js';

const SAFE_ID = /^[a-z0-9][a-z0-9_-]{0,79}$/;

/** Write counters, read by the benchmarks. */
export interface StoreStats {
  writes: number;
  bytes: number;
}

/** One file's pending state: the latest document and who waits for it to be durable. */
class DocFile<T> {
  private readonly db: Low<T | null>;
  private doc: T | null = null;
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private loop: Promise<void> | null = null;
  /** The directory is created once, not before every write (each mkdir is a syscall round trip). */
  private dirReady = false;

  constructor(
    readonly path: string,
    private readonly dir: string,
    stats: StoreStats,
  ) {
    this.db = new Low<T | null>(
      new DataFile<T | null>(path, {
        parse: JSON.parse,
        stringify: (data) => {
          const text = JSON.stringify(data);
          stats.writes++;
          stats.bytes += Buffer.byteLength(text);
          return text;
        },
      }),
      null,
    );
  }

  save(doc: T): Promise<void> {
    this.doc = doc;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.loop ??= this.drain();
    return done;
  }

  /** Resolves when nothing is pending for this file. */
  idle(): Promise<void> {
    return this.loop ?? Promise.resolve();
  }

  private async drain(): Promise<void> {
    // Let every save of this tick land first, so they share one serialisation and one write.
    await new Promise((r) => setImmediate(r));
    while (this.waiters.length > 0) {
      const batch = this.waiters.splice(0);
      try {
        if (!this.dirReady) {
          await mkdir(this.dir, { recursive: true });
          this.dirReady = true;
        }
        this.db.data = this.doc;
        await this.db.write();
        for (const w of batch) w.resolve();
      } catch (err) {
        this.dirReady = false; // made again on the next attempt, in case it was removed
        for (const w of batch) w.reject(err);
      }
    }
    this.loop = null;
  }
}

/** lowdb-backed Store rooted at `dataDir`. */
export class LowdbStore implements Store {
  readonly stats: StoreStats = { writes: 0, bytes: 0 };
  private readonly files = new Map<string, DocFile<unknown>>();
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly logger: Logger,
  ) {}

  private get groupsDir() {
    return join(this.dataDir, 'groups');
  }
  private sessionsDir(groupId: string) {
    return join(this.dataDir, 'sessions', groupId);
  }

  async loadAll(): Promise<{ groups: GroupDoc[]; sessions: SessionDoc[] }> {
    await mkdir(this.groupsDir, { recursive: true });
    const groups: GroupDoc[] = [];
    const sessions: SessionDoc[] = [];
    for (const name of await listJson(this.groupsDir)) {
      const doc = await this.readDoc<GroupDoc>(join(this.groupsDir, name));
      if (doc && isGroupDoc(doc)) groups.push(doc);
    }
    for (const g of groups) {
      const dir = this.sessionsDir(g.id);
      for (const name of await listJson(dir)) {
        const doc = await this.readDoc<SessionDoc>(join(dir, name));
        if (doc && isSessionDoc(doc)) sessions.push(doc);
      }
    }
    return { groups, sessions };
  }

  saveGroup(doc: GroupDoc): Promise<void> {
    return this.file(this.groupsDir, `${checkId(doc.id)}.json`).save(doc);
  }

  saveSession(doc: SessionDoc): Promise<void> {
    return this.file(this.sessionsDir(checkId(doc.groupId)), `${checkId(doc.agentId)}.json`).save(doc);
  }

  async flush(): Promise<void> {
    for (;;) {
      const files = [...this.files.values()];
      await Promise.all(files.map((f) => f.idle()));
      if ([...this.files.values()].length === files.length) return;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
  }

  private file(dir: string, name: string): DocFile<unknown> {
    if (this.closed) throw new Error('store is closed');
    const path = join(dir, name);
    let f = this.files.get(path);
    if (!f) {
      f = new DocFile(path, dir, this.stats);
      this.files.set(path, f);
    }
    return f;
  }

  /** Read one file; a corrupt file is moved aside and reported, never silently dropped. */
  private async readDoc<T>(path: string): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      this.logger.error({ path, err: String(err) }, 'cannot read data file');
      return null;
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      const aside = `${path}.corrupt-${Date.now()}`;
      await rename(path, aside).catch(() => undefined);
      this.logger.error({ path, movedTo: aside }, 'data file is not valid JSON; moved aside');
      return null;
    }
  }
}

/** Ids become file names: refuse anything that could escape `data_dir`. */
function checkId(id: string): string {
  if (!SAFE_ID.test(id)) throw new Error(`unsafe id for a file name: ${JSON.stringify(id).slice(0, 40)}`);
  return id;
}

async function listJson(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort();
  } catch {
    return [];
  }
}

function isGroupDoc(d: unknown): d is GroupDoc {
  const g = d as GroupDoc;
  return !!g && typeof g.id === 'string' && Array.isArray(g.transcript) && Array.isArray(g.participants);
}
function isSessionDoc(d: unknown): d is SessionDoc {
  const s = d as SessionDoc;
  return !!s && typeof s.agentId === 'string' && Array.isArray(s.history) && typeof s.cursor === 'number';
}
