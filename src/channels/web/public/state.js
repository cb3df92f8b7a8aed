// Shared page state: agents and handles, groups, the open group, unread counts.

export const state = {
  agents: [],
  agentById: new Map(),
  /** handle (lower case, no @) → agent id, or 'alias:<name>' for group aliases. */
  handleOwner: new Map(),
  aliases: {},
  builtinAliases: ['all', 'everyone'],
  scripted: false,
  /** `limits.max_message_chars` from the server (its schema default until the page has asked). */
  maxMessageChars: 8000,
  /** `limits.max_file_bytes` and `limits.max_files_per_message` (0 files: this server takes none). */
  maxFileBytes: 0,
  maxFilesPerMessage: 0,
  /** The commands `/` offers: { command, args, summary } (from /api/agents). */
  commands: [],
  groups: new Map(),
  currentId: null,
  /** GroupDetail of the open group. */
  detail: null,
  unread: new Map(),
  /** groupId → agent ids typing there (from the global stream, for the sidebar). */
  typingIn: new Map(),
};

export function setAgents(payload) {
  state.agents = payload.agents || [];
  state.agentById = new Map(state.agents.map((a) => [a.id, a]));
  state.aliases = payload.aliases || {};
  state.builtinAliases = payload.builtinAliases || ['all', 'everyone'];
  state.scripted = Boolean(payload.scriptedProvider);
  const max = payload.limits && payload.limits.max_message_chars;
  if (Number.isSafeInteger(max) && max > 0) state.maxMessageChars = max;
  const limits = payload.limits || {};
  state.maxFileBytes = Number.isSafeInteger(limits.max_file_bytes) && limits.max_file_bytes > 0 ? limits.max_file_bytes : 0;
  state.maxFilesPerMessage = Number.isSafeInteger(limits.max_files_per_message) && limits.max_files_per_message > 0 ? limits.max_files_per_message : 0;
  state.commands = Array.isArray(payload.commands) ? payload.commands.filter((c) => c && typeof c.command === 'string') : [];
  state.handleOwner = new Map();
  for (const a of state.agents) for (const handle of a.handles || [a.id]) state.handleOwner.set(handle.toLowerCase(), a.id);
  for (const name of Object.keys(state.aliases)) state.handleOwner.set(name.toLowerCase(), 'alias:' + name);
  for (const name of state.builtinAliases) state.handleOwner.set(name, 'alias:' + name);
}

export function agentOf(id) {
  return state.agentById.get(id) || null;
}

/** Colour for a known handle ('' for group aliases), null for unknown handles. */
export function handleColor(handle, colorFor) {
  const owner = state.handleOwner.get(handle);
  if (!owner) return null;
  if (owner.startsWith('alias:')) return '';
  return colorFor(agentOf(owner));
}

export function currentGroup() {
  return state.currentId ? state.groups.get(state.currentId) || null : null;
}

/** The open group as best known: its detail once loaded, its summary before. */
export function openGroup() {
  return state.detail || currentGroup();
}

/** The web is one of the group's chats: its home, or a chat of its room (`links`). */
export function webJoined(g) {
  return Boolean(g && (g.channel === 'web' || (g.links || []).some((l) => l.channel === 'web')));
}

/** Whether this page may write to the group (the server's writable.ts asks the same): joined and not dissolved. */
export function webWritable(g) {
  return webJoined(g) && !g.archived;
}

/** Handles that address someone in the open group: member handles, configured aliases, @all/@everyone. */
export function knownHandles() {
  const out = [];
  for (const a of participants()) for (const handle of a.handles || [a.id]) out.push(handle.toLowerCase());
  for (const name of Object.keys(state.aliases)) out.push(name.toLowerCase());
  for (const name of state.builtinAliases) out.push(name.toLowerCase());
  return [...new Set(out)];
}

/** Participants of the open group as agents (falls back to every agent). */
export function participants() {
  const g = state.detail || currentGroup();
  const ids = g ? g.participants : state.agents.map((a) => a.id);
  return ids.map((id) => agentOf(id)).filter(Boolean);
}

// What the reader has caught up on is kept in this browser, so a reload keeps the unread badges
// and can mark where the news starts. Storage can be unavailable (private modes, quota): the page
// then works as before, only without the memory.
const UNREAD_KEY = 'chorus.unread';
const SEEN_KEY = 'chorus.lastSeen';

function readJson(key) {
  try {
    const value = JSON.parse(localStorage.getItem(key) || '{}');
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

function writeJson(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // Not remembered; nothing else depends on it.
  }
}

/** Unread counts as they were when the page was last open. */
export function loadUnread() {
  state.unread = new Map(Object.entries(readJson(UNREAD_KEY)).filter(([, n]) => Number.isSafeInteger(n) && n > 0));
}

export function saveUnread() {
  writeJson(UNREAD_KEY, Object.fromEntries(state.unread));
}

/** The newest seq the reader had on screen in `groupId`, or null if never opened here. */
export function lastSeenSeq(groupId) {
  const seq = readJson(SEEN_KEY)[groupId];
  return Number.isSafeInteger(seq) && seq >= 0 ? seq : null;
}

export function markSeen(groupId, seq) {
  if (!Number.isSafeInteger(seq) || seq <= 0) return;
  const seen = readJson(SEEN_KEY);
  if ((seen[groupId] || 0) >= seq) return;
  seen[groupId] = seq;
  writeJson(SEEN_KEY, seen);
}
