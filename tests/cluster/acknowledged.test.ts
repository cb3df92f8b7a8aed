/**
 * "Nothing acknowledged is lost" across a lost lease, deterministically, in the core:
 * a real GroupRouter with a store that refuses one append (what the cluster's fence does once the
 * lease is gone) and an ownership that can be taken away between two attempts.
 *
 * The bug this pins: the poster's first attempt was refused (503), the instance then lost the
 * group's lease, and the retry with the same client id was answered 'duplicate' (202) by the
 * object the instance had been running — its dedupe memory still held the id whose record the
 * fence had refused. The message was then in neither the log nor the inbox.
 */
import { describe, expect, it } from 'vitest';
import type { PlatformChange, Peers } from '../../src/core/ports.js';
import type { Owners } from '../../src/cluster/ClusteredHost.js';
import type { ClusterStatus } from '../../src/core/readModels.js';
import type { GroupRouter } from '../../src/core/router/GroupRouter.js';
import type { EphemeralAnswer, InboundMessage, ReceiveResult } from '../../src/core/types.js';
import { makeRouter } from '../helpers/router-harness.js';
import { ClusteredHost } from '../../src/cluster/ClusteredHost.js';

/** Ownership of the test's group that a test can take away; forwarded messages land in `inbox`. */
class SwitchableOwnership implements Peers, Owners {
  /** The router that runs the group (set once it is made). */
  router: GroupRouter | undefined;
  private running = true;
  readonly inbox: InboundMessage[] = [];
  /** What the owner answers a handed-over web command with (undefined: no answer in time). */
  answer: { ephemeral?: EphemeralAnswer; entryId?: string } | undefined;
  get owned(): boolean {
    return this.running;
  }
  /** What the cluster does when the lease is lost (or taken again): the router stops (starts) running the group. */
  set owned(v: boolean) {
    this.running = v;
    if (v) this.router!.hosting.run('room');
    else this.router!.hosting.release('room');
  }
  ownerOf(): string | null {
    return this.owned ? null : 'other-instance';
  }
  /** Set to make the next claim fail as a database that cannot be asked does. */
  claimError: Error | null = null;
  readonly released: string[] = [];
  async claimNew(): Promise<boolean> {
    if (this.claimError) throw this.claimError;
    return true;
  }
  async releaseNew(groupId: string): Promise<void> {
    this.released.push(groupId);
  }
  async forward(groupId: string, msg: InboundMessage, opts?: { awaitAnswer?: boolean }): Promise<ReceiveResult> {
    // Like the inbox's unique (group, dedupe key): a second copy is a duplicate of a durable row.
    if (this.inbox.some((m) => m.messageId === msg.messageId)) return { status: 'duplicate', groupId };
    this.inbox.push(msg);
    return { status: 'forwarded', groupId, inboxId: String(this.inbox.length), ...(opts?.awaitAnswer ? this.answer : {}) };
  }
  async forwardChange(_groupId: string, _change: PlatformChange): Promise<void> {}
  async beforeReceive(): Promise<void> {}
  status(): ClusterStatus | undefined {
    return undefined;
  }
}

async function rig(limits?: { user_messages_per_minute: number; max_message_chars: number }) {
  const ownership = new SwitchableOwnership();
  const h = await makeRouter({ peers: ownership, limits, participants: ['analyst'] });
  ownership.router = h.router;
  // What the channels talk to with several instances: the router, wrapped by the cluster's routing.
  return { ...h, ownership, host: new ClusteredHost(h.router, ownership) };
}

