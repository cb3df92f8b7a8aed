/**
 * A read-only look at which groups a data directory holds and which chat each is bound to, for
 * `chorus doctor` (can each bot read the groups it is in?). Unlike `FileStore.open` it never
 * writes — no migration, no torn-tail repair, no format stamp — so it is safe to run beside a
 * running daemon. The answer is the newest group head found: the last one in the newest log
 * segment that has one, else the checkpoint's.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GroupHead } from '../../core/ports.js';

export interface PeekedGroup {
  id: string;
  title: string;
  channel: GroupHead['channel'];
  chatId: string;
  participants: string[];
  archived: boolean;
  /** A private chat with one agent's bot. */
  dm: boolean;
}

/** Log segments read back from the newest when looking for a head. */
const SEGMENTS_SEARCHED = 3;

/** Groups found under `dataDir/groups`; a missing directory is simply none. */
export async function peekGroups(dataDir: string): Promise<{ groups: PeekedGroup[]; unreadable: string[] }> {
  const dir = join(dataDir, 'groups');
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { groups: [], unreadable: [] };
    throw err;
  }
  const groups: PeekedGroup[] = [];
  const unreadable: string[] = [];
  for (const id of names) {
    try {
      const head = (await headFromLog(join(dir, id, 'log'))) ?? (await headFromCheckpoint(join(dir, id, 'state.json')));
      if (!head) continue;
      groups.push({
        id,
        title: head.title,
        channel: head.channel,
        chatId: head.chatId,
        participants: [...head.participants],
        archived: head.state?.archived ?? false,
        dm: head.dmAgentId !== undefined,
      });
    } catch {
      unreadable.push(id);
    }
  }
  return { groups, unreadable };
}

async function headFromCheckpoint(path: string): Promise<GroupHead | null> {
  try {
    const cp = JSON.parse(await readFile(path, 'utf8')) as { head?: GroupHead };
    return cp.head ?? null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function headFromLog(logDir: string): Promise<GroupHead | null> {
  let segments: string[];
  try {
    segments = (await readdir(logDir)).filter((n) => /^\d{12}\.jsonl$/.test(n)).sort().reverse();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  for (const name of segments.slice(0, SEGMENTS_SEARCHED)) {
    const lines = (await readFile(join(logDir, name), 'utf8')).split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i]!;
      // Most records carry no head; parse only the ones that may (a torn last line just fails).
      if (!line.includes('"head":')) continue;
      try {
        const rec = JSON.parse(line) as { head?: GroupHead };
        if (rec.head) return rec.head;
      } catch {
        continue;
      }
    }
  }
  return null;
}
