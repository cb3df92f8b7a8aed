/**
 * People react to messages (core/groups/Reactions.ts): one emoji, one reaction per emoji per
 * person, idempotent, rate limited; a note the agents observe (folded when many in a row), never a
 * round; kept through edits and restarts, gone with a deletion; old entries read from the store;
 * the live `edited` event carries the reactions.
 */
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError, UserError } from '../../src/core/errors.js';
import { TRANSCRIPT_TAIL } from '../../src/core/groups/evolve.js';
import { Reactions } from '../../src/core/groups/Reactions.js';
import { MAX_EMOJI_PER_ENTRY } from '../../src/core/edits/decide.js';
import type { RunningGroups } from '../../src/core/peers.js';
import type { LlmRequest, ReactionRequest } from '../../src/core/ports.js';
import type { GatewayEvent } from '../../src/core/readModels.js';
import { makeRouter } from '../helpers/router-harness.js';
import { MemoryStore } from '../helpers/memory-store.js';

const TAG = 'maya-browser';
const shown = (req: LlmRequest) => [req.system, req.summary ?? '', ...req.messages.map((m) => m.content)].join('\n');
const code = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof UserError ? `${e.status} ${e.code}` : e instanceof StoreUnavailableError ? '503' : String(e)));
const by = (name: string, key = `key-${name}`) => ({ key, name });