describe('an acknowledged message survives a lost lease', () => {
  it('a retry after a refused (fenced) append is handed over, never answered "duplicate" from memory', async () => {
    const { router, host, store, ownership, message, group } = await rig();
    const m = message('@analyst what is 6 × 7?', { ephemeral: true });

    // The fence refuses the append: the lease is gone. The poster is told to try again.
    store.failWrites = 'fenced: this instance no longer holds the lease';
    const first = await host.handle({ kind: 'message', message: m });
    expect(first).toMatchObject({ status: 'rejected', code: 'unavailable' });
    store.failWrites = null;

    // The instance noticed it lost the lease; the object it ran is still there (broken) until the
    // read-only copy replaces it. The retry must reach the new owner through the inbox.
    ownership.owned = false;
    const retry = await host.handle({ kind: 'message', message: { ...m } });
    expect(retry.status).toBe('forwarded');
    expect(ownership.inbox.map((x) => x.messageId)).toEqual([m.messageId]);

    // Once the copy is read from the store (the id is not in it) the answer is the same.
    await router.groups.reload(group.id);
    const again = await host.handle({ kind: 'message', message: { ...m } });
    expect(again.status).toBe('duplicate'); // the inbox row already holds it
    expect(await store.readEntries(group.id, { afterSeq: 0, limit: 100 })).not.toContainEqual(expect.objectContaining({ platformMessageId: m.messageId }));
  });

  it('a copy read from the store still answers "duplicate" for a message that is durably recorded', async () => {
    const { router, host, ownership, message, group } = await rig();
    const m = message('@analyst hello', { ephemeral: true });
    expect((await host.handle({ kind: 'message', message: m })).status).toBe('recorded');
    await router.idle();
    ownership.owned = false;
    await router.groups.reload(group.id);
    expect((await host.handle({ kind: 'message', message: { ...m } })).status).toBe('duplicate');
    expect(ownership.inbox).toEqual([]);
  });

  it('the owner draining the inbox never takes a refused id for a duplicate', async () => {
    const { router, host, store, message, group } = await rig();
    const m = message('@analyst first', { ephemeral: true });
    store.failWrites = 'fenced';
    expect(await host.handle({ kind: 'message', message: m })).toMatchObject({ status: 'rejected', code: 'unavailable' });
    store.failWrites = null;
    // The same id arrives from the inbox before the group was reloaded: not recorded, not a
    // duplicate — the inbox keeps the row (PgCluster deletes it only on another answer).
    expect(await router.receiveForwarded({ ...m })).toMatchObject({ status: 'rejected', code: 'unavailable' });
    await router.groups.reload(group.id);
    expect((await router.receiveForwarded({ ...m })).status).toBe('recorded');
    await router.idle();
    const log = await store.readEntries(group.id, { afterSeq: 0, limit: 100 });
    expect(log.filter((e) => e.platformMessageId === m.messageId)).toHaveLength(1);
  });

  it('a handed-over message is recorded even past the rate limit: it was acknowledged where it was posted', async () => {
    const { router, host, store, message, group } = await rig({ user_messages_per_minute: 1, max_message_chars: 8000 });
    expect((await host.handle({ kind: 'message', message: message('one', { ephemeral: true }) })).status).toBe('recorded');
    // A direct second message is refused to its sender (nothing recorded) ...
    expect(await host.handle({ kind: 'message', message: message('two', { ephemeral: true }) })).toMatchObject({ status: 'rejected', code: 'rate_limited' });
    // ... but one another instance already answered 202 for is recorded.
    const handed = message('three, handed over', { ephemeral: true });
    expect((await router.receiveForwarded(handed)).status).toBe('recorded');
    await router.idle();
    const log = await store.readEntries(group.id, { afterSeq: 0, limit: 100 });
    expect(log.map((e) => e.platformMessageId)).toContain(handed.messageId);
  });

  it('a non-owner checks the limits before it acknowledges and hands over', async () => {
    const { host, ownership, message } = await rig({ user_messages_per_minute: 1, max_message_chars: 20 });
    ownership.owned = false;
    expect((await host.handle({ kind: 'message', message: message('short', { ephemeral: true }) })).status).toBe('forwarded');
    expect(await host.handle({ kind: 'message', message: message('second one', { ephemeral: true }) })).toMatchObject({ status: 'rejected', code: 'rate_limited', ephemeral: { kind: 'refusal' } });
    expect(await host.handle({ kind: 'message', message: message('x'.repeat(30), { ephemeral: true }) })).toMatchObject({ status: 'rejected', code: 'too_long' });
    expect(ownership.inbox.map((m) => m.text)).toEqual(['short']);
  });
});

describe('web-only command answers on an instance that does not run the group', () => {
  it('answers /help and /group list from the read-only copy, records and forwards nothing', async () => {
    const { host, store, ownership, message, group } = await rig();
    ownership.owned = false;
    const before = (await store.readEntries(group.id, { afterSeq: 0, limit: 100 })).length;
    const help = await host.handle({ kind: 'message', message: message('/help', { ephemeral: true }) });
    expect(help.status).toBe('command');
    expect(help.ephemeral?.text).toMatch(/\/group/);
    const list = await host.handle({ kind: 'message', message: message('/group list', { ephemeral: true }) });
    expect(list.status).toBe('command');
    expect(list.ephemeral?.text).toContain('Test room');
    expect(ownership.inbox).toEqual([]);
    expect((await store.readEntries(group.id, { afterSeq: 0, limit: 100 })).length).toBe(before);
  });

  it('a command that changes the group is still handed over to the owner', async () => {
    const { host, ownership, message } = await rig();
    ownership.owned = false;
    // No answer from the owner in time: the asker is told where it went (shown to them alone).
    const res = await host.handle({ kind: 'message', message: message('/group config cooldown_seconds 5', { ephemeral: true }) });
    expect(res.status).toBe('forwarded');
    expect(res.ephemeral).toEqual({ kind: 'command', text: expect.stringContaining('"other-instance"') });
    expect(ownership.inbox).toHaveLength(1);
    // The owner's answer came back: it is the asker's answer, as if asked there.
    ownership.answer = { ephemeral: { kind: 'command', text: 'cooldown_seconds: expected a number' } };
    expect(await host.handle({ kind: 'message', message: message('/group config cooldown_seconds x', { ephemeral: true }) })).toMatchObject({ status: 'command', ephemeral: { text: 'cooldown_seconds: expected a number' } });
    ownership.answer = { entryId: 'room.9' };
    expect(await host.handle({ kind: 'message', message: message('/group config cooldown_seconds 6', { ephemeral: true }) })).toMatchObject({ status: 'command', entryId: 'room.9' });
  });
});

describe('a group that could not be created leaves nothing behind', () => {
  it('a claim the database cannot answer: refused, and no half-made group stays in memory', async () => {
    const { router, host, ownership } = await rig();
    ownership.claimError = new Error('connection terminated');
    await expect(router.gateway.createGroup({ title: 'New', participants: ['analyst'], id: 'new-1' })).rejects.toThrow(/could not be created/);
    expect(router.gateway.getGroup('new-1')).toBeUndefined();
    ownership.claimError = null;
    expect((await router.gateway.createGroup({ title: 'New', participants: ['analyst'], id: 'new-1' })).id).toBe('new-1');
  });

  it('a first record refused after the claim: the group is forgotten and its lease given back', async () => {
    const { router, host, ownership, store } = await rig();
    store.failWrites = 'disk full';
    await expect(router.gateway.createGroup({ title: 'New', participants: ['analyst'], id: 'new-2' })).rejects.toThrow();
    expect(router.gateway.getGroup('new-2')).toBeUndefined();
    expect(ownership.released).toEqual(['new-2']);
  });
});
