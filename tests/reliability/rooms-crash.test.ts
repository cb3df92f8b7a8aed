/**
 * End-to-end crash safety of a room across chats: the real daemon (`src/main.ts start`, via tsx)
 * runs one group whose chats are a Telegram group (fake Bot API), a Discord channel (fake Discord,
 * real discord.js) and the web. Both fakes and the model server run in this test process, so they
 * outlive every daemon. People write on all three while the daemon is SIGKILLed at seeded moments
 * and restarted: some kills land while a post to Discord is on its way (Discord slowed down, so it
 * has created the message and Chorus has not heard so yet), one while Discord is stalled with a
 * backlog owed to it (the held post is acted on after the kill, as a slow Discord would).
 *
 * Discord does not hand a new session the messages it missed, so a kill waits until the messages
 * people wrote on Discord are on disk, and people write there only while a daemon is connected
 * (what Discord cannot give back, no restart can). Telegram keeps unconfirmed updates and the web
 * resends with the same `client_id`, so those are written at any moment.
 *
 * Checked afterwards: every person's message is in the transcript exactly once, from the chat it
 * was written in; every entry owed to a chat (people relayed to the others, agents' replies to
 * both) was posted there, in transcript order, and its outcome in the log says posted; nothing was
 * posted twice on Discord (Chorus looks for a post that may have gone out before posting it
 * again); on Telegram a repeat only where a kill fell between the post and the record of its
 * delivery — decided from the log as it was on disk when the daemon died — and at most one per
 * kill (the chat's queue waits for each outcome to be on disk before its next post); the shared invariants
 * hold; no secret in the logs.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GroupRecord } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { chatKeyOf } from '../../src/core/roomTypes.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { FakeDiscord } from '../fakes/discord/FakeDiscord.js';
import type { FakeUser } from '../fakes/discord/model.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { agentDef, MAYA, TOKENS, USERNAMES, type AgentId } from '../channels/telegram/harness.js';
import { checkInvariants, humanTextsOnDisk, prng, readDataDir } from './invariants.js';
import { killAll, startDaemon, waitIdle, type Daemon } from './daemon.js';
import { crashMessageText, replyFor } from './workload.js';

const SEED = Number(process.env.CHORUS_CRASH_SEED ?? 2626);
/** Messages people write on each platform. */
const PER_PLATFORM = 12;
const TOTAL = PER_PLATFORM * 3;
const KILLS = 4;
const TEAM: AgentId[] = ['analyst', 'writer', 'critic'];
const API_KEY = 'sk-rooms-crash-5e8d1b7a3c-SECRET';
const WEB_TOKEN = 'web-rooms-crash-9b4f2e6d-SECRET';
const DISCORD_TOKEN = 'dc-rooms-crash-7a1c3e5b9d-SECRET';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };
const PLATFORMS = ['telegram', 'discord', 'web'] as const;
type Platform = (typeof PLATFORMS)[number];
const PLATFORM_NAME: Record<Platform, string> = { telegram: 'Telegram', discord: 'Discord', web: 'Web' };
/** Who writes where (the name each chat shows them by). */
const PERSON: Record<Platform, string> = { telegram: 'Maya', discord: 'Lee', web: 'Omar' };
/** Kinds of kill, one each and a second 'created': see the file comment. */
type KillKind = 'created' | 'stall' | 'any';

const isExecute = (method: string, path: string) => method === 'POST' && /^\/webhooks\/\d+\/[^/?]+/.test(path);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let llm: FakeOpenAiServer;
let tg: FakeTelegram;
let dc: FakeDiscord;
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
  tg = await FakeTelegram.start();
  for (const id of TEAM) tg.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name });
  dc = await new FakeDiscord({ token: DISCORD_TOKEN }).start();
});

