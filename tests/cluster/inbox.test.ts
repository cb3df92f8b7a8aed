/**
 * The cluster's inbox on a real PostgreSQL database: what the group's owner does with a handed-over
 * change (a reaction, an edit, a new chat id, a membership change) it cannot apply. A storage
 * outage stops the drain with everything kept, to be tried again in order; a change refused for
 * good is kept for an operator and the messages behind it are recorded (they must not wait forever).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Inbox, type InboxOwner } from '../../src/cluster/inbox.js';
import { CLUSTER_SQL } from '../../src/cluster/schema.js';
import type { PlatformChange } from '../../src/core/ports.js';
import type { InboundMessage, ReceiveResult } from '../../src/core/types.js';
import { StoreUnavailableError, UserError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/silentLogger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';

let db: TestDatabase | null = null;
let pool: pg.Pool;

beforeAll(async () => {
  db = await testDatabase('inbox');
  if (!db) return;
  pool = new pg.Pool({ connectionString: db.url });
  await pool.query(CLUSTER_SQL);
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await db?.drop().catch(() => undefined);
});

const REACTION: PlatformChange = { kind: 'reaction', reaction: { channel: 'telegram', chatId: '-100', platformMessageId: '7', by: { id: '5001', name: 'Maya' }, emoji: '👍', on: true } };
const message = (id: string): InboundMessage => ({ channel: 'telegram', chatId: '-100', messageId: id, author: { id: '5001', name: 'Maya' }, text: `line ${id}`, ts: Date.now() });

/** An owner that records messages and applies changes by `apply` (which may throw). */
function owner(apply: (c: PlatformChange) => void): InboxOwner & { recorded: string[]; applied: PlatformChange[] } {
  const recorded: string[] = [];
  const applied: PlatformChange[] = [];
  return {
    recorded,
    applied,
    runs: () => true,
    async receiveForwarded(msg): Promise<ReceiveResult> {
      recorded.push(msg.messageId);
      return { status: 'recorded', groupId: 'g', entryId: `g.${recorded.length}` };
    },
    async applyForwarded(_id, c) {
      apply(c);
      applied.push(c);
    },
  };
}

const waiting = async (groupId: string) => (await pool.query<{ message: unknown }>('SELECT message FROM chorus_inbox WHERE group_id = $1 ORDER BY id', [groupId])).rows.map((r) => r.message);

describe('the inbox: a handed-over change the owner cannot apply', () => {
  it('a storage outage stops the drain and keeps everything, in order, for the next try', async (ctx) => {
    if (!db) return ctx.skip();
    const inbox = new Inbox({ pool, log: silentLogger, listening: () => false });
    await inbox.forward('g1', message('m1'));
    await inbox.forwardChange('g1', REACTION);
    await inbox.forward('g1', message('m2'));
    let down = true;
    const o = owner(() => {
      if (down) throw new StoreUnavailableError('the store is down');
    });
    expect(await inbox.drain('g1', o)).toBe(false);
    expect(o.recorded).toEqual(['m1']);
    expect(await waiting('g1')).toHaveLength(2);
    down = false;
    expect(await inbox.drain('g1', o)).toBe(true);
    expect(o.recorded).toEqual(['m1', 'm2']);
    expect(o.applied).toEqual([REACTION]);
    expect(await waiting('g1')).toEqual([]);
  });

  it('a change refused for good is kept for an operator; the messages behind it are recorded', async (ctx) => {
    if (!db) return ctx.skip();
    const inbox = new Inbox({ pool, log: silentLogger, listening: () => false });
    await inbox.forwardChange('g2', REACTION);
    await inbox.forward('g2', message('m3'));
    const o = owner(() => {
      throw new UserError('not this one');
    });
    expect(await inbox.drain('g2', o)).toBe(true);
    expect(o.recorded).toEqual(['m3']);
    expect(await waiting('g2')).toEqual([{ forwardedChange: REACTION }]);
  });
});
