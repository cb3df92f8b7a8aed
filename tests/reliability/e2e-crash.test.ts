/**
 * End-to-end crash safety: the real daemon (`src/main.ts start`) with the web channel
 * and an OpenAI-compatible fake LLM with latency; 200 messages across 5 groups over HTTP; SIGKILL
 * at 5 seeded random moments, restarted each time; unacknowledged messages are sent again with the
 * same `client_id` (dedupe). Afterwards: every JSON file parses, every 202-acknowledged message is
 * in its transcript once, every round finished, no round turn answered twice (transcript and the
 * SSE stream), every reply seen live is on disk, and the mailbox rule held for each session.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { openSse, type SseConnection } from '../channels/web/sse-client.js';
import { checkInvariants, prng, readDataDir } from './invariants.js';
import { killAll, startDaemon, waitIdle, type Daemon } from './daemon.js';
import { crashMessageText, replyFor } from './workload.js';

const SEED = Number(process.env.CHORUS_CRASH_SEED ?? 777);
const TOTAL = 200;
const GROUPS = ['e0', 'e1', 'e2', 'e3', 'e4'];
const KILLS = 5;
const API_KEY = 'sk-e2e-9f3b2c71d4a8e6f0-SECRET';
const WEB_TOKEN = 'web-e2e-5a7c9e1b3d-SECRET';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };

let llm: FakeOpenAiServer;
const dirs: string[] = [];

beforeAll(async () => {
  const rand = prng(SEED + 1);
  llm = await startFakeOpenAi({
    apiKey: API_KEY,
    reply: (req) => {
      const msgs = req.body['messages'] as Array<{ role: string; content: string }>;
      const system = msgs[0]?.content ?? '';
      const id = /You are \w+ \(@([a-z0-9_-]+)\)/.exec(system)?.[1] ?? '?';
      const turn = msgs.at(-1)?.content ?? '';
      const mustReply = !turn.includes('Reply only if you can add something');
      return { text: replyFor(id, turn, mustReply), delayMs: 5 + Math.floor(rand() * 30) };
    },
  });
});

afterAll(async () => {
  killAll();
  await llm?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string): string {
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
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write prose." }
  - { id: critic, name: Critic, persona: "You critique ideas." }
group_defaults: { cooldown_seconds: 0, history_turns: 1000 }
limits: { user_messages_per_minute: 10000, max_message_chars: 8000 }
channels:
  web: { host: 127.0.0.1, port: 0, auth_token: ${WEB_TOKEN} }
groups:
${GROUPS.map((g) => `  - { channel: web, chat_id: ${g}, title: Room ${g}, participants: [analyst, writer, critic] }`).join('\n')}
`,
  );
  return path;
}

describe('end-to-end crash safety: daemon, web API, SIGKILL ×5', () => {
  it('loses no acknowledged message, finishes every round, delivers no reply twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-e2e-'));
    dirs.push(dir);
    const config = writeConfig(dir);
    const rand = prng(SEED);
    // Kill moments: after this many acknowledgements, plus a random delay.
    const killAt = Array.from({ length: KILLS }, () => 10 + Math.floor(rand() * (TOTAL - 30))).sort((a, b) => a - b);
    const acked = new Map<string, Set<string>>(GROUPS.map((g) => [g, new Set<string>()]));
    const ackCount = () => [...acked.values()].reduce((n, s) => n + s.size, 0);
    const refused: string[] = [];
    const sseSeen: Array<{ groupId: string; id: string; text: string; key: string }> = [];
    let kills = 0;
    let lifetimes = 0;
    let daemon: Daemon | null = null;
    let openStream: SseConnection | null = null;
    const collect = (sse: SseConnection) => {
      for (const ev of sse.events) {
        if (ev.event === 'message' && ev.data?.entry?.kind === 'agent') {
          const e = ev.data.entry;
          sseSeen.push({ groupId: ev.data.groupId, id: e.id, text: e.text, key: `${ev.data.groupId}:${e.roundId}:${e.agentId}:${e.meta?.depth}` });
        }
      }
      sse.close();
    };

    while (ackCount() < TOTAL && lifetimes < 15) {
      lifetimes++;
      daemon = await startDaemon(config);
      const d = daemon;
      const sse: SseConnection = await openSse(`${d.url}/api/events?token=${WEB_TOKEN}`);
      let armed = false;
      const maybeKill = () => {
        if (armed || kills >= KILLS || ackCount() < killAt[kills]!) return;
        armed = true;
        setTimeout(() => d.kill('SIGKILL'), Math.floor(rand() * 30));
      };
      const worker = async (gi: number) => {
        const groupId = GROUPS[gi]!;
        for (let i = gi; i < TOTAL; i += GROUPS.length) {
          if (acked.get(groupId)!.has(`m${i}`)) continue;
          let res: Response;
          try {
            res = await fetch(`${d.url}/api/groups/${groupId}/messages`, {
              method: 'POST',
              headers: { ...AUTH, 'content-type': 'application/json' },
              body: JSON.stringify({ text: crashMessageText(i), client_id: `m${i}`, author_name: 'Maya' }),
            });
          } catch {
            return; // the daemon is gone
          }
          if (res.status === 202) {
            acked.get(groupId)!.add(`m${i}`);
            maybeKill();
          } else refused.push(`${groupId} m${i}: ${res.status} ${await res.text()}`);
        }
      };
      await Promise.all(GROUPS.map((_, gi) => worker(gi)));
      if (armed) {
        await d.exited;
        kills++;
      }
      if (armed) collect(sse);
      else openStream = sse;
    }
    expect(refused).toEqual([]);
    expect(ackCount()).toBe(TOTAL);
    expect(kills).toBe(KILLS);

    // Let the last daemon finish every round, then stop it cleanly and restart once more to let
    // anything a restart resumes run too.
    await waitIdle(daemon!.url, AUTH);
    if (openStream) collect(openStream);
    daemon!.kill('SIGTERM');
    expect((await daemon!.exited).code).toBe(0);
    const last = await startDaemon(config);
    const lastStream = await openSse(`${last.url}/api/events?token=${WEB_TOKEN}`);
    await waitIdle(last.url, AUTH);
    collect(lastStream);
    last.kill('SIGTERM');
    expect((await last.exited).code).toBe(0);

    const snap = await readDataDir(join(dir, 'data'));
    expect(snap.groups.map((g) => g.id).sort()).toEqual(GROUPS);
    expect(checkInvariants(snap, { acked, finished: true }), `seed ${SEED}`).toEqual([]);

    // Every reply seen live was durable (it is on disk, unchanged), and no round turn was
    // delivered twice with different texts.
    const onDisk = new Map(snap.groups.flatMap((g) => g.transcript.map((e) => [`${g.id}|${e.id}`, e.text] as const)));
    const lost = sseSeen.filter((s) => onDisk.get(`${s.groupId}|${s.id}`) !== s.text);
    expect(lost.map((s) => `${s.groupId} ${s.id}`)).toEqual([]);
    const byKey = new Map<string, Set<string>>();
    for (const s of sseSeen) byKey.set(s.key, (byKey.get(s.key) ?? new Set()).add(s.text));
    expect([...byKey].filter(([, t]) => t.size > 1).map(([k]) => k)).toEqual([]);
    expect(sseSeen.length).toBeGreaterThan(0); // batching under load decides how many

    // Secrets never reach the logs.
    const logs = `${daemon!.output()}\n${last.output()}`;
    expect(logs).not.toContain(API_KEY);
    expect(logs).not.toContain(WEB_TOKEN);
  }, 120_000);
});
