/**
 * An acknowledged upload is on disk: the real daemon (file store, fsync on) takes a multipart
 * message with a 3 MB image and is SIGKILLed the moment its 202 arrives. After a restart the
 * message is in the transcript with its attachment, and `GET /api/files/:id` serves the very bytes
 * that were posted. Several rounds, so the kill lands at different points after the acknowledgement.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, startDaemon } from './daemon.js';
import { samplePng, sha256 } from '../helpers/sample-files.js';

const WEB_TOKEN = 'web-file-crash-5c2e1a-SECRET';
const AUTH = { authorization: `Bearer ${WEB_TOKEN}` };
const dirs: string[] = [];

afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string): string {
  const path = join(dir, 'chorus.yaml');
  writeFileSync(
    path,
    `data_dir: ${join(dir, 'data')}
log_level: info
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse charts." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
channels:
  web: { host: 127.0.0.1, port: 0, auth_token: ${WEB_TOKEN} }
groups:
  - { channel: web, chat_id: room, title: Charts, participants: [analyst] }
`,
  );
  return path;
}

interface Entry {
  id: string;
  kind: string;
  text: string;
  attachments?: Array<{ id: string; name: string; type: string; size: number; sha256: string }>;
}

async function transcript(url: string): Promise<Entry[]> {
  const res = await fetch(`${url}/api/groups/room/messages?limit=500`, { headers: AUTH });
  return ((await res.json()) as { messages: Entry[] }).messages;
}

describe('files across SIGKILL (real daemon, file store)', () => {
  it('a file acknowledged with 202 is there, whole, after kill -9 and a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-file-crash-'));
    dirs.push(dir);
    const config = writeConfig(dir);
    const posted: Array<{ text: string; sha: string }> = [];
    for (let round = 0; round < 3; round++) {
      const daemon = await startDaemon(config);
      // About 3 MB of PNG that does not compress away (each pixel differs).
      const png = samplePng(1000, 1000, round, true);
      const form = new FormData();
      const text = `chart number ${round}`;
      form.set('text', text);
      form.set('author_name', 'Maya');
      form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), `chart-${round}.png`);
      const res = await fetch(`${daemon.url}/api/groups/room/messages`, { method: 'POST', headers: AUTH, body: form });
      expect(res.status).toBe(202);
      // Acknowledged: kill it now, before it can write anything else.
      daemon.kill('SIGKILL');
      await daemon.exited;
      posted.push({ text, sha: sha256(png) });
    }

    const daemon = await startDaemon(config);
    const t = await transcript(daemon.url);
    for (const p of posted) {
      const entry = t.find((e) => e.kind === 'human' && e.text === p.text);
      expect(entry, p.text).toBeDefined();
      expect(entry!.attachments).toHaveLength(1);
      const a = entry!.attachments![0]!;
      expect(a.sha256).toBe(p.sha);
      const file = await fetch(`${daemon.url}/api/files/${a.id}`, { headers: AUTH });
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toMatch(/^image\/png/);
      expect(sha256(new Uint8Array(await file.arrayBuffer()))).toBe(p.sha);
    }
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  }, 180_000);
});
