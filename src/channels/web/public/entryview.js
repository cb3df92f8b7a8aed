// How one entry of the feed looks: a person's message, an agent's reply (with its details and
// tags), a system notice or a decision line, each with its time (an agent's tool steps: toolview.js;
// the reactions under a message: reactions.js; the files it carries: fileview.js). The feed (feed.js) decides where
// entries go; this only builds them. Message text is Markdown (markdown.js), finished by
// msgbody.js; a reply that streamed on this page keeps what was rendered while it streamed.
import { CHANNEL_NAMES, accentVars, avatar, colorFor, formatCost, formatInt, formatMs, formatTime, h } from './dom.js';
import { isOwn, personColor } from './identity.js';
import { markdownReady, renderMarkdown } from './markdown.js';
import { finishBody, messageBody } from './msgbody.js';
import { attachmentsView, filesSummary } from './fileview.js';
import { agentOf, handleColor, openGroup } from './state.js';
import { seenRow } from './seen.js';

export const DECISION_ICONS = { pass: '·', cooldown: '⏳', cap: '⛔', error: '⚠', muted: '🔇', depth: '↳', batch: '≡', selector: '🎯', stopped: '⏹' };
/** Bidi controls and invisible characters: names stored before the server cleaned them still show plainly. */
const NAME_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0]/g;

/**
 * Where a person's message was written, when that is not the web: a room spans several chats, and
 * people elsewhere are shown with their platform ("Maya · Telegram") as words, not colour alone.
 * An entry says where it came from (`origin`); one without came from the group's home chat.
 */
function platformTag(e) {
  const g = openGroup();
  const where = e.origin ? e.origin.channel : g ? g.channel : 'web';
  if (!where || where === 'web') return null;
  const name = CHANNEL_NAMES[where] || where;
  return h('span', { className: 'platform-tag platform-' + where, title: `written on ${name}`, text: name });
}

export function visibleName(name) {
  return String(name || '').replace(NAME_CONTROLS, '').trim() || 'someone';
}

const colorOfHandle = (handle) => handleColor(handle, colorFor);

/** Markdown text as a fragment, with the @mentions of known handles in their colours. */
export function markdownText(value) {
  return renderMarkdown(String(value ?? ''), colorOfHandle);
}

/** A finished message's text (msgbody.js: direction, folding, code colours). */
function body(value) {
  return messageBody(value, markdownText, textClass(), colorOfHandle);
}

function textClass() {
  // Markdown output is made of blocks (paragraphs, lists); the plain-text fallback keeps newlines.
  return markdownReady() ? 'text md' : 'text';
}

/**
 * The text of a reply that streamed on this page keeps the blocks rendered while it streamed
 * (streaming.js), so the end of a long reply is not rendered again from its first word in one
 * long task. `view` is its StreamView, or null: then the text is rendered now.
 */
function replyBody(e, view) {
  if (!view || !markdownReady()) return body(e.text);
  const source = String(e.text ?? '');
  const done = view.finish(source, () => {
    // Finished in a later task: the "Show more" button, if any, goes in after the text.
    const nodes = finishBody(view.el, source, colorOfHandle);
    if (Array.isArray(nodes)) nodes[0].after(...nodes.slice(1));
  });
  return done ? finishBody(view.el, source, colorOfHandle) : view.el;
}

/**
 * The list item of entry `e`. `feed` gives the actions control (`actionsFor`), the entries a
 * reply can point to and the list to find them in; `view` is the StreamView of the reply's
 * bubble when it streamed here.
 */
