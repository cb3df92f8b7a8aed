// Chorus web feed: wires the sidebar, feed, composer and panel to the API and the live streams.
import { LiveStream, api, withToken } from './api.js';
import { $, CHANNEL_NAMES, show } from './dom.js';
import { MessageActions } from './actions.js';
import { Composer } from './composer.js';
import { Feed, isNote } from './feed.js';
import { Lightbox, filesSummary } from './fileview.js';
import { setOwnTag, wireNameButton } from './identity.js';
import { jumpTo } from './jump.js';
import { Notifier } from './notify.js';
import { Search } from './search.js';
import { Panel } from './panel.js';
import { Reactions } from './reactions.js';
import { Sidebar } from './sidebar.js';
import { agentOf, lastSeenSeq, loadUnread, markSeen, openGroup, saveUnread, setAgents, state, webJoined, webWritable } from './state.js';

const DECISIONS_KEY = 'chorus.showDecisions';
const BANNER_KEY = 'chorus.bannerDismissed';

const feed = new Feed();
const composer = new Composer();
const panel = new Panel(() => refreshDetail());
const sidebar = new Sidebar((id) => selectGroup(id));
// At phone width the panel covers the screen: what is behind it is inert while it is open.
panel.onToggle = () => sidebar.syncInert();
// The web joined another chat's room with a code: it is listed now, and opened.
panel.room.onJoined = async (id) => {
  await loadGroups();
  await selectGroup(id);
};
const actions = new MessageActions({ feed, composer, notify: (answer) => feed.addLocal(answer) });
const notifier = new Notifier((id) => selectGroup(id));
feed.actionsFor = (e) => actions.control(e);
feed.reactions = new Reactions({ feed });
// A thumbnail in the feed opens its image full size.
new Lightbox(feed.list, $('#lightbox'));
composer.onLocal = (answer) => feed.addLocal(answer);
feed.canStop = () => webWritable(openGroup());
// The emergency brake: no confirm, nothing stored is lost (the notice says who pressed it).
$('#stop-round').addEventListener('click', async () => {
  const id = state.currentId;
  if (!id) return;
  try {
    // No name chosen yet: the notice then says "someone" (never a name that reads as everyone's "You").
    await api('POST', `/api/groups/${encodeURIComponent(id)}/stop`, { author_name: composer.authorName() || undefined });
  } catch (err) {
    feed.addLocal({ kind: 'error', text: '⚠ ' + (err.message || 'Could not stop.') });
  }
});
// Search (Ctrl+K) and jumping to any message: a result, or the message a reply refers to when it
// is not loaded (the reply line's own click handles one that is).
new Search({ currentGroup: () => state.currentId, onPick: (r) => openMessage(r.groupId, r.id) });
$('#messages').addEventListener('click', (ev) => {
  const ref = ev.target instanceof Element ? ev.target.closest('.reply-ref') : null;
  if (ref && state.currentId && !feed.entries.has(ref.dataset.replyTo)) openMessage(state.currentId, ref.dataset.replyTo);
});

async function openMessage(groupId, entryId) {
  try {
    if (state.currentId !== groupId) await selectGroup(groupId);
    if (state.currentId !== groupId) return;
    if (!(await jumpTo(feed, groupId, entryId, () => state.currentId === groupId)) && state.currentId === groupId) {
      feed.addLocal({ kind: 'error', text: '⚠ That message could not be found.' });
    }
  } catch (err) {
    feed.addLocal({ kind: 'error', text: '⚠ ' + (err.message || 'Could not load that message.') });
  }
}

let groupStream = null;
let globalStream = null;
let detailTimer = null;
const streamStates = { global: 'connecting', group: 'idle' };

function setConn(which, s) {
  streamStates[which] = s;
  const states = Object.values(streamStates).filter((x) => x !== 'idle');
  const overall = states.includes('reconnecting') ? 'reconnecting' : states.every((x) => x === 'live') ? 'live' : 'connecting';
  // The sidebar is off screen on a phone, so the chat header carries a copy of the status.
  for (const conn of [$('#conn'), $('#conn-phone')]) {
    conn.dataset.state = overall;
    conn.textContent = overall === 'live' ? 'live' : overall === 'reconnecting' ? 'reconnecting…' : 'connecting…';
  }
}