describe('reactions', () => {
  it('adds and removes one reaction per emoji per person; the same request twice changes nothing and writes nothing', async () => {
    const h = await makeRouter({ participants: ['analyst'] });
    await h.say('@analyst how did Q3 go?');
    const reply = h.transcript().find((e) => e.kind === 'agent')!;
    const react = (r: ReactionRequest) => h.router.gateway.react(h.group.id, reply.id, r);
    const first = await react({ emoji: '👍', by: by('Maya'), on: true });
    expect(first.reactions).toEqual([{ emoji: '👍', by: 'Maya', byKey: 'key-Maya', at: expect.any(Number) }]);
    await h.router.groups.settle();
    const writes = h.store.writes;
    // Again: the same entry back, no record.
    expect((await react({ emoji: '👍', by: by('Maya'), on: true })).reactions).toHaveLength(1);
    expect(h.store.writes).toBe(writes);
    // Another emoji, another person: each its own.
    await react({ emoji: '🎉', by: by('Maya'), on: true });
    const both = await react({ emoji: '👍', by: by('Sam'), on: true });
    expect(both.reactions!.map((r) => `${r.by} ${r.emoji}`)).toEqual(['Maya 👍', 'Maya 🎉', 'Sam 👍']);
    // Removing: only that person's, and removing one that is not there changes nothing.
    const removed = await react({ emoji: '👍', by: by('Maya'), on: false });
    expect(removed.reactions!.map((r) => `${r.by} ${r.emoji}`)).toEqual(['Maya 🎉', 'Sam 👍']);
    await h.router.groups.settle();
    const w2 = h.store.writes;
    expect((await react({ emoji: '👍', by: by('Maya'), on: false })).reactions).toHaveLength(2);
    expect(h.store.writes).toBe(w2);
    // The name shown is the person's at the time; the key tells people apart.
    const renamed = await react({ emoji: '👀', by: by('Maya (phone)', 'key-Maya'), on: true });
    expect(renamed.reactions!.at(-1)).toMatchObject({ by: 'Maya (phone)', byKey: 'key-Maya' });
    // The store reads the entry back the same.
    const stored = (await h.fullTranscript()).find((e) => e.id === reply.id)!;
    expect(stored.reactions).toEqual(h.transcript().find((e) => e.id === reply.id)!.reactions);
    expect(stored.editedAt).toBeUndefined();
  });

  it('takes one emoji only, and refuses what takes no reactions', async () => {
    const h = await makeRouter({ participants: ['analyst', 'writer'] });
    await h.say('hello everyone'); // voluntary turns pass: decision lines
    await h.say('/help'); // a command and its answer: hidden from agents
    const mine = (await h.say('@analyst fine', { clientTag: TAG })).entryId!;
    const gone = (await h.say('a typo', { clientTag: TAG })).entryId!;
    await h.router.gateway.editMessage(h.group.id, mine, { clientTag: TAG, text: '@analyst fine!', maxChars: 8000 });
    await h.router.gateway.deleteMessage(h.group.id, gone, { clientTag: TAG });
    await h.router.gateway.react(h.group.id, mine, { emoji: '👍', by: by('Sam'), on: true });
    const t = h.transcript();
    const react = (id: string, emoji = '👍') => code(h.router.gateway.react(h.group.id, id, { emoji, by: by('Sam'), on: true }));
    for (const ok of ['👍🏽', '🇫🇷', '1️⃣', '👩‍💻', '🏳️‍🌈', '❤️', ' 🎉 ']) expect(await react(mine, ok)).toBe('ok');
    for (const bad of ['', 'a', 'ok', '👍👍', '🇫', '👍 🎉', '🏻', '\u200d', ':)', '👍'.repeat(9), 'x\u20e3']) expect(await react(mine, bad), JSON.stringify(bad)).toBe('400 invalid_emoji');
    expect(await react(`${h.group.id}.9999`)).toBe('404 not_found');
    expect(await react('other.1')).toBe('404 not_found');
    expect(await code(h.router.gateway.react('nope', mine, { emoji: '👍', by: by('Sam'), on: true }))).toBe('404 not_found');
    expect(await react(gone)).toBe('409 not_reactable');
    expect(await react(t.find((e) => e.editOf)!.id)).toBe('409 not_reactable');
    expect(await react(t.find((e) => e.reactionOf)!.id)).toBe('409 not_reactable');
    expect(await react(t.find((e) => e.kind === 'decision')!.id)).toBe('409 not_reactable');
    expect(await react(t.find((e) => e.hiddenFromAgents && e.kind !== 'decision')!.id)).toBe('409 not_reactable');
    expect(await react(t.find((e) => e.kind === 'agent')!.id)).toBe('ok');
    // A message takes a bounded number of different emoji.
    const many = ['😁', '😂', '🤣', '😃', '😄', '😅', '😆', '😉', '😊', '😋', '😎', '😍', '😘', '🥰', '😀'];
    const distinct = () => new Set(h.transcript().find((e) => e.id === mine)!.reactions!.map((r) => r.emoji)).size;
    while (distinct() < MAX_EMOJI_PER_ENTRY) await h.router.gateway.react(h.group.id, mine, { emoji: many.pop()!, by: by('Lee'), on: true });
    expect(await react(mine, '🙃')).toBe('409 too_many_reactions');
    // An emoji it has already takes more people.
    expect(await code(h.router.gateway.react(h.group.id, mine, { emoji: '😀', by: by('Zoe'), on: true }))).toBe('ok');
  });

  it('is rate limited per person per group, with the time to wait', async () => {
    const h = await makeRouter({ participants: ['analyst'], limits: { user_messages_per_minute: 1000, max_message_chars: 8000, reactions_per_minute: 3 } });
    const id = (await h.say('@analyst hi')).entryId!;
    const react = (emoji: string, who = 'Maya', rateKey?: string) => h.router.gateway.react(h.group.id, id, { emoji, by: by(who), on: true, rateKey });
    for (const e of ['👍', '🎉', '👀']) await react(e);
    const refused = await react('🔥').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UserError);
    expect(refused).toMatchObject({ status: 429, code: 'rate_limited', retryAfterSeconds: 60 });
    // Someone else is not affected; a shared rate key (one address) is.
    expect(await code(react('🔥', 'Sam'))).toBe('ok');
    expect(await code(react('🔥', 'Lee', 'key-Maya'))).toBe('429 rate_limited');
    await h.clock.advance(30_000);
    expect(((await react('🔥').catch((e: unknown) => e)) as UserError).retryAfterSeconds).toBe(30);
    await h.clock.advance(30_000);
    expect(await code(react('🔥'))).toBe('ok');
  });

  it('the agents see a reaction in their next prompt, many in a row as one line; removing one adds nothing; no round starts', async () => {
    const h = await makeRouter({ participants: ['analyst', 'writer'], group: { reply_strategy: 'mention_only' } });
    await h.say('@analyst what is our margin?');
    const reply = h.transcript().find((e) => e.kind === 'agent')!;
    const calls = h.llm.calls.length;
    const react = (name: string, emoji: string, on = true) => h.router.gateway.react(h.group.id, reply.id, { emoji, by: by(name), on });
    await react('Maya', '👍');
    await react('Sam', '👍');
    await react('Lee', '🎉');
    await react('Omar', '👍');
    await react('Ana', '👍');
    await react('Ana', '👍', false);
    await h.router.idle();
    // Nothing was asked of any model, no round waits.
    expect(h.llm.calls.length).toBe(calls);
    expect(h.router.groups.get(h.group.id)!.rounds).toEqual([]);
    const notes = h.transcript().filter((e) => e.reactionOf);
    expect(notes.map((n) => n.text)).toEqual([
      `Maya reacted 👍 to Analyst's message: "${reply.text}"`,
      `Sam reacted 👍 to Analyst's message: "${reply.text}"`,
      `Lee reacted 🎉 to Analyst's message: "${reply.text}"`,
      `Omar reacted 👍 to Analyst's message: "${reply.text}"`,
      `Ana reacted 👍 to Analyst's message: "${reply.text}"`,
    ]);
    expect(notes[0]).toMatchObject({ kind: 'system', authorName: 'Chorus', reactionOf: { id: reply.id, emoji: '👍', by: 'Maya' } });
    expect(notes[0]!.hiddenFromAgents).toBeUndefined();
    expect(notes[0]!.delivery).toBeUndefined(); // never posted to a chat
    // The writer's next prompt: one line for the five notes; the analyst (the author) sees it too.
    await h.say('@writer @analyst thoughts?');
    for (const agent of ['writer', 'analyst']) {
      const prompt = shown(h.llm.callsFor(agent).at(-1)!);
      expect(prompt).toContain(`Maya, Sam and 3 others reacted 👍🎉 to Analyst's message: "${reply.text}"`);
      expect(prompt).not.toContain('Sam reacted');
    }
  });

  it('a long message is quoted by its start; after a deletion neither it nor its reactions remain anywhere', async () => {
    const h = await makeRouter({ participants: ['analyst'], group: { history_turns: 50 } });
    const long = `@analyst the secret plan is ${'zebra '.repeat(30)}and nobody may know it`;
    const id = (await h.say(long, { clientTag: TAG })).entryId!;
    await h.router.gateway.react(h.group.id, id, { emoji: '🤫', by: by('Sam'), on: true });
    const note = h.transcript().find((e) => e.reactionOf)!;
    expect(note.text).toMatch(/^Sam reacted 🤫 to Maya's message: "@analyst the secret plan is zebra .*…"$/);
    expect(Array.from(note.text.slice(note.text.indexOf('"') + 1, -2)).length).toBeLessThanOrEqual(80);
    // The analyst has seen the note (it is in its history now).
    await h.say('@analyst ok?');
    expect(shown(h.llm.callsFor('analyst').at(-1)!)).toContain('Sam reacted 🤫');
    await h.router.gateway.deleteMessage(h.group.id, id, { clientTag: TAG });
    const all = await h.fullTranscript();
    expect(all.find((e) => e.id === id)).toMatchObject({ deleted: true, text: '' });
    expect(all.find((e) => e.id === id)!.reactions).toBeUndefined();
    expect(all.find((e) => e.id === note.id)).toMatchObject({ deleted: true, text: '' });
    expect(JSON.stringify(h.store.session(h.group.id, 'analyst'))).not.toContain('secret plan');
    await h.say('@analyst what was the plan?');
    expect(shown(h.llm.callsFor('analyst').at(-1)!)).not.toContain('secret plan');
  });

  it('an edit keeps the reactions and a reaction keeps the edit, live and after a restart', async () => {
    const store = new MemoryStore();
    const h = await makeRouter({ participants: ['analyst'], store });
    const id = (await h.say('@analyst lunch at noon', { clientTag: TAG })).entryId!;
    await h.router.gateway.react(h.group.id, id, { emoji: '👍', by: by('Sam'), on: true });
    const edited = await h.router.gateway.editMessage(h.group.id, id, { clientTag: TAG, text: 'lunch at one', maxChars: 8000 });
    expect(edited).toMatchObject({ text: 'lunch at one', reactions: [{ emoji: '👍', by: 'Sam' }] });
    const editedAt = edited.editedAt!;
    await h.clock.advance(5000);
    const after = await h.router.gateway.react(h.group.id, id, { emoji: '🍕', by: by('Lee'), on: true });
    expect(after).toMatchObject({ text: 'lunch at one', editedAt, reactions: [{ emoji: '👍' }, { emoji: '🍕' }] });
    const gone = await h.router.gateway.react(h.group.id, id, { emoji: '👍', by: by('Sam'), on: false });
    expect(gone).toMatchObject({ text: 'lunch at one', editedAt, reactions: [{ emoji: '🍕', by: 'Lee' }] });
    expect(gone.editNotes).toHaveLength(3); // the edit's note and both reactions' notes
    // The new note quotes the text as it is now.
    expect(h.transcript().filter((e) => e.reactionOf).at(-1)!.text).toBe(`Lee reacted 🍕 to Maya's message: "lunch at one"`);
    await h.router.groups.settle();
    const again = await makeRouter({ participants: ['analyst'], store });
    const read = (await again.fullTranscript()).find((e) => e.id === id)!;
    expect(read).toMatchObject({ text: 'lunch at one', editedAt, reactions: [{ emoji: '🍕', by: 'Lee', byKey: 'key-Lee' }] });
    expect(again.transcript().find((e) => e.id === id)).toEqual(read);
  });

  it('reacts to an entry older than the in-memory tail (read from the store), and says so live', async () => {
    const h = await makeRouter({ participants: ['analyst'], group: { reply_strategy: 'mention_only' } });
    const first = (await h.say('the very first message')).entryId!;
    for (let i = 0; i < TRANSCRIPT_TAIL + 40; i++) await h.say(`filler ${i}`);
    const g = h.router.groups.get(h.group.id)!;
    expect(g.transcript.some((e) => e.id === first)).toBe(false);
    const events: GatewayEvent[] = [];
    const off = h.router.gateway.subscribe((ev) => events.push(ev));
    const out = await h.router.gateway.react(h.group.id, first, { emoji: '🏛️', by: by('Sam'), on: true });
    expect(out).toMatchObject({ id: first, text: 'the very first message', reactions: [{ emoji: '🏛️', by: 'Sam' }] });
    expect((await h.fullTranscript()).find((e) => e.id === first)!.reactions).toHaveLength(1);
    // Idempotent too when read from the store.
    expect((await h.router.gateway.react(h.group.id, first, { emoji: '🏛️', by: by('Sam'), on: true })).reactions).toHaveLength(1);
    await h.router.gateway.react(h.group.id, first, { emoji: '🏛️', by: by('Sam'), on: false });
    off();
    const edits = events.filter((e) => e.type === 'edited');
    expect(edits).toEqual([
      { type: 'edited', groupId: h.group.id, id: first, seq: expect.any(Number), reactions: [{ emoji: '🏛️', by: 'Sam', byKey: 'key-Sam', at: expect.any(Number) }] },
      { type: 'edited', groupId: h.group.id, id: first, seq: expect.any(Number), reactions: [] },
    ]);
    // The note came as a message event, marked for the page not to draw it.
    expect(events.filter((e) => e.type === 'message').map((e) => (e as { entry: { reactionOf?: unknown } }).entry.reactionOf)).toEqual([{ id: first, emoji: '🏛️', by: 'Sam' }]);
    expect((await h.fullTranscript()).find((e) => e.id === first)!.reactions).toBeUndefined();
  });

  it('a failed write keeps nothing; another instance\'s group is a 503', async () => {
    const h = await makeRouter({ participants: ['analyst'] });
    const id = (await h.say('@analyst keep me')).entryId!;
    h.store.failWrites = 'ENOSPC';
    await expect(h.router.gateway.react(h.group.id, id, { emoji: '👍', by: by('Sam'), on: true })).rejects.toThrow(/ENOSPC|record/);
    h.store.failWrites = null;
    for (let i = 0; i < 100 && !h.router.groups.usable(h.router.groups.get(h.group.id)!); i++) await new Promise((r) => setTimeout(r, 5));
    expect((await h.fullTranscript()).some((e) => e.reactions || e.reactionOf)).toBe(false);
    expect(h.router.groups.get(h.group.id)!.transcript.some((e) => e.reactions || e.reactionOf)).toBe(false);

    const elsewhere = new Reactions({ groups: h.router.groups, store: h.store, now: () => h.clock.now(), running: { runs: () => false } as unknown as RunningGroups, mailbox: h.router.mailbox });
    expect(await code(elsewhere.react(h.group.id, id, { emoji: '👍', by: by('Sam'), on: true }))).toBe('503');
  });
});
