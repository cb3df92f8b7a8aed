/**
 * Invariants of a Chorus data directory after crashes, checked straight from the
 * JSON files on disk. Used by the storage crash test, the end-to-end daemon crash test and the
 * in-memory crash-point test. Each check returns human-readable violations (empty = fine).
 *
 * The checks assume the workloads these tests generate: single-line, unique human texts and
 * unique agent reply texts, and a fake LLM under which one agent never takes two turns at the same
 * depth of one round (so `roundId:agentId:depth` identifies a round turn).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../../src/core/ports.js';
import type { GroupRecord, RoundRecord, SessionDoc } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import type { GroupState } from '../../src/core/records.js';
import { isObservable } from '../../src/core/groups/groupReads.js';
import { rebuild } from '../../src/core/groups/evolve.js';
import { observationLine } from '../../src/core/session/prompt.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { CapturingLogger } from '../helpers/logger.js';

/** A group as the next start would see it, with its whole transcript. */
export interface SnapshotGroup {
  id: string;
  chatId: string;
  transcript: TranscriptEntry[];
  nextSeq: number;
  rounds: RoundRecord[];
  state: GroupState;
}

export interface DataSnapshot {
  groups: SnapshotGroup[];
  sessions: SessionDoc[];
  /** Files or lines the store reported as damaged. */
  corrupt: string[];
}

/** Replay every group of a store as a start would (checkpoint, then records), with every entry. */
export async function snapshotOf(store: Store, corrupt: string[] = []): Promise<DataSnapshot> {
  const out: DataSnapshot = { groups: [], sessions: [], corrupt };
  const { groups, unreadable } = await store.open();
  for (const id of unreadable) corrupt.push(`unreadable group ${id}`);
  for (const stored of groups) {
    const { g: r, described } = await rebuild(stored.id, stored.checkpoint, stored.records());
    if (!described) {
      corrupt.push(`group ${stored.id} has no head`);
      continue;
    }
    const transcript: TranscriptEntry[] = [];
    for (let after = 0; ; ) {
      const page = await store.readEntries(stored.id, { afterSeq: after, limit: 500 });
      if (page.length === 0) break;
      transcript.push(...page);
      after = page.at(-1)!.seq;
    }
    out.groups.push({ id: stored.id, chatId: r.chatId, transcript, nextSeq: r.nextSeq, rounds: r.rounds, state: r.state });
    out.sessions.push(...[...r.sessions.values()].map((s) => ({ ...s, groupId: stored.id })));
  }
  return out;
}

/**
 * What the log files of a live daemon hold right now, read synchronously and without touching
 * them (no torn-tail cutting): per group, its chat id and human message texts.
 */
export function humanTextsOnDisk(dir: string): Array<{ chatId: string; texts: string[] }> {
  const root = join(dir, 'groups');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((id) => !id.startsWith('.') && existsSync(join(root, id, 'log')))
    .map((id) => {
      let chatId = '';
      const texts: string[] = [];
      for (const seg of readdirSync(join(root, id, 'log')).filter((n) => n.endsWith('.jsonl')).sort()) {
        for (const line of readFileSync(join(root, id, 'log', seg), 'utf8').split('\n')) {
          let rec: GroupRecord;
          try {
            rec = JSON.parse(line) as GroupRecord;
          } catch {
            continue; // a line still being written
          }
          for (const c of rec.changes ?? []) if (c.t === 'head') chatId = c.head.chatId;
          for (const c of rec.changes ?? []) if (c.t === 'rekey') chatId = c.chatId;
          for (const e of rec.entries ?? []) if (e.kind === 'human') texts.push(e.text);
        }
      }
      return { chatId, texts };
    });
}

/** Read a data directory through the file store; anything it reports as damaged counts. */
export async function readDataDir(dir: string): Promise<DataSnapshot> {
  const logger = new CapturingLogger();
  const store = new FileStore({ dataDir: dir, fsync: 'never', logger });
  const corrupt: string[] = [];
  const snap = await snapshotOf(store, corrupt);
  await store.close();
  // A torn last line is expected after kill -9 (a record never acknowledged) and is cut; errors are not.
  for (const line of logger.lines) if (line.level === 'error') corrupt.push(`${line.msg ?? ''} ${JSON.stringify(line.obj)}`);
  return snap;
}

export interface CheckOptions {
  /** groupId → platform message ids that were acknowledged to the sender. */
  acked: Map<string, Set<string>>;
  /** After a final restart + idle: no round left, no reply still pending. */
  finished: boolean;
}