function renderHeader() {
  const g = openGroup();
  $('#group-title').textContent = g ? g.title : 'Chorus';
  const sub = $('#group-sub');
  $('#panel-toggle').disabled = !g;
  // Replying, asking again and regenerating need a group this page can write to.
  $('#messages').classList.toggle('no-actions', !webWritable(g));
  // Whether Stop may show depends on the group (a writable web room), known only now.
  feed.renderTyping();
  if (!g) {
    sub.textContent = '';
    return;
  }
  const names = g.participants.map((id) => (agentOf(id) || { name: id }).name).join(', ');
  // A room in several chats names them all: "Telegram · also on Web, Discord".
  const also = [...new Set((g.links || []).map((l) => CHANNEL_NAMES[l.channel] || l.channel))];
  const where = `${CHANNEL_NAMES[g.channel] || g.channel}${g.channel === 'web' ? ' room' : webJoined(g) ? '' : ' · read-only'}${also.length ? ' · also on ' + also.join(', ') : ''}`;
  sub.textContent = `${where} · ${names || 'no agents'}${g.config ? ' · ' + g.config.reply_strategy : ''}${g.archived ? ' · dissolved' : ''}`;
}

async function loadGroups() {
  const { groups } = await api('GET', '/api/groups');
  state.groups = new Map(groups.map((g) => [g.id, g]));
  // Counts kept for groups that no longer exist would only inflate the title.
  for (const id of [...state.unread.keys()]) if (!state.groups.has(id)) state.unread.delete(id);
  saveUnread();
  sidebar.render();
}

async function refreshDetail() {
  const id = state.currentId;
  if (!id) return;
  try {
    const { group } = await api('GET', `/api/groups/${encodeURIComponent(id)}`);
    if (state.currentId !== id) return;
    state.detail = group;
    state.groups.set(id, group);
  } catch (err) {
    if (err.status !== 404 || state.currentId !== id) throw err;
    // The group was dissolved (here or elsewhere): move on to another one.
    state.groups.delete(id);
    state.currentId = null;
    state.detail = null;
    if (groupStream) groupStream.close();
    groupStream = null;
    setConn('group', 'idle');
    feed.reset();
    panel.setOpen(false);
    const next = [...state.groups.values()].find((g) => webWritable(g)) || [...state.groups.values()].find((g) => !g.archived);
    if (next) await selectGroup(next.id);
    else {
      history.replaceState(null, '', '#');
      renderHeader();
      composer.update();
      sidebar.render();
    }
    return;
  }
  renderHeader();
  composer.update();
  if (!panel.el.hidden) panel.render();
  sidebar.render();
}

function scheduleDetailRefresh() {
  clearTimeout(detailTimer);
  detailTimer = setTimeout(() => refreshDetail().catch(() => {}), 600);
}

async function loadMessages(id) {
  const page = await api('GET', `/api/groups/${encodeURIComponent(id)}/messages?limit=50`);
  if (state.currentId !== id) return false;
  feed.add(page.messages);
  notifier.learn(page.messages);
  show($('#load-older'), page.hasMore);
  feed.scrollToBottom();
  markSeen(id, feed.lastSeq);
  return true;
}

async function selectGroup(id) {
  if (!state.groups.has(id)) return;
  if (state.currentId === id && state.detail) return;
  if (location.hash !== '#/g/' + encodeURIComponent(id)) history.replaceState(null, '', '#/g/' + encodeURIComponent(id));
  state.currentId = id;
  state.detail = null;
  state.unread.delete(id);
  saveUnread();
  // Read before the messages load: loading them moves the mark to the newest one.
  const since = lastSeenSeq(id);
  if (groupStream) groupStream.close();
  groupStream = null;
  setConn('group', 'connecting');
  feed.reset();
  renderHeader();
  composer.update();
  sidebar.render();
  await refreshDetail();
  if (!(await loadMessages(id))) return;
  if (since !== null) feed.markNewSince(since);
  openGroupStream(id);
  if (!composer.input.disabled && !matchMedia('(max-width: 720px)').matches) composer.input.focus();
}

