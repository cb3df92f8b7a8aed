/**
 * End-to-end crash safety on Telegram: the real daemon (`src/main.ts start`, via tsx)
 * with the Telegram channel talking to the fake Bot API, which runs in this test process and so
 * outlives every daemon. Humans keep writing in three group chats while the daemon is SIGKILLed at
 * seeded moments and restarted; Telegram keeps every update a bot has not confirmed.
 *
 * Checked: at the moment a bot confirms an update, its message is already in the group file on
 * disk; afterwards every file parses, every human message is in its transcript exactly once,
 * every round finished, each agent reply reached the chat, in transcript order, and was posted
 * again only when a kill fell between its post and the save of its delivery state (Telegram has
 * no idempotency key, so that window cannot be closed); the shared invariants hold.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { agentDef, MAYA, TOKENS, USERNAMES, type AgentId } from '../channels/telegram/harness.js';
import { checkInvariants, humanTextsOnDisk, prng, readDataDir } from './invariants.js';
import { killAll, startDaemon, waitIdle, type Daemon } from './daemon.js';
import { crashMessageText, replyFor } from './workload.js';

const SEED = Number(process.env.CHORUS_CRASH_SEED ?? 4242);
const TOTAL = 60;
const CHATS = 3;
const KILLS = 4;
const TEAM: AgentId[] = ['analyst', 'writer', 'critic'];
const API_KEY = 'sk-tg-crash-2d9e4f6a8b-SECRET';
const WEB_TOKEN = 'web-tg-crash-7c1e5a3f-SECRET';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };

let llm: FakeOpenAiServer;
let fake: FakeTelegram;
const dirs: string[] = [];

beforeAll(async () => {
  const rand = prng(SEED + 1);
  llm = await startFakeOpenAi({
    apiKey: API_KEY,
    reply: (req) => {
      const msgs = req.body['messages'] as Array<{ role: string; content: string }>;
      const id = /You are \w+ \(@([a-z0-9_-]+)\)/.exec(msgs[0]?.content ?? '')?.[1] ?? '?';
      const turn = msgs.at(-1)?.content ?? '';
      return { text: replyFor(id, turn, !turn.includes('Reply only if you can add something')), delayMs: 5 + Math.floor(rand() * 30) };
    },
  });
  fake = await FakeTelegram.start();
  for (const id of TEAM) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
});

afterAll(async () => {
  killAll();
  await llm?.close();
  await fake?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string, chats: number[]): string {
  const path = join(dir, 'chorus.yaml');
  writeFileSync(
    path,
    `data_dir: ${join(dir, 'data')}
log_level: info
llm:
  provider: openai
  api_key: ${API_KEY}
  base_url: ${llm.url}
  model: fake-model
  summary_model: fake-small
  max_concurrency: 8
  timeout_seconds: 10
  max_retries: 0
agents:
${TEAM.map((id) => `  - { id: ${id}, name: ${agentDef(id).name}, persona: "You are the ${id}.", telegram: { token: "${TOKENS[id]}" } }`).join('\n')}
group_defaults: { cooldown_seconds: 0, history_turns: 1000 }
limits: { user_messages_per_minute: 10000, max_message_chars: 8000 }
channels:
  web: { host: 127.0.0.1, port: 0, auth_token: ${WEB_TOKEN} }
  telegram: { enabled: true, api_root: "${fake.apiRoot}", auto_create_groups: false }
groups:
${chats.map((c, i) => `  - { channel: telegram, chat_id: "${c}", title: Desk ${i}, participants: [analyst, writer, critic] }`).join('\n')}
`,
  );
  return path;
}

const isReply = (text: string) => / (answers|chimes in|figures) [0-9a-f]{8}\b/.test(text);

describe('end-to-end crash safety on Telegram: daemon, fake Bot API, SIGKILL ×4', () => {
  it('confirms updates only once recorded, loses no message, answers nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-tg-crash-'));
    dirs.push(dir);
    const dataDir = join(dir, 'data');
    const chats = Array.from({ length: CHATS }, (_, i) => fake.createGroup(`Desk ${i}`).id);
    for (const c of chats) for (const id of TEAM) fake.addBotToChat(c, TOKENS[id], MAYA);
    const config = writeConfig(dir, chats);
    const rand = prng(SEED);

    // Confirmation check: a confirmed message must already be in its group's file on disk.
    const confirmedKeys = new Set<string>();
    const confirmedTooEarly: string[] = [];
    fake.onConfirm = (bot, updates) => {
      const msgs = updates.map((u) => u.message as { chat: { id: number }; text?: string } | undefined).filter((m) => m?.text);
      if (msgs.length === 0) return;
      const onDisk = new Set(humanTextsOnDisk(dataDir).flatMap((g) => g.texts.map((t) => `${g.chatId}|${t}`)));
      for (const m of msgs) {
        const key = `${m!.chat.id}|${m!.text}`;
        if (!onDisk.has(key)) confirmedTooEarly.push(`${bot}: ${key}`);
        confirmedKeys.add(key);
      }
    };

    // Humans write at their own pace, whether or not Chorus is up.
    const sent: Array<{ chatId: number; text: string }> = [];
    let sending = true;
    const sender = (async () => {
      for (let i = 0; i < TOTAL; i++) {
        const chatId = chats[i % CHATS]!;
        const text = crashMessageText(i);
        fake.humanSays(chatId, MAYA, text);
        sent.push({ chatId, text });
        await new Promise((r) => setTimeout(r, 60 + Math.floor(rand() * 80)));
      }
      sending = false;
    })();

    const killAt = Array.from({ length: KILLS }, () => 4 + Math.floor(rand() * (TOTAL - 16))).sort((a, b) => a - b);
    /** Index into fake.posted where each lifetime ended by SIGKILL stopped posting. */
    const killedAtPost: number[] = [];
    const outputs: string[] = [];
    let daemon: Daemon | undefined;
    let lifetimes = 0;
    for (let k = 0; k < KILLS && lifetimes < 12; lifetimes++) {
      daemon = await startDaemon(config);
      const deadline = Date.now() + 20_000;
      while (confirmedKeys.size < killAt[k]! && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, Math.floor(rand() * 40)));
      daemon.kill('SIGKILL');
      await daemon.exited;
      outputs.push(daemon.output());
      killedAtPost.push(fake.posted.length);
      k++;
    }
    await sender;
    expect(sending).toBe(false);

    // The last lifetime catches up: every update confirmed, every round done; then a clean stop
    // and one more start, so anything a restart would resume runs too.
    daemon = await startDaemon(config);
    const unconfirmedMessages = () => [...fake.unconfirmed().values()].reduce((a, b) => a + b, 0);
    for (let i = 0; i < 400 && (confirmedKeys.size < TOTAL || unconfirmedMessages() > 0); i++) await new Promise((r) => setTimeout(r, 25));
    await waitIdle(daemon.url, AUTH);
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
    outputs.push(daemon.output());
    daemon = await startDaemon(config);
    await waitIdle(daemon.url, AUTH);
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
    outputs.push(daemon.output());

    expect(killedAtPost).toHaveLength(KILLS);
    expect(confirmedTooEarly).toEqual([]);
    expect(confirmedKeys.size).toBe(TOTAL);

    const snap = await readDataDir(dataDir);
    expect(checkInvariants(snap, { acked: new Map(), finished: true }), `seed ${SEED}`).toEqual([]);
    const byChat = new Map(snap.groups.map((g) => [g.chatId, g]));

    // Every human message is in its transcript exactly once.
    const humanCounts = new Map<string, number>();
    for (const g of snap.groups) for (const e of g.transcript) if (e.kind === 'human') humanCounts.set(`${g.chatId}|${e.text}`, (humanCounts.get(`${g.chatId}|${e.text}`) ?? 0) + 1);
    expect(sent.filter((s) => humanCounts.get(`${s.chatId}|${s.text}`) !== 1).map((s) => `${s.text}: ${humanCounts.get(`${s.chatId}|${s.text}`) ?? 0}`)).toEqual([]);

    // Replies: each recorded one reached its chat; the chat shows them in transcript order; a
    // text shows twice only when its first copy was the last post in its chat before a SIGKILL.
    const lifetimeOf = (index: number) => killedAtPost.findIndex((end) => index < end);
    const problems: string[] = [];
    let replies = 0;
    let resent = 0;
    for (const chatId of chats) {
      const g = byChat.get(String(chatId));
      if (!g) {
        problems.push(`no group for chat ${chatId}`);
        continue;
      }
      const recorded = g.transcript.filter((e) => e.kind === 'agent').map((e) => e.text);
      replies += recorded.length;
      const posts = fake.posted.map((p, index) => ({ p, index })).filter(({ p }) => p.chatId === chatId && isReply(p.text));
      const seen: string[] = [];
      for (const { p, index } of posts) {
        if (!seen.includes(p.text)) {
          seen.push(p.text);
          continue;
        }
        // A repeat is allowed only as the resend of a copy that was the chat's last post in a
        // lifetime ended by SIGKILL (posted, then killed before its delivery state was saved).
        const prev = posts.filter((x) => x.p.text === p.text && x.index < index).at(-1)!;
        const life = lifetimeOf(prev.index);
        const lastInLife = posts.filter((x) => lifetimeOf(x.index) === life).at(-1);
        if (!(life >= 0 && lifetimeOf(index) !== life && lastInLife?.index === prev.index)) problems.push(`chat ${chatId}: "${p.text}" posted again (post #${index})`);
        else resent++;
      }
      const notRecorded = seen.filter((t) => !recorded.includes(t));
      if (notRecorded.length) problems.push(`chat ${chatId}: posted but not recorded: ${notRecorded.join(' | ')}`);
      if (JSON.stringify(seen) !== JSON.stringify(recorded)) problems.push(`chat ${chatId}: chat order ${seen.length} posts ≠ transcript ${recorded.length} replies`);
      const notPosted = g.transcript.filter((e) => e.kind === 'agent' && e.delivery !== 'posted');
      if (notPosted.length) problems.push(`chat ${chatId}: ${notPosted.length} replies not marked posted`);
    }
    expect(problems).toEqual([]);
    // How many replies a run has depends on load (messages waiting together are answered as one
    // batch), so only require that the run really exercised replies; the checks above do the rest.
    expect(replies).toBeGreaterThan(CHATS);
    expect(resent).toBeLessThanOrEqual(KILLS * CHATS);

    // Secrets never reach the logs, not even across crashes.
    const logs = outputs.join('\n');
    for (const secret of [API_KEY, WEB_TOKEN, ...TEAM.map((id) => TOKENS[id])]) expect(logs).not.toContain(secret);
  }, 90_000);
});

