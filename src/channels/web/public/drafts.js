// Drafts, one per group, kept in this browser: what is typed in one room stays with that room
// (switching rooms never carries text over, so Enter cannot post it to the wrong one), and a
// reload or a closed tab brings it back. Storage can be unavailable or full: drafts then live as
// long as the page.
const KEY = 'chorus.drafts';
/** Old drafts beyond this many are dropped, oldest first, so storage stays small. */
const MAX_DRAFTS = 50;

let memory = null;

function readAll() {
  if (memory) return memory;
  try {
    const value = JSON.parse(localStorage.getItem(KEY) || '{}');
    memory = value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    memory = {};
  }
  return memory;
}

function writeAll(all) {
  memory = all;
  try {
    localStorage.setItem(KEY, JSON.stringify(all));
  } catch {
    // Kept in memory only.
  }
}

/** The draft of `groupId` ('' when none). */
export function loadDraft(groupId) {
  const d = groupId ? readAll()[groupId] : null;
  return d && typeof d.text === 'string' ? d.text : '';
}

/** Keep `text` as the draft of `groupId`; blank text removes it. */
export function saveDraft(groupId, text) {
  if (!groupId) return;
  const all = { ...readAll() };
  if (!text.trim()) {
    if (!(groupId in all)) return;
    delete all[groupId];
  } else {
    all[groupId] = { text, ts: Date.now() };
    const ids = Object.keys(all);
    if (ids.length > MAX_DRAFTS) {
      ids.sort((a, b) => (all[a].ts || 0) - (all[b].ts || 0));
      for (const id of ids.slice(0, ids.length - MAX_DRAFTS)) delete all[id];
    }
  }
  writeAll(all);
}

// Another tab of the same browser may change the drafts: read them afresh next time.
window.addEventListener('storage', (ev) => {
  if (ev.key === KEY || ev.key === null) memory = null;
});