function onEntry(ev) {
  if (ev.groupId !== state.currentId) return;
  feed.add([ev.entry]);
  markSeen(ev.groupId, feed.lastSeq);
  if (ev.entry.kind === 'agent' || ev.entry.kind === 'human') scheduleDetailRefresh();
}

function openGroupStream(id) {
  let lost = false;
  groupStream = new LiveStream(
    // `inflight`: on every (re)connect the server first says what is being written right now;
    // `batch`: a fast model's chunks come at most one event a frame.
    () => withToken(`/api/groups/${encodeURIComponent(id)}/events`, { after: feed.lastSeq, inflight: 1, batch: 1 }),
    {
      message: onEntry,
      decision: onEntry,
      edited: (ev) => ev.groupId === state.currentId && feed.applyEdit(ev),
      typing: (ev) => ev.groupId === state.currentId && feed.setTyping(ev.agentId, ev.active),
      considering: (ev) => ev.groupId === state.currentId && feed.setConsidering(ev.agentId, ev.active),
      delta: (ev) => ev.groupId === state.currentId && feed.delta(ev),
      inflight: (ev) => ev.groupId === state.currentId && feed.resume(ev),
      member: () => refreshDetail().catch(() => {}),
      config: (ev) => {
        if (state.detail && ev.groupId === state.detail.id) {
          state.detail.config = ev.config;
          renderHeader();
          composer.update();
          if (!panel.el.hidden) panel.render();
        }
      },
      group: () => refreshDetail().catch(() => {}),
      reset: () => {
        feed.reset();
        loadMessages(id).catch(() => {});
      },
    },
    (s) => {
      setConn('group', s);
      // Edits and deletions made while the stream was down are not replayed: read them back.
      if (s === 'reconnecting') lost = true;
      else if (s === 'live' && lost) {
        lost = false;
        catchUpEdits(id).catch(() => {});
      }
    },
  );
  groupStream.open();
}

/** The newest messages as the server has them now: any edited, deleted or reacted to since are drawn again. */
async function catchUpEdits(id) {
  const page = await api('GET', `/api/groups/${encodeURIComponent(id)}/messages?limit=200`);
  if (state.currentId !== id) return;
  const same = (a, b) => JSON.stringify(a || []) === JSON.stringify(b || []);
  for (const m of page.messages) {
    const e = feed.entries.get(m.id);
    if (e && (e.text !== m.text || Boolean(e.deleted) !== Boolean(m.deleted) || !same(e.reactions, m.reactions))) {
      feed.applyEdit({ id: m.id, text: m.text, editedAt: m.editedAt, deleted: m.deleted, deletedAt: m.deletedAt, reactions: m.reactions || [] });
    }
  }
}

function openGlobalStream() {
  const touch = (ev) => {
    const g = state.groups.get(ev.groupId);
    if (!g) {
      loadGroups().catch(() => {});
      return;
    }
    const e = ev.entry;
    if (isNote(e)) return;
    notifier.consider(ev.groupId, e);
    g.lastMessage = { authorName: e.authorName, text: e.text || filesSummary(e), ts: e.ts };
    if (ev.groupId !== state.currentId) {
      state.unread.set(ev.groupId, (state.unread.get(ev.groupId) || 0) + 1);
      saveUnread();
    }
    sidebar.render();
  };
  globalStream = new LiveStream(
    // `inflight`: on every (re)connect the server first says who is typing in every group.
    () => withToken('/api/events', { inflight: 1 }),
    {
      message: touch,
      'typing-all': (ev) => {
        state.typingIn = new Map(Object.entries(ev.typing || {}).map(([id, agents]) => [id, new Set(agents)]));
        sidebar.render();
      },
      typing: (ev) => {
        const set = state.typingIn.get(ev.groupId) || new Set();
        if (ev.active) set.add(ev.agentId);
        else set.delete(ev.agentId);
        state.typingIn.set(ev.groupId, set);
        sidebar.render();
      },
      group: () => loadGroups().catch(() => {}),
      member: (ev) => {
        const g = state.groups.get(ev.groupId);
        if (g) g.participants = ev.participants;
        sidebar.render();
      },
      config: (ev) => {
        const g = state.groups.get(ev.groupId);
        if (g) g.config = ev.config;
      },
    },
    (s) => {
      setConn('global', s);
      // Catch up with what changed while disconnected.
      if (s === 'live') loadGroups().catch(() => {});
    },
  );
  globalStream.open();
}

