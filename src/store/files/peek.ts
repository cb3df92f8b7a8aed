/**
 * A read-only look at which groups a data directory holds and which chat each is bound to, for
 * `chorus doctor` (can each bot read the groups it is in?). Unlike `FileStore.open` it never
 * writes — no migration, no torn-tail repair, no format stamp — so it is safe to run beside a
 * running daemon. The answer is the group's head as its checkpoint and log leave it. A group whose log ends before its checkpoint is
 * reported as damaged, as `FileStore.open` would find it (see groupFiles.ts).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GroupCheckpoint, GroupHead, GroupRecord } from '../../core/records.js';
import { headOf, rebuild } from '../../core/groups/evolve.js';
import { parseCheckpoint, parseRecord } from '../logSchema.js';
import { SEGMENT_FILE } from './format.js';

export interface PeekedGroup {
  id: string;
  title: string;
  channel: GroupHead['channel'];
  chatId: string;
  participants: string[];
  archived: boolean;
  /** A private chat with one agent's bot. */
  dm: boolean;
  /** The room's other chats (linked with /group link, or declared under `chats:`). */
  links: Array<{ channel: GroupHead['channel']; chatId: string }>;
}

/** Groups found under `dataDir/groups`; a missing directory is simply none. */
export async function peekGroups(dataDir: string): Promise<{ groups: PeekedGroup[]; unreadable: Array<{ id: string; problem: string }>; damaged: Array<{ id: string; problem: string }> }> {
  const dir = join(dataDir, 'groups');
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { groups: [], unreadable: [], damaged: [] };
    throw err;
  }
  const groups: PeekedGroup[] = [];
  const unreadable: Array<{ id: string; problem: string }> = [];
  const damaged: Array<{ id: string; problem: string }> = [];
  for (const id of names) {
    try {
      const problem = await logBehindCheckpoint(join(dir, id));
      if (problem) {
        damaged.push({ id, problem });
        continue;
      }
      const head = await peekHead(join(dir, id), id);
      if (!head) continue;
      groups.push({
        id,
        title: head.title,
        channel: head.channel,
        chatId: head.chatId,
        participants: [...head.participants],
        archived: head.state?.archived ?? false,
        dm: head.dmAgentId !== undefined,
        links: (head.links ?? []).map((l) => ({ channel: l.channel, chatId: l.chatId })),
      });
    } catch (err) {
      // The error names the file (EACCES … open '…/000000000001.jsonl', ENOTDIR … scandir '…/log').
      unreadable.push({ id, problem: err instanceof Error ? err.message : String(err) });
    }
  }
  return { groups, unreadable, damaged };
}

/** Why the group's log cannot be what its checkpoint covers, or null when it can be. */
async function logBehindCheckpoint(groupDir: string): Promise<string | null> {
  let n: unknown;
  try {
    n = (JSON.parse(await readFile(join(groupDir, 'state.json'), 'utf8')) as { n?: unknown }).n;
  } catch {
    return null; // no checkpoint, or a damaged one: the store replays the whole log
  }
  if (typeof n !== 'number' || n <= 0) return null;
  const last = await lastRecordN(join(groupDir, 'log'));
  if (last >= n) return null;
  return last === 0
    ? `its log holds no record (empty or missing), but its checkpoint state.json covers records 1 to ${n}`
    : `its log ends at record ${last}, but its checkpoint state.json covers records up to ${n}`;
}

/** The number of the newest complete record in a group's log (0 for none). */
async function lastRecordN(logDir: string): Promise<number> {
  let segments: string[];
  try {
    segments = (await readdir(logDir)).filter((n) => SEGMENT_FILE.test(n)).sort().reverse();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  for (const name of segments) {
    const lines = (await readFile(join(logDir, name), 'utf8')).split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        const n = (JSON.parse(lines[i]!) as { n?: unknown } | null)?.n;
        if (typeof n === 'number') return n;
      } catch {
        continue; // a torn or damaged line
      }
    }
  }
  return 0;
}

/**
 * The group as its checkpoint and the records after it leave it, folded with the core's own
 * `evolve` (a head is written whole only when a group is made; later records change parts of it).
 * Reads segments from the newest back until it reaches the checkpoint. Null: no group there.
 */
async function peekHead(groupDir: string, id: string): Promise<GroupHead | null> {
  let cp: GroupCheckpoint | null = null;
  try {
    const parsed = parseCheckpoint(JSON.parse(await readFile(join(groupDir, 'state.json'), 'utf8')), `${id}/state.json`);
    if ('checkpoint' in parsed) cp = parsed.checkpoint;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err;
  }
  const after = cp?.n ?? 0;
  const logDir = join(groupDir, 'log');
  let segments: string[] = [];
  try {
    segments = (await readdir(logDir)).filter((n) => SEGMENT_FILE.test(n)).sort().reverse();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const records: GroupRecord[] = [];
  for (const name of segments) {
    let reachedCheckpoint = false;
    for (const line of (await readFile(join(logDir, name), 'utf8')).split('\n')) {
      if (!line) continue;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        continue; // a torn or damaged line: the store skips it too
      }
      const parsed = parseRecord(json, `${id}/log/${name}`);
      if (!('record' in parsed)) continue;
      if (parsed.record.n > after) records.push(parsed.record);
      else reachedCheckpoint = true;
    }
    if (reachedCheckpoint) break;
  }
  const { g, described } = await rebuild(id, cp, records.sort((a, b) => a.n - b.n));
  return described ? headOf(g) : null;
}
