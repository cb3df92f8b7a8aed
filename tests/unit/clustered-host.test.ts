/**
 * The cluster's routing (src/cluster/ClusteredHost.ts) around a real router: what reaches this
 * instance for a group another instance runs goes to its owner, and nothing of it is recorded
 * here; for a group this instance runs everything goes through unchanged.
 */
import { describe, expect, it } from 'vitest';
import { ClusteredHost, type Owners } from '../../src/cluster/ClusteredHost.js';
import type { PlatformChange, Peers } from '../../src/core/ports.js';
import type { InboundMessage, ReceiveResult } from '../../src/core/types.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { makeRouter } from '../helpers/router-harness.js';

class FakeOwners implements Owners, Peers {
  readonly inbox: InboundMessage[] = [];
  readonly changes: Array<{ groupId: string; change: PlatformChange }> = [];
  readonly drained: string[] = [];
  /** Another instance creates every new group first (its `claimNew` is refused). */
  refuseClaims = false;
  readonly claimed: string[] = [];
  ownerOf(): string | null {
    return 'other-1';
  }
  async claimNew(groupId: string): Promise<boolean> {
    this.claimed.push(groupId);
    return !this.refuseClaims;
  }
  status() {
    return undefined;
  }
  async forward(groupId: string, msg: InboundMessage): Promise<ReceiveResult> {
    this.inbox.push(msg);
    return { status: 'forwarded', groupId, inboxId: String(this.inbox.length) };
  }
  async forwardChange(groupId: string, change: PlatformChange): Promise<void> {
    this.changes.push({ groupId, change });
  }
  async beforeReceive(groupId: string): Promise<void> {
    this.drained.push(groupId);
  }
}

async function rig() {
  const owners = new FakeOwners();
  const h = await makeRouter({ peers: owners, participants: ['analyst'] });
  h.router.hosting.run(h.group.id);
  const host = new ClusteredHost(h.router, owners);
  /** The lease went to another instance: this one keeps a read-only copy. */
  const loseIt = () => h.router.hosting.release(h.group.id);
  return { ...h, owners, host, loseIt };
}