export function renderEntry(feed, e, view = null) {
  const base = { dataset: { entryId: e.id, seq: String(e.seq), kind: e.kind, ...dayData(e.ts) } };
  if (e.kind === 'decision' || e.decision) return renderDecision(e, base);
  // Tool steps and requests for approval (toolview.js, owned by the feed).
  if (e.kind === 'tool' && e.tool) return feed.tools.render(e, base);
  if (e.kind === 'system') {
    return h('li', { className: 'msg system', ...base },
      h('div', { className: 'system-body' }, h('span', { className: 'system-label', text: 'Chorus' }), body(e.text)),
      timeEl(e.ts));
  }
  if (e.kind === 'human') {
    // People are marked as people: no avatar or @handle, and a "person" tag, so a person who
    // calls themselves "Analyst" (on Telegram, say) never looks like the agent. This reader's
    // own messages (sent from this browser) sit on the right; everyone else's on the left, in a
    // colour of their own. The name is isolated (<bdi>) and cleaned so right-to-left tricks
    // cannot reorder it.
    // A deleted message keeps its place and author, never its text; an edited one says so.
    const own = isOwn(e);
    const rx = reactable(feed, e);
    return h('li', { className: `msg human ${own ? 'own' : 'other'}${e.deleted ? ' deleted' : ''}`, vars: own ? null : accentVars(personColor(e)), ...base },
      h('div', { className: 'bubble' },
        h('div', { className: 'meta' },
          h('bdi', { className: 'author', text: visibleName(e.authorName) }),
          e.authorKind === 'bot'
            ? h('span', { className: 'role-tag bot-tag', title: 'a bot, not one of the agents', text: 'bot' })
            : h('span', { className: 'role-tag', title: 'a person, not an agent', text: 'person' }),
          platformTag(e),
          timeEl(e.ts),
          e.editedAt && !e.deleted ? editedTag(e.editedAt) : null,
          rx && rx.addButton(),
          e.deleted ? null : feed.actionsFor(e)),
        e.replyTo && !e.deleted ? replyRef(feed, e.replyTo) : null,
        e.deleted ? h('p', { className: 'text deleted-text', text: 'message deleted' }) : textAndFiles(e),
        rx && rx.bar(e)));
  }
  const actions = feed.actionsFor(e);
  const rx = reactable(feed, e);
  const agent = agentOf(e.agentId) || { id: e.agentId || e.authorId, name: e.authorName, avatar: null, color: null };
  const color = colorFor(agent);
  const details = e.meta ? renderDetails(e.meta) : null;
  // Replies recorded with their prompt's reference can show what the agent saw.
  if (details && e.meta.prompt) details.append(seenRow(e));
  const detailsBtn = details
    ? h('button', { type: 'button', className: 'details-btn', 'aria-expanded': 'false', title: 'Model, tokens, latency, cost', text: 'details',
        onclick: (ev) => {
          const open = details.hidden;
          details.hidden = !open;
          ev.currentTarget.setAttribute('aria-expanded', String(open));
        } })
    : null;
  return h('li', { className: 'msg agent', vars: accentVars(color), ...base, dataset: { ...base.dataset, agentId: agent.id } },
    avatar(agent),
    h('div', { className: 'bubble' },
      h('div', { className: 'meta' },
        h('span', { className: 'author', text: e.authorName || agent.name }),
        h('span', { className: 'handle', text: '@' + agent.id }),
        timeEl(e.ts),
        regenTag(e),
        stoppedTag(e),
        detailsBtn,
        rx && rx.addButton(),
        actions),
      questionRef(feed, e),
      replyBody(e, view),
      attachmentsView(e),
      rx && rx.bar(e),
      details));
}

/** A message's text, then its files; a message of files alone has no empty text block. */
function textAndFiles(e) {
  const files = attachmentsView(e);
  const text = files && !String(e.text ?? '').trim() ? null : body(e.text);
  return [text, files];
}

/** What draws reactions (reactions.js) when `e` takes them: a person's or an agent's message, not deleted, not a command. */
function reactable(feed, e) {
  return feed.reactions && !e.deleted && !e.hiddenFromAgents ? feed.reactions : null;
}

/**
 * An answer given on request ("Ask <agent> again", Retry on a failure): it may come long after
 * the question, below other messages, so it names the question and a click jumps there (loading
 * it when it is far back: app.js handles a reference whose message is not loaded). Told from the
 * entries alone, so it shows the same after a reload: a reply made to answer one given message
 * (its prompt was forced about it), or a second reply of the same agent to the same question.
 * A regenerated reply shares the first answer's bubble and needs no reference.
 */
function questionRef(feed, e) {
  const m = e.meta;
  if (!m || !m.answers || m.regenerates) return null;
  const forced = m.prompt && m.prompt.ask && m.prompt.ask.kind === 'forced';
  let again = forced;
  if (!again) {
    for (const other of feed.entries.values()) {
      if (other.kind === 'agent' && other.agentId === e.agentId && other.seq < e.seq && other.meta && other.meta.answers === m.answers) {
        again = true;
        break;
      }
    }
  }
  if (!again) return null;
  const ref = replyRef(feed, m.answers);
  ref.classList.add('question-ref');
  ref.title = 'Show the question this answers';
  ref.textContent = ref.textContent.replace(/^↩/, '↪ Answers');
  return ref;
}

/** "↩ Writer: first words…" above a reply; a click brings the message replied to into view. */
function replyRef(feed, id) {
  const target = feed.entries.get(id);
  const who = !target ? null : target.kind === 'agent' ? (agentOf(target.agentId) || { name: target.authorName }).name : visibleName(target.authorName);
  const words = !target ? '' : target.deleted ? 'message deleted' : String(target.text).replace(/\s+/g, ' ').trim() || filesSummary(target);
  const label = target ? `↩ ${who}: ${words.length > 80 ? words.slice(0, 79) + '…' : words}` : '↩ an earlier message';
  return h('button', { type: 'button', className: 'reply-ref', dataset: { replyTo: id }, title: 'Show the message this replies to', text: label,
    onclick: () => {
      const el = feed.elementOf(id);
      if (!el || !el.isConnected) return;
      el.scrollIntoView({ block: 'center' });
      el.classList.add('flash');
      setTimeout(() => el.classList.remove('flash'), 1200);
    } });
}