function groupFromHash() {
  const m = /^#\/g\/(.+)$/.exec(location.hash);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

let loadingOlder = false;
let olderLoaded = () => {};

/** Prepend the page of history before the oldest message shown, keeping the reader's place. */
async function loadOlder() {
  if (loadingOlder || !state.currentId || feed.oldestSeq === null || $('#load-older').hidden) return;
  loadingOlder = true;
  try {
    const id = state.currentId;
    const page = await api('GET', `/api/groups/${encodeURIComponent(id)}/messages?limit=100&before=${feed.oldestSeq}`);
    if (state.currentId !== id) return;
    const scroller = $('#feed');
    const before = scroller.scrollHeight;
    feed.add(page.messages);
    scroller.scrollTop += scroller.scrollHeight - before;
    show($('#load-older'), page.hasMore);
  } finally {
    loadingOlder = false;
  }
  olderLoaded();
}

async function boot() {
  const toggle = $('#show-decisions');
  // Off unless the reader turned them on: passes and cooldowns are for those who look for them.
  toggle.checked = localStorage.getItem(DECISIONS_KEY) === '1';
  feed.setDecisionsVisible(toggle.checked);
  toggle.addEventListener('change', () => {
    localStorage.setItem(DECISIONS_KEY, toggle.checked ? '1' : '0');
    feed.setDecisionsVisible(toggle.checked);
  });
  $('#load-older').addEventListener('click', () => loadOlder());
  // Scrolling up to the top of the feed loads the page before it, back to the first message.
  const sentinel = $('#load-older');
  const olderObserver = new IntersectionObserver((seen) => {
    if (seen.some((e) => e.isIntersecting)) loadOlder();
  }, { root: $('#feed'), rootMargin: '200px 0px 0px 0px' });
  olderObserver.observe(sentinel);
  olderLoaded = () => {
    // Observe afresh: if the button is still in view after a short page, the next one loads too.
    olderObserver.unobserve(sentinel);
    olderObserver.observe(sentinel);
  };
  window.addEventListener('hashchange', () => {
    const id = groupFromHash();
    if (id && id !== state.currentId) selectGroup(id);
  });

  document.addEventListener('keydown', onEscape);
  wireNameButton();
  loadUnread();
  const [info, agents] = await Promise.all([api('GET', '/api/info'), api('GET', '/api/agents')]);
  setOwnTag(info.client);
  setAgents(agents);
  // The scripted-provider notice can be dismissed; it stays away in this browser once it is.
  show($('#banner'), state.scripted && localStorage.getItem(BANNER_KEY) !== '1');
  $('#banner-close').addEventListener('click', () => {
    localStorage.setItem(BANNER_KEY, '1');
    show($('#banner'), false);
  });
  await loadGroups();
  openGlobalStream();
  const wanted = groupFromHash();
  const groups = [...state.groups.values()].filter((g) => !g.archived);
  const first = (wanted && state.groups.has(wanted) && wanted) || (groups.find((g) => webJoined(g)) || groups[0] || {}).id;
  if (first) await selectGroup(first);
  else composer.update();
  document.body.dataset.ready = 'true';
}

/**
 * Escape closes what is open over the feed, the drawer first, then the panel, and gives focus
 * back to the button that opened it. Keys already used inside (a menu, the suggestions, a
 * confirm) and open dialogs (which close themselves) are left alone.
 */
function onEscape(ev) {
  if (ev.key !== 'Escape' || ev.defaultPrevented || document.querySelector('dialog[open]')) return;
  if (sidebar.drawerOpen()) {
    ev.preventDefault();
    sidebar.setOpen(false, true);
  } else if (!panel.el.hidden) {
    ev.preventDefault();
    panel.setOpen(false);
    panel.toggleBtn.focus();
  }
}

boot().catch((err) => {
  for (const conn of [$('#conn'), $('#conn-phone')]) {
    conn.dataset.state = 'reconnecting';
    conn.textContent = err.message || 'Could not load Chorus';
  }
  setTimeout(() => location.reload(), 5000);
});
