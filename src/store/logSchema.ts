/**
 * The log's record and checkpoint schema, shared by both stores: what a store accepts when it
 * reads a record or a checkpoint back. Everything is validated before it reaches the core, so data
 * of the wrong shape is reported by name instead of crashing the daemon or being written over, and
 * data of a newer Chorus is refused whole rather than misread.
 */
import { z } from 'zod';
import type { GroupCheckpoint, GroupRecord } from '../core/ports.js';
import { StoreFormatError } from '../core/errors.js';

export const RECORD_VERSION = 1;
export const CHECKPOINT_VERSION = 2;

const usage = z.object({
  calls: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  cacheWriteTokens: z.number(),
  costUsd: z.number(),
  unpricedCalls: z.number().optional(),
});

const chatTurn = z.object({ role: z.enum(['user', 'assistant']), content: z.string() });

const entry = z.looseObject({
  id: z.string(),
  seq: z.number().int().positive(),
  kind: z.enum(['human', 'agent', 'system', 'decision']),
  ts: z.number(),
  authorId: z.string(),
  authorName: z.string(),
  text: z.string(),
});

const dayUsage = z.looseObject({
  day: z.string(),
  tokens: z.number(),
  costUsd: z.number(),
  costUnknown: z.boolean(),
  warned: z.boolean(),
  refused: z.boolean(),
});

// Loose, like the head around it: a state field this schema does not list must survive a read,
// not be dropped silently (replay must give back the state that was written).
const state = z.looseObject({
  muted: z.array(z.string()),
  lastSpoke: z.record(z.string(), z.number()),
  sticky: z.string().nullable(),
  rrIndex: z.number(),
  archived: z.boolean(),
  usage: z.record(z.string(), usage),
  repliedUpTo: z.record(z.string(), z.number()).optional(),
  today: dayUsage.optional(),
});

const head = z.looseObject({
  id: z.string(),
  title: z.string(),
  channel: z.enum(['telegram', 'discord', 'web']),
  chatId: z.string(),
  participants: z.array(z.string()),
  // Keys are checked by the core against the current defaults; old files may lack new keys.
  config: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
  state,
});

const round = z.looseObject({
  id: z.string(),
  triggerIds: z.array(z.string()),
  addressed: z.array(z.string()),
  forced: z.boolean(),
  planned: z.boolean(),
  queue: z.array(z.looseObject({ agentId: z.string(), reason: z.string(), depth: z.number() })),
  asked: z.array(z.string()),
  capped: z.number(),
  voluntary: z.number(),
});

const session = z.object({
  groupId: z.string(),
  agentId: z.string(),
  history: z.array(chatTurn),
  cursor: z.number(),
  summary: z.string().nullable(),
  usage,
});

const sessionDelta = z.object({
  agentId: z.string(),
  reset: z.literal(true).optional(),
  drop: z.number().int().min(0).optional(),
  append: z.array(chatTurn).optional(),
  cursor: z.number(),
  summary: z.string().nullable(),
  usage,
});

export const recordSchema = z.object({
  v: z.literal(RECORD_VERSION),
  n: z.number().int().positive(),
  ts: z.number(),
  entries: z.array(entry).optional(),
  delivery: z.array(z.object({ seq: z.number(), delivery: z.enum(['posted', 'failed']), postedIds: z.array(z.string()).optional() })).optional(),
  head: head.optional(),
  rounds: z.array(round).optional(),
  roundsDone: z.array(z.string()).optional(),
  sessions: z.array(sessionDelta).optional(),
  seen: z.array(z.string()).optional(),
});

export const checkpointSchema = z.object({
  version: z.literal(CHECKPOINT_VERSION),
  n: z.number().int().min(0),
  head,
  nextSeq: z.number().int().positive(),
  rounds: z.array(round),
  sessions: z.array(session),
  seen: z.array(z.tuple([z.string(), z.number()])),
  undelivered: z.array(entry),
});

/** The first problem of a failed parse, as "path: message". */
export function firstIssue(err: z.ZodError): string {
  const i = err.issues[0];
  return i ? `${i.path.join('.') || '(top)'}: ${i.message}` : 'invalid';
}

/**
 * A record read back (`json`, parsed): the record, or why it is damaged (the caller names it and
 * skips it). Throws StoreFormatError for a record of a newer version; `where` names it
 * ("<file> line 3", "group g record 3"), `version` is where the store keeps it.
 */
export function parseRecord(json: unknown, where: string, version: unknown = (json as { v?: unknown } | null)?.v): { record: GroupRecord } | { problem: string } {
  if (typeof version === 'number' && version > RECORD_VERSION) throw new StoreFormatError(`${where} was written by a newer Chorus (record version ${version}); this version reads ${RECORD_VERSION}`);
  const res = recordSchema.safeParse(json);
  return res.success ? { record: res.data as unknown as GroupRecord } : { problem: firstIssue(res.error) };
}

/** A checkpoint read back, as `parseRecord`. A damaged one is only a lost shortcut. */
export function parseCheckpoint(json: unknown, where: string, version: unknown = (json as { version?: unknown } | null)?.version): { checkpoint: GroupCheckpoint } | { problem: string } {
  if (typeof version === 'number' && version > CHECKPOINT_VERSION) throw new StoreFormatError(`${where} was written by a newer Chorus (checkpoint version ${version}); this version reads ${CHECKPOINT_VERSION}`);
  const res = checkpointSchema.safeParse(json);
  return res.success ? { checkpoint: res.data as unknown as GroupCheckpoint } : { problem: firstIssue(res.error) };
}
