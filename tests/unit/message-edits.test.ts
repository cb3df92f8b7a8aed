/**
 * A person edits or deletes their own message: the agents are told of an edit in their next
 * prompt, and a deleted message's text reaches no later prompt — neither through the mailbox nor
 * through the history an agent carries — live, after a restart, and for a turn that was already
 * being built when the message was deleted.
 */
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/core/errors.js';
import type { LlmRequest } from '../../src/core/ports.js';
import { makeRouter } from '../helpers/router-harness.js';
import { MemoryStore } from '../helpers/memory-store.js';

const TAG = 'maya-browser';
/** Everything a model call was shown, in one string. */
const shown = (req: LlmRequest) => [req.system, req.summary ?? '', ...req.messages.map((m) => m.content)].join('\n');

describe('editing and deleting a message', () => {
  it('an edit is an observation in the next prompt; the message reads as edited', async () => {
    const h = await makeRouter({ participants: ['analyst'] });
    const res = await h.say('@analyst the budget is 500 euros', { clientTag: TAG });
    const id = res.entryId!;
    const edited = await h.router.gateway.editMessage!(h.group.id, id, { clientTag: TAG, text: 'the budget is 700 euros', maxChars: 8000 });
    expect(edited).toMatchObject({ id, text: 'the budget is 700 euros', editedAt: expect.any(Number) });
    await h.say('@analyst and now?', { clientTag: TAG });
    const last = shown(h.llm.callsFor('analyst').at(-1)!);
    expect(last).toContain('Maya edited their message: the budget is 700 euros');
    // The stored entry carries the new text; the note is not a line for people (editOf).
    const all = await h.fullTranscript();
    expect(all.find((e) => e.id === id)).toMatchObject({ text: 'the budget is 700 euros', editNotes: [expect.any(Number)] });
    expect(all.find((e) => e.editOf === id)).toMatchObject({ kind: 'system', text: 'Maya edited their message: the budget is 700 euros' });
  });

  it('a deleted message is in no later prompt (mailbox, history, summary), also after a restart', async () => {
    const store = new MemoryStore();
    const secret = 'my password is hunter2-zebra';
    const h = await makeRouter({ participants: ['analyst', 'writer'], store, group: { history_turns: 50 } });
    const res = await h.say(`@analyst ${secret}`, { clientTag: TAG });
    // The analyst has it in its history now; the writer has it waiting in its mailbox.
    expect(shown(h.llm.callsFor('analyst').at(-1)!)).toContain(secret);
    // An edit first: the agents remember the newest text only.
    await h.router.gateway.editMessage!(h.group.id, res.entryId!, { clientTag: TAG, text: `@analyst ${secret}!`, maxChars: 8000 });
    await h.router.gateway.deleteMessage!(h.group.id, res.entryId!, { clientTag: TAG });
    const before = h.llm.calls.length;
    await h.say('@analyst @writer what did I say?', { clientTag: TAG });
    const later = h.llm.calls.slice(before);
    expect(later.filter((c) => c.purpose === 'turn').length).toBe(2);
    for (const c of later) expect(shown(c)).not.toContain('hunter2');
    const entry = (await h.fullTranscript()).find((e) => e.id === res.entryId);
    expect(entry).toMatchObject({ text: '', deleted: true });
    await h.router.idle();

    // A restart rebuilds the same memories from the log.
    const again = await makeRouter({ participants: ['analyst', 'writer'], store, group: { history_turns: 50 } });
    const n = again.llm.calls.length;
    await again.say('@analyst @writer and again?', { clientTag: TAG });
    for (const c of again.llm.calls.slice(n)) expect(shown(c)).not.toContain('hunter2');
    for (const s of again.router.groups.get(again.group.id)!.sessions.values()) expect(JSON.stringify(s)).not.toContain('hunter2');
  });

  it('a turn built before the deletion is recorded without the deleted text', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const h = await makeRouter({ participants: ['analyst'], llm: { replies: { analyst: [async () => (await held, 'noted'), 'ok'] } } });
    const sent = await h.router.receive(h.message('@analyst remember the launch code 0000-ALPHA', { clientTag: TAG }));
    // The analyst's turn is waiting on the model: its prompt holds the text already.
    for (let i = 0; i < 50 && h.llm.calls.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(shown(h.llm.calls[0]!)).toContain('0000-ALPHA');
    await h.router.gateway.deleteMessage!(h.group.id, sent.entryId!, { clientTag: TAG });
    release();
    await h.router.idle();
    await h.say('@analyst next');
    expect(shown(h.llm.calls.at(-1)!)).not.toContain('0000-ALPHA');
    expect(JSON.stringify(h.store.session(h.group.id, 'analyst'))).not.toContain('0000-ALPHA');
  });

  it('refuses what is not the browser\'s own live message', async () => {
    const h = await makeRouter({ participants: ['analyst'] });
    const mine = (await h.say('@analyst hello', { clientTag: TAG })).entryId!;
    const theirs = (await h.say('hello too', { clientTag: 'other-browser' })).entryId!;
    const reply = h.transcript().find((e) => e.kind === 'agent')!.id;
    const edit = (id: string, text = 'x') => h.router.gateway.editMessage!(h.group.id, id, { clientTag: TAG, text, maxChars: 20 });
    const code = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof UserError ? `${e.status} ${e.code}` : String(e)));
    expect(await code(edit('room.999'))).toBe('404 not_found');
    expect(await code(edit('other.1'))).toBe('404 not_found');
    expect(await code(edit(theirs))).toBe('403 forbidden');
    expect(await code(h.router.gateway.editMessage!(h.group.id, mine, { clientTag: undefined, text: 'x', maxChars: 20 }))).toBe('403 forbidden');
    expect(await code(edit(reply))).toBe('409 not_editable');
    expect(await code(edit(mine, '   '))).toBe('400 empty');
    expect(await code(edit(mine, 'x'.repeat(21)))).toBe('400 too_long');
    expect(await code(h.router.gateway.deleteMessage!(h.group.id, mine, { clientTag: TAG }))).toBe('ok');
    expect(await code(h.router.gateway.deleteMessage!(h.group.id, mine, { clientTag: TAG }))).toBe('409 deleted');
    expect(await code(edit(mine))).toBe('409 deleted');
  });

  it('a failed write keeps nothing', async () => {
    const h = await makeRouter({ participants: ['analyst'] });
    const id = (await h.say('@analyst keep me', { clientTag: TAG })).entryId!;
    h.store.failWrites = 'ENOSPC';
    await expect(h.router.gateway.editMessage!(h.group.id, id, { clientTag: TAG, text: 'changed', maxChars: 8000 })).rejects.toThrow(/ENOSPC|record/);
    h.store.failWrites = null;
    for (let i = 0; i < 100 && !h.router.groups.usable(h.router.groups.get(h.group.id)!); i++) await new Promise((r) => setTimeout(r, 5));
    expect((await h.fullTranscript()).find((e) => e.id === id)).toMatchObject({ text: '@analyst keep me' });
    expect(h.router.groups.get(h.group.id)!.transcript.find((e) => e.id === id)?.editedAt).toBeUndefined();
  });
});
