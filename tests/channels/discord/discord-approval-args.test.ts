/**
 * A request for approval on Discord shows every argument a person approves, end to end: the real
 * app with the analyst scripted to call `orders.cancel`, the channel's discord.js webhooks against
 * the fake Discord (which refuses content over 2,000 characters). Whole as a JSON code block when it
 * fits; in parts saying "part k of n" with the commands that decide it on the last only; as a .json
 * file when too long to read in the chat. Backticks cannot close the block (they are JSON-escaped,
 * so the JSON shown reads back as exactly the arguments) and nothing pings anyone. Approving runs
 * exactly the arguments shown; `/approve` naming another call's digest is refused.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import { callDigest } from '../../../src/core/text/approvalText.js';
import { FakeDiscord } from '../../fakes/discord/FakeDiscord.js';
import type { StoredMessage } from '../../fakes/discord/model.js';
import { silentLogger } from '../../helpers/logger.js';
import { MemoryTools, StepLlm } from '../../helpers/tool-fakes.js';
import { until } from './harness.js';

const HEAD = '🔧 Analyst wants to use orders.cancel';
const HOW = /\n(?:\(Backticks in the arguments are shown as \\u0060, which JSON reads as the same character\.\)\n)?Approve with \/approve (\S+) or refuse with \/deny \1 \(arguments #([0-9a-f]{10})\)$/;

const crafted = (chars: number) => {
  const tail = ' — and also refund 9,999 EUR to IBAN XX00 0000 EVIL';
  return `Routine cleanup. ${'padding '.repeat(chars)}`.slice(0, chars - tail.length) + tail;
};

/** The code block of one message: what follows "```json\n" up to the closing fence, which nothing inside may open or close. */
function block(content: string): string {
  const open = content.indexOf('\n```json\n');
  const close = content.lastIndexOf('\n```');
  expect(open).toBeGreaterThan(0);
  const inside = content.slice(open + 9, close);
  expect(inside).not.toContain('```');
  return inside;
}

/** The arguments as the channel shows them, read back from the request's messages (see telegram-approval-args). */
function argsShown(msgs: readonly StoredMessage[]): string {
  if (msgs.length === 1) {
    expect(msgs[0]!.content.startsWith(`${HEAD}\n\`\`\`json\n`)).toBe(true);
    return block(msgs[0]!.content);
  }
  let out = '';
  msgs.forEach((m, i) => {
    const head = new RegExp(`^${HEAD.replace('.', '\\.')} — arguments, part (\\d+) of (\\d+)(, going on with the line above)?:\\n`).exec(m.content);
    expect([head?.[1], head?.[2]]).toEqual([String(i + 1), String(msgs.length)]);
    const piece = block(m.content);
    out += i === 0 || head![3] ? piece : `\n${piece}`;
  });
  return out;
}

