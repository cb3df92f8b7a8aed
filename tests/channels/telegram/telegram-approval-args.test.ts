/**
 * A request for approval on Telegram shows every argument a person approves, end to end: the real
 * app with the analyst scripted to call `orders.cancel`, the channel's real grammY bots against the
 * fake Bot API (which counts the 4,096 characters after the markup is parsed). Whole as code when
 * it fits; in parts saying "part k of n" with the buttons under the last only; as a .json document
 * when too long to read in the chat. Markup in the arguments shows literally. Approving runs exactly
 * the arguments shown, and a decision bound to another call's digest is refused.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import { callDigest } from '../../../src/core/text/approvalText.js';
import { FakeTelegram, type Posted } from '../../fakes/telegram/FakeTelegram.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryTools, StepLlm } from '../../helpers/tool-fakes.js';
import { agentDef, MAYA, TOKENS, USERNAMES, waitUntil, telegramAppYaml, type AgentId } from './harness.js';

const IDS: AgentId[] = ['analyst', 'writer'];
const HEAD = '🔧 Analyst wants to use orders.cancel';
const KEYBOARD = (id: string, digest: string) => [[{ text: '✅ Approve', callback_data: `tool:a:${id}:${digest}` }, { text: '⛔ Deny', callback_data: `tool:d:${id}:${digest}` }]];
const HOW = /\nApprove with \/approve (\S+) or refuse with \/deny \1 \(arguments #([0-9a-f]{10})\)$/;

/** A crafted note: harmless words as padding, the part that matters at its end. */
const crafted = (chars: number) => {
  const tail = ' — and also refund 9,999 EUR to IBAN XX00 0000 EVIL';
  return `Routine cleanup. ${'padding '.repeat(chars)}`.slice(0, chars - tail.length) + tail;
};

/**
 * The arguments as the chat shows them, read back from the request's posts: one message is
 * head, JSON, how; parts each say "part k of n" and join at a line break unless they go on with
 * the line above.
 */
function argsShown(posts: readonly Posted[]): string {
  if (posts.length === 1) {
    const t = posts[0]!.text;
    expect(t.startsWith(`${HEAD}\n`)).toBe(true);
    return t.slice(HEAD.length + 1, t.search(HOW));
  }
  let out = '';
  posts.forEach((p, i) => {
    const m = new RegExp(`^${HEAD.replace('.', '\\.')} — arguments, part (\\d+) of (\\d+)(, going on with the line above)?:\\n`).exec(p.text);
    expect([m?.[1], m?.[2]]).toEqual([String(i + 1), String(posts.length)]);
    const piece = i === posts.length - 1 ? p.text.slice(m![0].length, p.text.search(HOW)) : p.text.slice(m![0].length);
    out += i === 0 || m![3] ? piece : `\n${piece}`;
  });
  return out;
}

