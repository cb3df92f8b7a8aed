/**
 * A Store in memory that keeps JSON copies, so what a test reads back is exactly what would have
 * been on disk at that moment (no shared references with the router's live objects).
 */
import type { GroupDoc, SessionDoc, Store } from '../../src/core/ports.js';

export class MemoryStore implements Store {
  readonly groups = new Map<string, string>();
  readonly sessions = new Map<string, string>();
  writes = 0;

  async loadAll() {
    return {
      groups: [...this.groups.values()].map((t) => JSON.parse(t) as GroupDoc),
      sessions: [...this.sessions.values()].map((t) => JSON.parse(t) as SessionDoc),
    };
  }
  async saveGroup(doc: GroupDoc) {
    this.writes++;
    this.groups.set(doc.id, JSON.stringify(doc));
  }
  async saveSession(doc: SessionDoc) {
    this.writes++;
    this.sessions.set(`${doc.groupId}/${doc.agentId}`, JSON.stringify(doc));
  }
  async flush() {}
  async close() {}

  /** The durable copy of a group. */
  group(id: string): GroupDoc {
    const t = this.groups.get(id);
    if (!t) throw new Error(`no stored group ${id}`);
    return JSON.parse(t) as GroupDoc;
  }
  session(groupId: string, agentId: string): SessionDoc {
    return JSON.parse(this.sessions.get(`${groupId}/${agentId}`)!) as SessionDoc;
  }
}
