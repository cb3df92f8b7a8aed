/** LowdbStore: one file per group and session, atomic coalesced writes, safe ids, corrupt files kept. */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LowdbStore } from '../../src/store/LowdbStore.js';
import type { GroupDoc } from '../../src/core/ports.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';

function group(id: string, n = 0): GroupDoc {
  return {
    version: 1, id, title: id, channel: 'web', chatId: id, participants: ['a'], createdAt: 0,
    config: { reply_strategy: 'hybrid', max_agent_turns_per_message: 3, max_depth: 2, cooldown_seconds: 2, agent_reply_timeout_seconds: 30, voluntary_timeout_seconds: 15, max_voluntary_responders: 2, sticky: false, last_speaker: null, execution: 'sequential', history_turns: 40 },
    state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} },
    transcript: [], nextSeq: n + 1, rounds: [], seen: [],
  };
}

describe('LowdbStore', () => {
  it('writes one file per group and per session, and reads them back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-store-'));
    const s = new LowdbStore(dir, silentLogger);
    await s.saveGroup(group('alpha'));
    await s.saveSession({ version: 1, groupId: 'alpha', agentId: 'a', history: [], cursor: 3, summary: null, usage: { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 } });
    expect(readdirSync(join(dir, 'groups'))).toEqual(['alpha.json']);
    expect(readdirSync(join(dir, 'sessions', 'alpha'))).toEqual(['a.json']);
    const loaded = await new LowdbStore(dir, silentLogger).loadAll();
    expect(loaded.groups.map((g) => g.id)).toEqual(['alpha']);
    expect(loaded.sessions[0]!.cursor).toBe(3);
  });

  it('coalesces saves made in the same tick into one write with the latest state', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-store-'));
    const s = new LowdbStore(dir, silentLogger);
    const doc = group('beta');
    const saves = [];
    for (let i = 0; i < 50; i++) {
      doc.nextSeq = i;
      saves.push(s.saveGroup(doc));
    }
    await Promise.all(saves);
    expect(s.stats.writes).toBe(1);
    expect(JSON.parse(readFileSync(join(dir, 'groups', 'beta.json'), 'utf8')).nextSeq).toBe(49);
  });

  it('refuses ids that could escape data_dir', async () => {
    const s = new LowdbStore(mkdtempSync(join(tmpdir(), 'chorus-store-')), silentLogger);
    expect(() => s.saveGroup(group('../evil'))).toThrow(/unsafe id/);
    expect(() => s.saveGroup(group('a/b'))).toThrow(/unsafe id/);
  });

  it('moves a corrupt file aside and reports it instead of dropping it silently', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-store-'));
    mkdirSync(join(dir, 'groups'), { recursive: true });
    writeFileSync(join(dir, 'groups', 'broken.json'), '{"id": "broken", "transcr');
    const log = new CapturingLogger();
    const loaded = await new LowdbStore(dir, log).loadAll();
    expect(loaded.groups).toEqual([]);
    expect(readdirSync(join(dir, 'groups')).some((n) => n.startsWith('broken.json.corrupt-'))).toBe(true);
    expect(log.text()).toContain('not valid JSON');
  });
});
