/**
 * Uploads do not pile up in memory: the real daemon (file store, fsync on) takes eight messages
 * of a 10 MB file each at once, and its resident memory is read from /proc/<pid>/status before,
 * at its peak (VmHWM, the kernel's high-water mark, reset after a warm-up through
 * /proc/<pid>/clear_refs, so no sampling can miss it) and after. Each file is written to disk as
 * it arrives, and only `limits.upload_bytes_in_flight` of them (16 MiB here: one file at a time)
 * is held while they are checked and kept; so the peak grows by less than the 80 MB sent —
 * held whole, as uploads once were, they grew it by about twice that (140–146 MB here). What is
 * left of the growth (30–60 MB here, from run to run) is mostly socket buffers the garbage
 * collector has not taken yet, which is why the bound is the bytes sent and not tighter. Every
 * upload is still acknowledged and kept byte for byte. Linux only (/proc).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, startDaemon } from './daemon.js';
import { sha256 } from '../helpers/sample-files.js';

const FILE_BYTES = 10 * 1024 * 1024 - 4096;
const UPLOADS = 8;
const MB = 1024 * 1024;
const dirs: string[] = [];
const haveProc = existsSync('/proc/self/status');

afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string): string {
  const path = join(dir, 'chorus.yaml');
  writeFileSync(
    path,
    `data_dir: ${join(dir, 'data')}
log_level: warn
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You read documents." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only }
limits: { user_messages_per_minute: 1000, upload_bytes_in_flight: ${16 * MB} }
channels:
  web: { host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: room, title: Docs, participants: [analyst] }
`,
  );
  return path;
}

/** A PDF's leading bytes, then noise: a file Chorus takes, that no compression or dedupe makes smaller. */
function document(size: number): Buffer {
  const head = Buffer.from('%PDF-1.4\n');
  return Buffer.concat([head, randomBytes(size - head.length)]);
}

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM). */
function status(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

async function upload(url: string, bytes: Buffer, name: string): Promise<{ status: number; id?: string }> {
  const form = new FormData();
  form.set('text', name);
  form.set('author_name', 'Maya');
  form.append('file', new Blob([new Uint8Array(bytes)], { type: 'application/pdf' }), name);
  const res = await fetch(`${url}/api/groups/room/messages`, { method: 'POST', body: form });
  const body = (await res.json()) as { attachments?: Array<{ id: string }> };
  return { status: res.status, id: body.attachments?.[0]?.id };
}

describe.skipIf(!haveProc)('uploads and memory (real daemon)', () => {
  it('eight concurrent 10 MB uploads grow the peak RSS by less than the bytes sent, and all are kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-upload-mem-'));
    dirs.push(dir);
    const daemon = await startDaemon(writeConfig(dir));
    const pid = daemon.child.pid!;
    // Warm up every code path an upload takes (and the heap it settles into), then measure from there.
    expect((await upload(daemon.url, document(FILE_BYTES), 'warm-up.pdf')).status).toBe(202);
    const files = Array.from({ length: UPLOADS }, () => document(FILE_BYTES));
    const before = status(pid, 'VmRSS');
    // "5" resets the peak resident size to the current one.
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const results = await Promise.all(files.map((f, i) => upload(daemon.url, f, `doc-${i}.pdf`)));
    const peak = status(pid, 'VmHWM');
    const after = status(pid, 'VmRSS');
    const sent = UPLOADS * FILE_BYTES;
    const mb = (n: number) => `${(n / MB).toFixed(1)} MB`;
    const grew = `+${mb(peak - before)}`;
    console.log(`[upload-memory] RSS before ${mb(before)}, peak ${mb(peak)} (${grew}), after ${mb(after)}; sent ${mb(sent)}`);

    expect(results.map((r) => r.status)).toEqual(files.map(() => 202));
    expect(peak - before).toBeLessThan(sent);
    // Kept byte for byte, each under its own id.
    expect(results.map((r) => r.id)).toEqual(files.map((f) => sha256(f)));
    for (const f of files) {
      const id = sha256(f);
      const got = await fetch(`${daemon.url}/api/files/${id}`);
      expect(got.status).toBe(200);
      expect(sha256(Buffer.from(await got.arrayBuffer()))).toBe(id);
    }
    // Nothing is left in the spool once the uploads are kept.
    const spool = join(dir, 'data', 'files', '.uploads');
    expect(existsSync(spool) ? readdirSync(spool) : []).toEqual([]);
  });
});