function renderDecision(e, base) {
  const d = e.decision || { type: 'pass' };
  const agent = d.agentId ? agentOf(d.agentId) : null;
  let text = (e.text || '').trim();
  if (!text) {
    const who = agent ? agent.name : 'An agent';
    text = { pass: `${who} passed`, cooldown: `${who} is cooling down`, cap: 'Turn cap reached', error: `${who} could not reply`, muted: `${who} is muted` }[d.type] || d.type;
    if (d.detail) text += ` (${d.detail})`;
  }
  const icon = DECISION_ICONS[d.type] || '·';
  const label = text.startsWith(icon) ? text : `${icon} ${text}`;
  // A notice that an agent could not answer someone offers to ask it again (actions.js).
  const retry = e.kind === 'system' && d.type === 'error' && d.agentId
    ? h('button', { type: 'button', className: 'btn btn-small retry-btn', dataset: { agentId: d.agentId }, text: 'Retry',
        'aria-label': `Retry: ask ${agent ? agent.name : d.agentId} again`, title: 'Ask this agent again about the same message' })
    : null;
  return h('li', { className: `msg decision decision-${d.type}`, ...base, dataset: { ...base.dataset, decision: d.type } },
    h('span', { className: 'text', text: label }),
    retry,
    timeEl(e.ts));
}

function renderDetails(meta) {
  const u = meta.usage || {};
  const inTotal = (u.inputTokens || 0) + (u.cacheReadTokens || 0) + (u.cacheWriteTokens || 0);
  const share = inTotal > 0 ? Math.round(((u.cacheReadTokens || 0) / inTotal) * 100) : 0;
  const rows = [
    ['Model', meta.model || '—'],
    ['Why', meta.reason ? meta.reason + (meta.depth ? ` (depth ${meta.depth})` : '') : '—'],
    ['Tokens', `${formatInt(u.inputTokens)} in · ${formatInt(u.outputTokens)} out`],
    ['Cache', `${share}% read from cache (${formatInt(u.cacheReadTokens || 0)} read, ${formatInt(u.cacheWriteTokens || 0)} written)`],
    ['Latency', formatMs(meta.latencyMs)],
    ['Cost', meta.costUsd === null ? 'price unknown' : formatCost(meta.costUsd)],
  ];
  return h('dl', { className: 'details', hidden: true }, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]));
}

// Made once: toLocaleDateString and toLocaleString build a new formatter on every call, and a
// page of history needs a few per message.
const DAY_LABEL = new Intl.DateTimeFormat([], { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' });
const FULL_TIME = new Intl.DateTimeFormat([], { dateStyle: 'full', timeStyle: 'medium' });

/** The local day of `ts`: a key to compare and the words a date line shows. */
export function dayData(ts) {
  const d = new Date(ts);
  if (!Number.isFinite(d.getTime())) return {};
  return { day: d.toDateString(), dayLabel: DAY_LABEL.format(d) };
}

/** "stopped" on a reply cut by Stop: what it had written until then was kept. */
function stoppedTag(e) {
  if (!e.meta || e.meta.cut !== 'stopped') return null;
  return h('span', { className: 'stopped-tag', title: 'Stopped while writing: this is what it had written until then', text: '⏹ stopped' });
}

/** "another answer" on a regenerated reply: the first answer is kept above it. */
function regenTag(e) {
  if (!e.meta || !e.meta.regenerates) return null;
  return h('span', { className: 'regen-tag', title: 'Regenerated: another answer to the same message; the earlier answers are kept (‹ › switches between them)', text: '↻ another answer' });
}

/** A time: short on the line, the full date and time on hover. */
/** "edited" and the time of the edit (the full date on hover). */
function editedTag(at) {
  const el = h('time', { className: 'edited-tag', text: `edited ${formatTime(at)}` });
  const d = new Date(at);
  if (Number.isFinite(d.getTime())) {
    el.setAttribute('datetime', d.toISOString());
    el.title = `edited ${d.toLocaleString()}`;
  }
  return el;
}

function timeEl(ts) {
  const el = h('time', { className: 'time' });
  setTime(el, ts);
  return el;
}

export function setTime(el, ts) {
  const d = new Date(ts);
  el.textContent = formatTime(ts);
  if (!Number.isFinite(d.getTime())) return;
  el.setAttribute('datetime', d.toISOString());
  el.title = FULL_TIME.format(d);
}
