/**
 * The hint after "unknown key" in a config problem. Only a key that exists in the mapping the
 * unknown one was found in is suggested: one list of every key in the file would offer keys of
 * other sections, even the unknown key itself (`id` is an agent's key, not a group's).
 */

/**
 * Words people write for a key that has another name at that place, by the path of the mapping
 * (list indices as `[]`). A declared group has no `id`: it is found by its chat, and a web room's
 * chat id is also the group's id, so the hint names that key rather than a near spelling.
 */
const OTHER_NAMES: Record<string, Record<string, string>> = {
  'groups[]': {
    id: 'a declared group is identified by "chat_id", together with "channel"; a web room\'s chat_id is also its group id',
    group_id: 'a declared group is identified by "chat_id", together with "channel"',
    name: 'a declared group\'s display name is "title"',
    agents: 'a declared group\'s agents are its "participants"',
    members: 'a declared group\'s agents are its "participants"',
  },
};

/** `groups[3]` → `groups[]`, `channels.web` stays: the key of OTHER_NAMES. */
function placeOf(path: ReadonlyArray<PropertyKey>): string {
  return path.map((seg, i) => (typeof seg === 'number' ? '[]' : `${i > 0 ? '.' : ''}${String(seg)}`)).join('');
}

/** "unknown key", with the closest of `keysHere` (within two edits) or what the key is called there. */
export function unknownKeyMessage(key: string, path: ReadonlyArray<PropertyKey>, keysHere: readonly string[]): string {
  const other = OTHER_NAMES[placeOf(path)]?.[key.toLowerCase()];
  if (other && !keysHere.includes(key)) return `unknown key (${other})`;
  let best: string | null = null;
  let bestD = 3;
  for (const k of keysHere) {
    const d = editDistance(key.toLowerCase(), k);
    // 0 would be the key itself (only a different case can get here): say which spelling is right.
    if (d < bestD && k !== key) {
      bestD = d;
      best = k;
    }
  }
  return best ? `unknown key (did you mean "${best}"?)` : 'unknown key';
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}