export function checkInvariants(snap: DataSnapshot, opts: CheckOptions): string[] {
  const v: string[] = [];
  for (const f of snap.corrupt) v.push(`file does not parse: ${f}`);
  const byId = new Map(snap.groups.map((g) => [g.id, g]));

  // Every acknowledged message is in its transcript, exactly once.
  for (const [groupId, ids] of opts.acked) {
    const g = byId.get(groupId);
    if (!g) {
      if (ids.size > 0) v.push(`group ${groupId} with ${ids.size} acknowledged messages has no file`);
      continue;
    }
    const count = new Map<string, number>();
    for (const e of g.transcript) if (e.kind === 'human' && e.platformMessageId) count.set(e.platformMessageId, (count.get(e.platformMessageId) ?? 0) + 1);
    for (const id of ids) if (!count.has(id)) v.push(`${groupId}: acknowledged message ${id} is missing from the transcript`);
    for (const [id, n] of count) if (n > 1) v.push(`${groupId}: message ${id} recorded ${n} times`);
  }

  for (const g of snap.groups) {
    // Transcript well-formed: strictly increasing seq below nextSeq.
    let last = 0;
    for (const e of g.transcript) {
      if (e.seq <= last) v.push(`${g.id}: transcript seq not increasing at ${e.id}`);
      last = e.seq;
    }
    if (last >= g.nextSeq) v.push(`${g.id}: nextSeq ${g.nextSeq} not above last seq ${last}`);

    // No agent reply recorded twice for one round turn.
    const turns = new Map<string, number>();
    for (const e of g.transcript) {
      if (e.kind !== 'agent') continue;
      const key = `${e.roundId}:${e.agentId}:${e.meta?.depth}`;
      turns.set(key, (turns.get(key) ?? 0) + 1);
    }
    for (const [k, n] of turns) if (n > 1) v.push(`${g.id}: round turn ${k} has ${n} replies`);
    const texts = new Map<string, number>();
    for (const e of g.transcript) if (e.kind === 'agent') texts.set(e.text, (texts.get(e.text) ?? 0) + 1);
    for (const [t, n] of texts) if (n > 1) v.push(`${g.id}: reply "${t}" recorded ${n} times`);

    if (opts.finished && !g.state.archived) {
      if (g.rounds.length > 0) v.push(`${g.id}: ${g.rounds.length} round(s) still unfinished: ${g.rounds.map((r) => r.id).join(', ')}`);
      const pending = g.transcript.filter((e) => e.delivery === 'pending');
      if (pending.length > 0) v.push(`${g.id}: ${pending.length} entries still pending delivery`);
    }
  }

  // Mailboxes: every observation reaches each agent at most once; none before the cursor is lost.
  for (const s of snap.sessions) {
    const g = byId.get(s.groupId);
    if (!g) continue;
    const where = `${s.groupId}/${s.agentId}`;
    if (s.cursor > g.nextSeq - 1) v.push(`${where}: cursor ${s.cursor} is ahead of the transcript (${g.nextSeq - 1})`);
    const shown = new Map<string, number>();
    for (const turn of s.history) {
      if (turn.role !== 'user') continue;
      // One `<message>` block per observation; a block's text cannot contain `</message`, so the
      // shortest match is exactly one block.
      for (const block of turn.content.match(/<message [^>]*>[\s\S]*?<\/message>/g) ?? []) shown.set(block, (shown.get(block) ?? 0) + 1);
    }
    const observable = g.transcript.filter((e) => isObservable(e) && e.agentId !== s.agentId);
    const firstShown = observable.find((e) => shown.has(observationLine(e)))?.seq ?? Infinity;
    for (const e of observable) {
      const n = shown.get(observationLine(e)) ?? 0;
      if (n > 1) v.push(`${where}: observation ${e.id} shown ${n} times`);
      else if (e.seq > s.cursor && n > 0) v.push(`${where}: observation ${e.id} shown but cursor ${s.cursor} is before it`);
      else if (e.seq <= s.cursor && e.seq >= firstShown && n === 0 && s.summary === null) v.push(`${where}: observation ${e.id} skipped (cursor ${s.cursor} passed it unseen)`);
    }
  }
  return v;
}

/** Parse `ACK <group> <messageId>` lines into the acknowledged map. */
export function collectAcks(stdout: string, into: Map<string, Set<string>>): void {
  for (const line of stdout.split('\n')) {
    const m = /^ACK (\S+) (\S+)$/.exec(line.trim());
    if (!m) continue;
    let set = into.get(m[1]!);
    if (!set) into.set(m[1]!, (set = new Set()));
    set.add(m[2]!);
  }
}

/** A small seeded PRNG (mulberry32), so random kill moments are reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