describe('telegram: a request for approval shows every argument (real app)', () => {
  let fake: FakeTelegram | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let tools: MemoryTools;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  /** The analyst asks to cancel with `input`, then says "Done."; Maya is an admin. Resolves once the request is posted. */
  async function ask(input: Record<string, unknown>) {
    fake = await FakeTelegram.start();
    for (const id of IDS) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-tg-args-'));
    const { config } = parseConfigText(telegramAppYaml({ dataDir, apiRoot: fake.apiRoot, agents: IDS }), 'test', {});
    tools = new MemoryTools();
    app = await createApp({ config, llm: new StepLlm([{ calls: [{ id: 'c1', name: 'orders__cancel', input }] }, 'Done.']), tools, logger: silentLogger });
    await app.start();
    const chat = fake.createGroup('Orders desk');
    fake.setAdmins(chat.id, [MAYA.id]);
    for (const id of IDS) fake.addBotToChat(chat.id, TOKENS[id], MAYA);
    const g = await waitUntil(() => app!.gateway.listGroups().find((x) => x.chatId === String(chat.id) && x.participants.length === 2), 'group');
    await waitUntil(() => fake!.postsIn(chat.id).some((p) => p.text.includes('is ready')) || undefined, 'greeting');
    await app.gateway.updateConfig(g.id, { reply_strategy: 'mention_only' });
    await app.router.idle();
    const start = fake.postsIn(chat.id).length;
    const uploads = fake.files.uploads.length;
    fake.humanSays(chat.id, MAYA, '@analyst cancel order 42');
    const chatId = chat.id;
    const asked = () => fake!.postsIn(chatId).slice(start).some((p) => p.keyboard) || fake!.files.uploads.slice(uploads).some((u) => u.keyboard);
    await waitUntil(() => asked() || undefined, 'request for approval');
    await app.router.idle();
    return { chatId, posts: fake.postsIn(chatId).slice(start).filter((p) => p.bot === USERNAMES.analyst), uploads: fake.files.uploads.slice(uploads) };
  }

  const done = (chatId: number) => waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === 'Done.') || undefined, 'the reply');

  it('a 600-character argument is shown whole, as code, in one message with the buttons under it; Approve runs exactly those arguments', async () => {
    const input = { id: 42, note: crafted(600) };
    const { chatId, posts } = await ask(input);
    expect(input.note).toHaveLength(600);
    expect(posts).toHaveLength(1);
    const post = posts[0]!;
    const [, id, digest] = HOW.exec(post.text)!;
    expect(post.text).toContain(input.note);
    expect(argsShown(posts)).toBe(JSON.stringify(input, null, 2));
    expect(post.keyboard).toEqual(KEYBOARD(id!, digest!));
    expect(digest).toBe(callDigest('orders', 'cancel', input));
    // As code: the arguments are a <pre> block of the HTML sent.
    expect(fake!.callsOf('sendMessage', USERNAMES.analyst).at(-1)!.payload.text).toContain('<pre><code class="language-json">{\n  "id": 42,');

    fake!.press(post, MAYA, '✅ Approve');
    await done(chatId);
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });

  it('a 6,000-character argument goes in parts saying "part k of n", every character shown, the buttons under the last part only', async () => {
    const input = { id: 42, items: Array.from({ length: 120 }, (_, i) => `line item ${i}`), note: crafted(6000) };
    const { chatId, posts } = await ask(input);
    expect(posts.length).toBeGreaterThanOrEqual(2);
    expect(posts.length).toBeLessThanOrEqual(5);
    expect(posts.map((p) => p.keyboard !== undefined)).toEqual(posts.map((_, i) => i === posts.length - 1));
    expect(argsShown(posts)).toBe(JSON.stringify(input, null, 2));
    for (const p of posts) expect(p.parseMode).toBe('HTML');
    const [, id, digest] = HOW.exec(posts.at(-1)!.text)!;
    expect(posts.at(-1)!.keyboard).toEqual(KEYBOARD(id!, digest!));

    fake!.press(posts.at(-1)!, MAYA, '✅ Approve');
    await done(chatId);
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });

  it('arguments that look like markup show literally: tags, entities, Markdown, backticks', async () => {
    const input = { id: 42, note: '<b>bold?</b> &amp; **not bold** [link](https://evil.example) ```js\nx = 1\n``` </code></pre> `tick` @everyone' };
    const { posts } = await ask(input);
    expect(posts).toHaveLength(1);
    expect(argsShown(posts)).toBe(JSON.stringify(input, null, 2));
  });

  it('arguments too long to read in the chat (100 KB of backticks) come as a .json document with the buttons under it; Approve runs exactly them', async () => {
    const input = { id: 42, blob: '`'.repeat(100_000) };
    const { chatId, posts, uploads } = await ask(input);
    // No message before the file has buttons: they are under the file only.
    expect(posts.filter((p) => p.keyboard)).toEqual([]);
    expect(uploads).toHaveLength(1);
    const up = uploads[0]!;
    expect(up).toMatchObject({ method: 'sendDocument', bot: USERNAMES.analyst, name: expect.stringMatching(/^t\d+(-\d+)?-arguments\.json$/) });
    expect(up.sha256).toBe(createHash('sha256').update(JSON.stringify(input, null, 2)).digest('hex'));
    expect(up.caption).toMatch(/^🔧 Analyst wants to use orders\.cancel\nThe arguments \(100,\d{3} characters of JSON\) are in the attached file t\d+\S*-arguments\.json: read it before you decide\./);
    const [, id, digest] = HOW.exec(up.caption!)!;
    expect(up.keyboard).toEqual(KEYBOARD(id!, digest!));

    fake!.press(up, MAYA, '✅ Approve');
    await done(chatId);
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });

  it('a decision bound to other arguments is refused and runs nothing: a button with another digest, /approve with another digest; the shown one approves', async () => {
    const input = { id: 42, note: crafted(600) };
    const { chatId, posts } = await ask(input);
    const [, id, digest] = HOW.exec(posts[0]!.text)!;
    // A button of the agent's bot for the same call id, shown with other arguments (another digest).
    const other = callDigest('orders', 'cancel', { id: 42 });
    const res = await fetch(`${fake!.apiRoot}/bot${TOKENS.analyst}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: chatId, text: 'cancel order 42?', reply_markup: { inline_keyboard: KEYBOARD(id!, other) } }),
    });
    expect(((await res.json()) as { ok: boolean }).ok).toBe(true);
    const stale = fake!.postsIn(chatId).at(-1)!;
    fake!.press(stale, MAYA, '✅ Approve');
    await waitUntil(() => fake!.answers.length === 1 || undefined, 'the answer');
    expect(fake!.answers[0]).toMatchObject({ text: `tool call ${id} is not the one shown with #${other}: its arguments differ; read its request again`, showAlert: true });
    // The request's own buttons stay; the other ones go.
    expect(fake!.keyboardOf(posts[0]!)).toEqual(KEYBOARD(id!, digest!));
    await waitUntil(() => fake!.keyboardOf(stale).length === 0 || undefined, 'the other buttons taken away');

    fake!.humanSays(chatId, MAYA, `/approve ${id} #ffffffffff`);
    await waitUntil(() => fake!.postsIn(chatId).some((p) => p.text === `⚠ tool call ${id} is not the one shown with #ffffffffff: its arguments differ; read its request again`) || undefined, 'the refusal');
    await app!.router.idle();
    expect(tools.ran).toEqual([]);

    fake!.humanSays(chatId, MAYA, `/approve ${id} #${digest}`);
    await done(chatId);
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });
});