afterAll(async () => {
  killAll();
  dc?.release();
  await llm?.close();
  await tg?.close();
  await dc?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string, tgChat: number, dcChannel: string): string {
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
  telegram: { enabled: true, api_root: "${tg.apiRoot}", auto_create_groups: false }
  discord: { enabled: true, token: "${DISCORD_TOKEN}", api_base: "${dc.apiBase}" }
groups:
  - { title: Desk, participants: [analyst, writer, critic], chats: [{ channel: telegram, chat_id: "${tgChat}" }, { channel: discord, chat_id: "${dcChannel}" }, { channel: web }] }
`,
  );
  return path;
}

/**
 * What the group logs on disk say right now, read without touching them (a torn last line is
 * skipped): which posts each entry is owed (`seq|slot`, slot `home` for the home chat's own post
 * or a chat key for a copy) and which of those have a recorded outcome.
 */
function deliveriesOnDisk(dataDir: string): { owed: Set<string>; done: Set<string> } {
  const owed = new Set<string>();
  const done = new Set<string>();
  const root = join(dataDir, 'groups');
  if (!existsSync(root)) return { owed, done };
  for (const id of readdirSync(root).filter((n) => !n.startsWith('.') && existsSync(join(root, n, 'log')))) {
    for (const seg of readdirSync(join(root, id, 'log')).filter((n) => n.endsWith('.jsonl')).sort()) {
      for (const line of readFileSync(join(root, id, 'log', seg), 'utf8').split('\n')) {
        let rec: GroupRecord;
        try {
          rec = JSON.parse(line) as GroupRecord;
        } catch {
          continue;
        }
        for (const e of rec.entries ?? []) {
          if (e.delivery === 'pending') owed.add(`${e.seq}|home`);
          for (const k in e.copies ?? {}) if (e.copies![k]!.delivery === 'pending') owed.add(`${e.seq}|${k}`);
        }
        for (const d of rec.delivery ?? []) done.add(`${d.seq}|${d.chat ?? 'home'}`);
      }
    }
  }
  return { owed, done };
}

const stillOwed = (dataDir: string) => {
  const { owed, done } = deliveriesOnDisk(dataDir);
  return [...owed].filter((k) => !done.has(k)).length;
};

async function until(probe: () => boolean, what: string, ms = 30_000, every = 25): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(every);
  }
}

describe('end-to-end crash safety of a room on Telegram, Discord and the web: SIGKILL ×4', () => {
  it('keeps every message once, and posts each entry once in every chat it is owed to, in order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-rooms-crash-'));
    dirs.push(dir);
    const dataDir = join(dir, 'data');
    const tgChat = tg.createGroup('Desk').id;
    for (const id of TEAM) tg.addBotToChat(tgChat, TOKENS[id], MAYA);
    const dcChannel = dc.addChannel('desk');
    const lee: FakeUser = dc.addUser(PERSON.discord);
    const config = writeConfig(dir, tgChat, dcChannel);
    const tgKey = chatKeyOf({ channel: 'telegram', chatId: String(tgChat) });
    const dcKey = chatKeyOf({ channel: 'discord', chatId: dcChannel });
    const rand = prng(SEED);

    // A slow Discord: every webhook post waits a little before it is acted on and after.
    dc.latency = (method, path) => (isExecute(method, path) ? { beforeMs: Math.floor(rand() * 15), afterMs: 10 + Math.floor(rand() * 40) } : undefined);

    // Telegram: a confirmed message must already be in the room's log on disk.
    const confirmed = new Set<string>();
    const confirmedTooEarly: string[] = [];
    tg.onConfirm = (bot, updates) => {
      const texts = updates.map((u) => (u.message as { text?: string } | undefined)?.text).filter((t): t is string => !!t);
      if (texts.length === 0) return;
      const onDisk = new Set(humanTextsOnDisk(dataDir).flatMap((g) => g.texts));
      for (const t of texts) {
        if (!onDisk.has(t)) confirmedTooEarly.push(`${bot}: ${t}`);
        confirmed.add(t);
      }
    };
    const onDiskTexts = () => new Set(humanTextsOnDisk(dataDir).flatMap((g) => g.texts));

    // The daemon of the moment; `up`: connected to Discord and not about to be killed.
    let daemon: Daemon | undefined;
    let up = false;
    let groupId = '';
    const sent: Array<{ platform: Platform; text: string }> = [];
    const webAcked = new Set<string>();
    const dcSent: string[] = [];

    // People write at their own pace on each platform, message i on platform i mod 3.
    const writer = async (p: number) => {
      const platform = PLATFORMS[p]!;
      const pace = prng(SEED * 7 + p);
      for (let i = p; i < TOTAL; i += 3) {
        const text = crashMessageText(i);
        if (platform === 'telegram') tg.humanSays(tgChat, MAYA, text);
        else if (platform === 'discord') {
          while (!up) await sleep(10);
          dc.humanSays(dcChannel, lee, text);
          dcSent.push(text);
        } else {
          // Sent again with the same client_id until a daemon answers 202 (a duplicate is recognised).
          for (;;) {
            const d = daemon;
            if (d && groupId) {
              try {
                const res = await fetch(`${d.url}/api/groups/${groupId}/messages`, {
                  method: 'POST',
                  headers: { ...AUTH, 'content-type': 'application/json' },
                  body: JSON.stringify({ text, client_id: `w${i}`, author_name: PERSON.web }),
                });
                if (res.status === 202) break;
                throw new Error(`${res.status} ${await res.text()}`);
              } catch (err) {
                if (d.child.exitCode === null && d.child.signalCode === null && !/fetch failed/.test(String(err))) throw err;
              }
            }
            await sleep(30);
          }
          webAcked.add(`w${i}`);
        }
        sent.push({ platform, text });
        await sleep(120 + Math.floor(pace() * 200));
      }
    };

    let sessions = 0;
    const startOne = async (): Promise<Daemon> => {
      const d = await startDaemon(config);
      if (!groupId) {
        const { groups } = (await (await fetch(`${d.url}/api/groups`, { headers: AUTH })).json()) as { groups: Array<{ id: string; chatId: string }> };
        groupId = groups.find((g) => g.chatId === String(tgChat))?.id ?? '';
        expect(groupId).not.toBe('');
      }
      daemon = d;
      await until(() => dc.identifies.length > sessions && dc.connectedSessions === 1, 'the daemon to connect to Discord');
      sessions = dc.identifies.length;
      up = true;
      return d;
    };

    const writers = Promise.all([0, 1, 2].map((p) => writer(p)));

    const killAt = Array.from({ length: KILLS }, () => 3 + Math.floor(rand() * (TOTAL * 0.6))).sort((a, b) => a - b);
    const kinds: KillKind[] = ['created', 'stall', 'any', 'created'];
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
    }
    /** Index into tg.posted where each killed lifetime stopped posting, and its log's outcomes then. */
    const killedAtPost: number[] = [];
    const doneAtDeath: Array<Set<string>> = [];
    const midDiscordPost: KillKind[] = [];
    const outputs: string[] = [];
    for (let k = 0; k < KILLS; k++) {
      const d = await startOne();
      await until(() => onDiskTexts().size >= killAt[k]!, `${killAt[k]} messages on disk`, 30_000);
      // What Discord will not give back must be recorded before the kill.
      up = false;
      await until(() => { const on = onDiskTexts(); return dcSent.every((t) => on.has(t)); }, 'the Discord messages on disk', 20_000);
      const kind = kinds[k]!;
      if (kind === 'created') {
        // A post Discord has made and Chorus has not heard of yet.
        await until(() => dc.slow.after > 0, 'a Discord post made and not yet answered', 15_000, 2).catch(() => undefined);
      } else if (kind === 'stall') {
        // Discord stops taking posts; the other chats go on; the held one is acted on after the kill.
        const before = tg.posted.length;
        dc.stall(isExecute);
        await until(() => dc.slow.before > 0 && tg.posted.length >= before + 2, 'a backlog for Discord', 15_000).catch(() => undefined);
      } else await sleep(Math.floor(rand() * 40));
      if (dc.slow.before + dc.slow.after > 0) midDiscordPost.push(kind);
      d.kill('SIGKILL');
      await d.exited;
      daemon = undefined;
      outputs.push(d.output());
      killedAtPost.push(tg.posted.length);
      dc.release();
      await until(() => dc.slow.before + dc.slow.after === 0, 'the fake Discord to act on what it was sent');
      doneAtDeath.push(deliveriesOnDisk(dataDir).done);
    }

    // The last lifetime catches up: every message in, every round done, nothing owed to any chat;
    // then a clean stop and one more start, so anything a restart would resume runs too.
    const settle = async (d: Daemon) => {
      for (;;) {
        await waitIdle(d.url, AUTH, 30_000);
        if (stillOwed(dataDir) === 0) {
          await waitIdle(d.url, AUTH, 30_000);
          if (stillOwed(dataDir) === 0) return;
        }
        await sleep(50);
      }
    };
    let d = await startOne();
    await writers;
    const unconfirmed = () => [...tg.unconfirmed().values()].reduce((a, b) => a + b, 0);
    await until(() => confirmed.size >= PER_PLATFORM && unconfirmed() === 0, 'every Telegram update confirmed');
    await settle(d);
    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    outputs.push(d.output());
    d = await startOne();
    await settle(d);
    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    outputs.push(d.output());

    expect(killedAtPost).toHaveLength(KILLS);
    expect(confirmedTooEarly).toEqual([]);
    expect(sent).toHaveLength(TOTAL);
    expect(webAcked.size).toBe(PER_PLATFORM);
    // At least the 'created' and 'stall' kills fell while a post to Discord was on its way.
    expect(midDiscordPost.length, `kinds ${kinds.join(',')}, mid-post ${midDiscordPost.join(',')}`).toBeGreaterThanOrEqual(2);

    const snap = await readDataDir(dataDir);
    expect(snap.groups).toHaveLength(1);
    const g = snap.groups[0]!;
    expect(g.chatId).toBe(String(tgChat));
    expect(checkInvariants(snap, { acked: new Map([[g.id, webAcked]]), finished: true }), `seed ${SEED}`).toEqual([]);

    // Every person's message is in the transcript exactly once, from the chat it was written in.
    const problems: string[] = [];
    const originOf = (e: TranscriptEntry): Platform => (e.origin?.channel ?? 'telegram') as Platform;
    for (const s of sent) {
      const found = g.transcript.filter((e) => e.kind === 'human' && e.text === s.text);
      if (found.length !== 1) problems.push(`"${s.text}" (${s.platform}) recorded ${found.length} times`);
      else if (originOf(found[0]!) !== s.platform) problems.push(`"${s.text}" recorded as from ${originOf(found[0]!)}, written on ${s.platform}`);
    }

    // What each chat is owed, in transcript order, and how it shows there.
    const owedIn = (key: string, home: boolean) => g.transcript.filter((e) => (home && e.delivery !== undefined) || e.copies?.[key] !== undefined);
    const outcome = (e: TranscriptEntry, key: string, home: boolean) => (home && e.delivery !== undefined ? e.delivery : e.copies?.[key]?.delivery);
    const tgShown = (e: TranscriptEntry) => (e.kind === 'human' ? `${e.authorName} (${PLATFORM_NAME[originOf(e)]}): ${e.text}` : e.text);
    const dcShown = (e: TranscriptEntry) =>
      e.kind === 'human' ? `${e.authorName} · ${PLATFORM_NAME[originOf(e)]}|${e.text}` : `${e.agentId ? agentDef(e.agentId as AgentId).name : 'Chorus'}|${e.text}`;

    let resent = 0;
    const check = (chat: 'telegram' | 'discord', key: string, home: boolean, posts: Array<{ shown: string; index: number }>, shown: (e: TranscriptEntry) => string) => {
      const owed = owedIn(key, home);
      const byShown = new Map(owed.map((e) => [shown(e), e]));
      if (byShown.size !== owed.length) problems.push(`${chat}: two owed entries would look alike`);
      for (const e of owed) if (outcome(e, key, home) !== 'posted') problems.push(`${chat}: entry ${e.seq} (${e.kind}) recorded as ${outcome(e, key, home)}`);
      const firsts: number[] = [];
      const repeatsPerKill = new Map<number, number>();
      const lifetimeOf = (index: number) => killedAtPost.findIndex((end) => index < end);
      for (const { shown: s, index } of posts) {
        const e = byShown.get(s);
        if (!e) {
          problems.push(`${chat}: posted, but owed nothing like it: ${s}`);
          continue;
        }
        if (!firsts.includes(e.seq)) {
          firsts.push(e.seq);
          continue;
        }
        // Discord: never twice. Telegram: again only when its previous post fell in a lifetime
        // killed before the outcome of that post was in the log.
        const prev = posts.filter((x) => x.shown === s && x.index < index).at(-1)!;
        const life = lifetimeOf(prev.index);
        const slot = home && e.delivery !== undefined ? 'home' : key;
        const allowed = chat === 'telegram' && life >= 0 && lifetimeOf(index) !== life && !doneAtDeath[life]!.has(`${e.seq}|${slot}`);
        if (!allowed) problems.push(`${chat}: entry ${e.seq} posted again (post #${index}): ${s}`);
        else {
          resent++;
          // The chat's queue waits for each outcome to be on disk before its next post, so a
          // kill finds at most one post of the chat without its outcome.
          repeatsPerKill.set(life, (repeatsPerKill.get(life) ?? 0) + 1);
          if (repeatsPerKill.get(life)! > 1) problems.push(`${chat}: more than one post repeated after kill ${life + 1}`);
        }
      }
      const want = owed.map((e) => e.seq);
      if (JSON.stringify(firsts) !== JSON.stringify(want)) problems.push(`${chat}: posted ${firsts.join(',')} ≠ owed in order ${want.join(',')}`);
      return owed.length;
    };
    const tgPosts = tg.posted.map((p, index) => ({ p, index })).filter(({ p }) => p.chatId === tgChat).map(({ p, index }) => ({ shown: p.text, index }));
    const dcPosts = dc.posts(dcChannel).filter((m) => m.webhook_id !== null).map((m, index) => ({ shown: `${m.author.username}|${m.content}`, index }));
    const tgOwed = check('telegram', tgKey, true, tgPosts, tgShown);
    const dcOwed = check('discord', dcKey, false, dcPosts, dcShown);
    // Each repeat is checked against the log above, and at most one per kill.
    expect(problems, `seed ${SEED}, ${resent} repeat(s) on Telegram`).toEqual([]);
    // The run really relayed people both ways and posted replies in both chats.
    const replies = g.transcript.filter((e) => e.kind === 'agent').length;
    expect(replies).toBeGreaterThan(3);
    expect(tgOwed).toBeGreaterThanOrEqual(replies + 2 * PER_PLATFORM);
    expect(dcOwed).toBeGreaterThanOrEqual(replies + 2 * PER_PLATFORM);

    // Secrets never reach the logs, not even across crashes.
    const logs = outputs.join('\n');
    for (const secret of [API_KEY, WEB_TOKEN, DISCORD_TOKEN, ...TEAM.map((id) => TOKENS[id])]) expect(logs).not.toContain(secret);
  }, 120_000);
});