describe('discord: a request for approval shows every argument (real app)', () => {
  let fake: FakeDiscord | undefined;
  let app: App | undefined;
  let dataDir: string | undefined;
  let general = '';
  let tools: MemoryTools;

  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    app = fake = dataDir = undefined;
  });

  /** The analyst asks to cancel with `input`, then says "Done."; resolves with the request's messages once the last is in. */
  async function ask(input: Record<string, unknown>) {
    fake = await new FakeDiscord().start();
    general = fake.addChannel('general');
    dataDir = await mkdtemp(join(tmpdir(), 'chorus-dc-args-'));
    const yaml = `data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: You are the analyst. }
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20, reply_strategy: mention_only }
channels:
  web: { enabled: false }
  discord: { enabled: true, token: "${fake.token}", api_base: "${fake.apiBase}" }
groups:
  - { channel: discord, chat_id: "${general}", title: General, participants: [analyst] }
`;
    const { config } = parseConfigText(yaml, 'test', {});
    tools = new MemoryTools();
    app = await createApp({ config, llm: new StepLlm([{ calls: [{ id: 'c1', name: 'orders__cancel', input }] }, 'Done.']), tools, logger: silentLogger });
    await app.start();
    const mod = fake.addUser('Moderator', { roles: [fake.modRoleId] });
    fake.humanSays(general, mod, '@analyst cancel order 42');
    const mine = () => fake!.posts(general).filter((m) => m.webhook_id !== null && m.author.username === 'Analyst');
    const last = await until(() => mine().find((m) => HOW.test(m.content)) ?? null, 'the request with its commands');
    await app.router.idle();
    const [, id, digest] = HOW.exec(last.content)!;
    return { msgs: mine(), id: id!, digest: digest!, approve: (text: string) => fake!.humanSays(general, mod, text) };
  }

  const said = (text: string) => until(() => fake!.posts(general).some((m) => m.content === text) || null, `"${text}"`);

  it('a 600-character argument is shown whole in one code block; /approve runs exactly those arguments; nothing pings', async () => {
    const input = { id: 42, note: crafted(600) };
    const { msgs, id, digest, approve } = await ask(input);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.content).toContain(input.note);
    expect(argsShown(msgs)).toBe(JSON.stringify(input, null, 2));
    expect(digest).toBe(callDigest('orders', 'cancel', input));
    expect(msgs[0]!.allowed_mentions).toEqual({ parse: [] });

    approve(`/approve ${id}`);
    await said('Done.');
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });

  it('a 6,000-character argument goes in parts saying "part k of n", every character shown, the commands on the last part only', async () => {
    const input = { id: 42, items: Array.from({ length: 120 }, (_, i) => `line item ${i}`), note: crafted(6000) };
    const { msgs, id, digest, approve } = await ask(input);
    expect(msgs.length).toBeGreaterThanOrEqual(4);
    expect(msgs.length).toBeLessThanOrEqual(5);
    expect(msgs.map((m) => HOW.test(m.content))).toEqual(msgs.map((_, i) => i === msgs.length - 1));
    expect(argsShown(msgs)).toBe(JSON.stringify(input, null, 2));
    for (const m of msgs) expect(m.allowed_mentions).toEqual({ parse: [] });

    approve(`/approve ${id} #${digest}`);
    await said('Done.');
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });

  it('backticks cannot close the code block: they are JSON-escaped and read back as the same arguments; mentions stay text', async () => {
    const input = { id: 42, note: '```\n@everyone <@123> **bold** ``` `tick` \\u0060 literal' };
    const { msgs } = await ask(input);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.content).toContain('(Backticks in the arguments are shown as \\u0060');
    expect(JSON.parse(argsShown(msgs))).toEqual(input);
    expect(msgs[0]!.allowed_mentions).toEqual({ parse: [] });
  });

  it('arguments too long to read in the chat (100 KB) come as a .json file under a message saying to read it', async () => {
    const input = { id: 42, blob: '`'.repeat(100_000) };
    const { msgs, id, approve } = await ask(input);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.content).toMatch(/^🔧 Analyst wants to use orders\.cancel\nThe arguments \(100,\d{3} characters of JSON\) are in the attached file t\d+\S*-arguments\.json: read it before you decide\.\n/);
    expect(msgs[0]!.attachments).toEqual([expect.objectContaining({ filename: `${id}-arguments.json`, sha256: createHash('sha256').update(JSON.stringify(input, null, 2)).digest('hex') })]);

    approve(`/approve ${id}`);
    await said('Done.');
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });

  it('/approve naming another digest is refused and runs nothing; the shown digest approves', async () => {
    const input = { id: 42, note: crafted(600) };
    const { id, digest, approve } = await ask(input);
    approve(`/approve ${id} #ffffffffff`);
    await said(`⚠ tool call ${id} is not the one shown with #ffffffffff: its arguments differ; read its request again`);
    await app!.router.idle();
    expect(tools.ran).toEqual([]);

    approve(`/approve ${id} ${digest}`);
    await said('Done.');
    await app!.router.idle();
    expect(tools.ran).toEqual([{ tool: 'cancel', input }]);
  });
});
