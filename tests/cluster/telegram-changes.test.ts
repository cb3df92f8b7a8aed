/**
 * Two instances on one database, and a Telegram chat whose only bot is polled by the instance that
 * does not run the chat's group: everything the platform reports besides messages — a person's
 * edit, a reaction, the chat's upgrade to a supergroup (a new chat id) — reaches the group
 * through the shared inbox, in order with the chat's messages, and the bot's updates keep flowing.
 *
 * What this pins: only one instance holds a bot's long poll, and with groups spread over the
 * instances it is often not the owner. Edits heard there were dropped, an upgrade was left
 * to an owner that never hears it, and a reaction was refused (503): the poll fetched that update
 * again every two seconds, and no later update of that bot, in any chat, was handed over.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { MAYA, TOKENS, USERNAMES, waitUntil, type AgentId } from '../channels/telegram/harness.js';
import { telegramCluster } from './telegramCluster.js';

const BOTS = ['analyst', 'writer'] as const;
const cluster = telegramCluster('tgchanges', BOTS, { privacy: true });
const instance = (id: string) => cluster.instance(id);

describe('Telegram with two instances: what a non-owner hears reaches the group', () => {
  it("an edit, a reaction and a chat's new id, heard by the instance that does not run the group", async (ctx) => {
    if (!cluster.db) return ctx.skip();
    const fake = cluster.fake;
    const [a, b] = await Promise.all([instance('a'), instance('b')]);
    const polls = (app: App) => app.cluster!.status().connections ?? [];
    await waitUntil(() => polls(a).length + polls(b).length === 2 || undefined, 'both polls held', 20_000);
    // The analyst's bot, polled by one instance (the poller); its two chats' groups are made
    // there, and one is handed to the other instance to spread them.
    const bot: AgentId = 'analyst';
    const [poller, owner] = polls(a).includes(`telegram:${bot}`) ? [a, b] : [b, a];
    const ownerId = owner === a ? 'a' : 'b';
    const chats = [fake.createGroup('North', { type: 'group' }), fake.createGroup('South', { type: 'group' })];
    for (const c of chats) fake.addBotToChat(c.id, TOKENS[bot], MAYA);
    const groups = await waitUntil(() => {
      const found = chats.map((c) => poller.gateway.listGroups().find((g) => g.chatId === String(c.id)));
      return found.every(Boolean) ? found.map((g) => g!) : undefined;
    }, 'both groups', 20_000);
    const group = await waitUntil(() => groups.find((g) => owner.cluster!.owns(g.id)), 'a group handed over to the other instance', 30_000);
    const chat = chats.find((c) => String(c.id) === group.chatId)!;
    expect(poller.cluster!.owns(group.id)).toBe(false);
    const humans = async () => (await owner.gateway.messages(group.id, { limit: 50 })).filter((e) => e.kind === 'human');

    // A message only the bot sees: the poller hands it over, the owner records it and answers through the bot.
    const said = fake.humanSays(chat.id, MAYA, `@${USERNAMES[bot]} how are the numbers?`);
    await waitUntil(() => fake.postsIn(chat.id).some((p) => p.bot === USERNAMES[bot] && p.text.startsWith(`${bot} here (${ownerId}`)) || undefined, 'the reply from the owner', 20_000);

    // The person edits it: the edit reaches the entry.
    fake.humanEdits(said, `@${USERNAMES[bot]} how are the numbers this week?`, 1_000);
    await waitUntil(async () => ((await humans())[0]?.text.endsWith('this week?') ? true : undefined), 'the edit on the entry', 20_000);

    // A reaction (Telegram sends those to admin bots only).
    fake.promoteBot(chat.id, TOKENS[bot], MAYA);
    fake.humanReacts(chat.id, MAYA, { key: said.key }, [], ['👍']);
    await waitUntil(async () => ((await humans())[0]?.reactions?.some((r) => r.emoji === '👍') ? true : undefined), 'the reaction on the entry', 20_000);

    // The basic group becomes a supergroup with a new id; the next message comes from it.
    const newId = fake.migrate(chat.id);
    fake.humanSays(newId, MAYA, `@${USERNAMES[bot]} and after the upgrade?`);
    await waitUntil(() => fake.postsIn(newId).some((p) => p.bot === USERNAMES[bot] && p.text.startsWith(`${bot} here (${ownerId}`)) || undefined, 'a reply in the supergroup', 20_000);
    expect(owner.gateway.getGroup(group.id)?.chatId).toBe(String(newId));
    expect((await humans()).map((e) => e.text)).toEqual([`@${USERNAMES[bot]} how are the numbers this week?`, `@${USERNAMES[bot]} and after the upgrade?`]);
    await waitUntil(() => poller.gateway.getGroup(group.id)?.chatId === String(newId) || undefined, "the poller's copy under the new id", 20_000);
    expect(poller.gateway.listGroups().filter((g) => g.chatId === String(newId) || g.chatId === String(chat.id)).map((g) => g.id)).toEqual([group.id]);
  }, 120_000);
});