describe('ClusteredHost', () => {
  it("its own group: messages and page changes go through, after the inbox's earlier messages", async () => {
    const { host, owners, message, router, group } = await rig();
    expect((await host.handle({ kind: 'message', message: message('hello') })).status).toBe('recorded');
    expect(owners.drained).toEqual([group.id]);
    await host.gateway.updateConfig(group.id, { cooldown_seconds: 7 });
    expect(router.groups.get(group.id)!.config.cooldown_seconds).toBe(7);
    expect(owners.inbox).toEqual([]);
  });

  it("another instance's group: a message is handed over, page changes are refused naming the owner, /stop and decisions go as commands", async () => {
    const { host, owners, message, router, group, loseIt } = await rig();
    loseIt();
    const before = router.groups.get(group.id)!.nextSeq;
    expect((await host.handle({ kind: 'message', message: message('@analyst hi') })).status).toBe('forwarded');
    await expect(host.gateway.updateConfig(group.id, { cooldown_seconds: 7 })).rejects.toMatchObject({ status: 409, code: 'not_owner', message: expect.stringContaining('"other-1"') });
    await expect(host.gateway.addMember(group.id, 'writer')).rejects.toMatchObject({ code: 'not_owner' });
    expect(await host.gateway.stopGroup(group.id, 'Maya')).toEqual({ stopped: true, roundsDropped: null, turnsDropped: null });
    expect(await host.gateway.decideTool(group.id, 'call-1', false, 'Maya')).toEqual({ decided: true, line: null });
    // A decision from the page names the request's digest: the owner checks it as its own would.
    expect(await host.gateway.decideTool(group.id, 'call-2', true, 'Maya', '0123456789')).toEqual({ decided: true, line: null });
    expect(owners.inbox.map((m) => m.text)).toEqual(['@analyst hi', '/stop', '/deny call-1', '/approve call-2 0123456789']);
    expect(owners.inbox.slice(1).every((m) => m.ephemeral && m.chatId === group.chatId)).toBe(true);
    // One message's change waits for the owner: 503, try again.
    await expect(host.gateway.regenerate(group.id, `${group.id}.1`)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(host.gateway.deleteMessage(group.id, `${group.id}.1`, { clientTag: undefined })).rejects.toBeInstanceOf(StoreUnavailableError);
    // A query from the page is answered by the copy here; nothing is recorded anywhere.
    const help = await host.handle({ kind: 'message', message: message('/help', { ephemeral: true }) });
    expect(help.status).toBe('command');
    expect(help.ephemeral?.text).toBeTruthy();
    expect(owners.inbox).toHaveLength(4);
    expect(router.groups.get(group.id)!.nextSeq).toBe(before);
    expect(router.groups.get(group.id)!.config.cooldown_seconds).toBe(0);
  });

  it("membership: another instance's group gets it through the inbox; so does a group another instance created a moment ago", async () => {
    const { host, owners, router } = await rig();
    const chat = { channel: 'telegram' as const, chatId: '-100' };
    await host.handle({ kind: 'membership', chat: chat, change: { joined: ['analyst'], autoCreate: true, title: 'Team' } });
    const made = router.groups.find('telegram', '-100')!;
    expect(made.participants).toEqual(['analyst']);
    router.hosting.release(made.id);
    await host.handle({ kind: 'membership', chat: chat, change: { joined: ['writer'], autoCreate: true } });
    expect(owners.changes).toEqual([{ groupId: made.id, change: { kind: 'membership', chat, change: { joined: ['writer'], autoCreate: true } } }]);
    expect(made.participants).toEqual(['analyst']);

    // Another bot's copy of a join reached another instance first: its lease for the new group
    // is refused here, nothing is kept here, and the change goes to that group's inbox.
    const other = { channel: 'telegram' as const, chatId: '-200' };
    owners.refuseClaims = true;
    await host.handle({ kind: 'membership', chat: other, change: { joined: ['analyst'], autoCreate: true, title: 'Other' } });
    expect(router.groups.find('telegram', '-200')).toBeUndefined();
    expect(owners.changes.at(-1)).toEqual({ groupId: owners.claimed.at(-1), change: { kind: 'membership', chat: other, change: { joined: ['analyst'], autoCreate: true, title: 'Other' } } });
  });

  it("a platform edit or a chat's new id for another instance's group is left to its owner", async () => {
    const { host, router } = await rig();
    const chat = { channel: 'telegram' as const, chatId: '-100' };
    await host.handle({ kind: 'membership', chat: chat, change: { joined: ['analyst'], autoCreate: true, title: 'Team' } });
    const made = router.groups.find('telegram', '-100')!;
    const author = { id: 'u1', name: 'Una' };
    expect((await host.handle({ kind: 'message', message: { ...chat, messageId: 'tg-1', author, text: 'first draft', ts: Date.now() } })).status).toBe('recorded');
    await router.idle();
    const text = () => made.transcript.find((e) => e.platformMessageId === 'tg-1')!.text;
    // Run here: the edit is applied.
    await host.handle({ kind: 'edit', edit: { ...chat, platformMessageId: 'tg-1', author, text: 'second draft' } });
    expect(text()).toBe('second draft');
    router.hosting.release(made.id);
    await host.handle({ kind: 'edit', edit: { ...chat, platformMessageId: 'tg-1', author, text: 'third draft' } });
    expect(text()).toBe('second draft');
    await host.handle({ kind: 'rekey', channel: 'telegram', oldChatId: '-100', newChatId: '-100999' });
    expect(router.groups.find('telegram', '-100')).toBe(made);
    expect(router.groups.find('telegram', '-100999')).toBeUndefined();
  });
});
