/**
 * Migration from the data directory of Chorus 0.1 (format 1): one `groups/<id>.json` per group
 * holding a tail of its transcript, and `sessions/<group>/<agent>.json` whose backlogs hold the
 * entries trimmed from the group file before that agent saw them. Every entry that survived in
 * either place goes into the new log, in seq order, followed by one record carrying the group's
 * head, rounds, sessions and dedupe memory. The old files then move to `backup-v1-<time>/`.
 *
 * Crash-safe: the log is written into `groups/.<id>.migrating/` and renamed into place; the old
 * files are moved only after that. A start after a crash finds either the old file alone (migrate
 * again; the leftover temp dir is removed) or both (just move the old file).
 */
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../core/ports.js';
import type { GroupChange, GroupHead, GroupRecord, RoundRecord, SessionDelta } from '../../core/records.js';
import type { ChatTurn, TranscriptEntry } from '../../core/types.js';
import { describeError } from '../../core/errors.js';

interface V1Group extends GroupHead {
  version: 1;
  transcript: TranscriptEntry[];
  nextSeq: number;
  rounds: RoundRecord[];
  seen: string[];
}

interface V1Session {
  agentId: string;
  history: ChatTurn[];
  cursor: number;
  backlog?: TranscriptEntry[];
  summary: string | null;
  usage: SessionDelta['usage'];
}

/** Migrate every v1 group; returns the ids of v1 files that could not be read (left in place). */
export async function migrateV1(dataDir: string, logger: Logger, writeLog: (dir: string, records: GroupRecord[]) => Promise<void>): Promise<string[]> {
  const groupsDir = join(dataDir, 'groups');
  const v1Files = (await readdir(groupsDir)).filter((n) => n.endsWith('.json') && !n.startsWith('.'));
  if (v1Files.length === 0) return [];
  const backup = join(dataDir, `backup-v1-${Date.now()}`);
  const unreadable: string[] = [];
  const done = { groups: 0, entries: 0, sessions: 0 };
  for (const file of v1Files.sort()) {
    const id = file.slice(0, -'.json'.length);
    const path = join(groupsDir, file);
    const target = join(groupsDir, id);
    try {
      if (!(await exists(target))) {
        const doc = parseGroup(await readFile(path, 'utf8'));
        const sessions = await readSessions(join(dataDir, 'sessions', id), logger);
        const records = toRecords(doc, sessions);
        const tmp = join(groupsDir, `.${id}.migrating`);
        await rm(tmp, { recursive: true, force: true });
        await writeLog(tmp, records);
        await rename(tmp, target);
        done.groups++;
        done.entries += records.reduce((n, r) => n + (r.entries?.length ?? 0), 0);
        done.sessions += sessions.length;
      }
      await mkdir(join(backup, 'groups'), { recursive: true });
      await rename(path, join(backup, 'groups', file));
      if (await exists(join(dataDir, 'sessions', id))) {
        await mkdir(join(backup, 'sessions'), { recursive: true });
        await rename(join(dataDir, 'sessions', id), join(backup, 'sessions', id));
      }
    } catch (err) {
      unreadable.push(id);
      logger.error({ path, err: describeError(err) }, 'a group file of the previous Chorus version cannot be migrated; it is left in place and the group is not loaded');
    }
  }
  if (done.groups > 0) logger.info({ ...done, backup }, 'migrated data from format 1 (old files kept in the backup folder)');
  return unreadable;
}

function parseGroup(text: string): V1Group {
  const doc = JSON.parse(text) as V1Group;
  const problems: string[] = [];
  if (!doc || typeof doc !== 'object') throw new Error('not a JSON object');
  if (typeof doc.id !== 'string') problems.push('id');
  if (!Array.isArray(doc.participants)) problems.push('participants');
  if (!Array.isArray(doc.transcript)) problems.push('transcript');
  if (!doc.state || typeof doc.state !== 'object') problems.push('state');
  if (typeof doc.nextSeq !== 'number') problems.push('nextSeq');
  if (problems.length) throw new Error(`missing or wrong: ${problems.join(', ')}`);
  return doc;
}

async function readSessions(dir: string, logger: Logger): Promise<V1Session[]> {
  if (!(await exists(dir))) return [];
  const out: V1Session[] = [];
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.json') && !n.startsWith('.'))) {
    try {
      const s = JSON.parse(await readFile(join(dir, name), 'utf8')) as V1Session;
      if (typeof s.agentId !== 'string' || !Array.isArray(s.history) || typeof s.cursor !== 'number') throw new Error('not a session');
      out.push(s);
    } catch (err) {
      // The group migrates; this agent starts with a fresh memory. The file stays in the backup.
      logger.warn({ path: join(dir, name), err: describeError(err) }, 'a session file of the previous version cannot be read; that agent starts with a fresh memory');
    }
  }
  return out;
}

/** Every surviving entry once, in seq order, then the group's state. */
function toRecords(doc: V1Group, sessions: V1Session[]): GroupRecord[] {
  const bySeq = new Map<number, TranscriptEntry>();
  for (const s of sessions) for (const e of s.backlog ?? []) bySeq.set(e.seq, e);
  for (const e of doc.transcript) bySeq.set(e.seq, e); // the group file's copy has delivery state
  const entries = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  const records: GroupRecord[] = entries.map((e, i) => ({ v: 2, n: i + 1, ts: e.ts, entries: [e] }));
  const { version: _v, transcript: _t, nextSeq: _n, rounds, seen, ...head } = doc;
  const ts = Date.now();
  records.push({
    v: 2,
    n: records.length + 1,
    ts,
    changes: [
      { t: 'head', head: head as GroupHead },
      ...(rounds ?? []).map((r): GroupChange => ({ t: 'round', id: r.id, set: r })),
      ...sessions.map((s): GroupChange => ({ t: 'session', agentId: s.agentId, reset: true, append: s.history, cursor: s.cursor, summary: s.summary ?? null, usage: s.usage })),
      ...(seen ?? []).map((key): GroupChange => ({ t: 'seen', key, at: ts })),
    ],
  });
  return records;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
