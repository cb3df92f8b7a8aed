// DOM helpers. Everything the page shows is built with createElement + textContent: no
// innerHTML with data anywhere, so message text can never become markup.

/** Create an element. `props`: className, text, dataset, style vars (--x), on<event>, attributes. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'className') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'vars') for (const [k, v] of Object.entries(value)) el.style.setProperty(k, v);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}

export function show(el, visible) {
  el.hidden = !visible;
}

const URL_RE = /\bhttps?:\/\/[^\s<>"'`]+/gi;
const MENTION_RE = /(^|[^\p{L}\p{N}_.@-])@([\p{L}\p{N}_-]{1,32})/gu;
const TRAILING = /[.,;:!?'")\]}]+$/;

/** Only plain http(s) URLs become links. */
function safeHref(raw) {
  try {
    const u = new URL(raw);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * Message text as DOM nodes: text nodes, safe links (rel=noopener, new tab) and highlighted
 * @mentions of known handles. `handleColor(handle)` returns a colour or null when unknown.
 */
export function renderText(text, handleColor) {
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const m of text.matchAll(URL_RE)) {
    let url = m[0];
    const trail = TRAILING.exec(url);
    if (trail) url = url.slice(0, url.length - trail[0].length);
    const start = m.index;
    appendMentions(frag, text.slice(last, start), handleColor);
    const href = safeHref(url);
    if (href) frag.append(h('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank', text: url }));
    else frag.append(document.createTextNode(url));
    last = start + url.length;
  }
  appendMentions(frag, text.slice(last), handleColor);
  return frag;
}

/** Append `text` to `frag`, with @mentions of known handles highlighted. */
export function appendMentions(frag, text, handleColor) {
  let last = 0;
  for (const m of text.matchAll(MENTION_RE)) {
    const at = m.index + m[1].length;
    const color = handleColor(m[2].toLowerCase());
    if (color === null) continue;
    frag.append(document.createTextNode(text.slice(last, at)));
    frag.append(h('span', { className: 'mention', vars: color ? mentionVars(color) : {}, text: '@' + m[2] }));
    last = at + 1 + m[2].length;
  }
  frag.append(document.createTextNode(text.slice(last)));
}

const PALETTE = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

/** The agent's colour, or a stable one picked from its id. */
export function colorFor(agent) {
  if (agent && /^#[0-9a-fA-F]{6}$/.test(agent.color || '')) return agent.color;
  const id = agent ? agent.id : '?';
  let n = 0;
  for (const ch of id) n = (n * 31 + ch.codePointAt(0)) >>> 0;
  return PALETTE[n % PALETTE.length];
}

/**
 * Backgrounds that agent-coloured text sits on, per theme (app.css: --surface, --surface-2, --bg).
 * A colour is only used for text once it reads at 4.5:1 (WCAG AA) on every one of them.
 */
const THEME_BACKGROUNDS = {
  light: ['#ffffff', '#f0f2f5', '#f6f7f9'],
  dark: ['#171b23', '#1f2430', '#0f1218'],
};
export const MIN_TEXT_CONTRAST = 4.5;

function rgbOf(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** WCAG 2 relative luminance of an sRGB colour given as [r, g, b] in 0-255. */
export function luminance([r, g, b]) {
  const lin = (c) => {
    const v = c / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

export function contrastRatio(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

const textColorCache = new Map();

/**
 * `hex` moved towards black (light theme) or white (dark theme) in small steps until it reaches
 * 4.5:1 on every background of that theme; colours that already do are returned unchanged, so an
 * agent keeps its own hue wherever it is readable.
 */
export function readableOn(hex, theme) {
  const key = hex + theme;
  if (textColorCache.has(key)) return textColorCache.get(key);
  const bgs = THEME_BACKGROUNDS[theme].map(rgbOf);
  const base = rgbOf(hex);
  const target = theme === 'light' ? 0 : 255;
  let out = hex;
  for (let step = 0; step <= 20; step++) {
    const t = step / 20;
    const rgb = base.map((c) => Math.round(c + (target - c) * t));
    if (bgs.every((bg) => contrastRatio(rgb, bg) >= MIN_TEXT_CONTRAST + 0.05)) {
      out = '#' + rgb.map((c) => c.toString(16).padStart(2, '0')).join('');
      break;
    }
  }
  textColorCache.set(key, out);
  return out;
}

/**
 * Style variables for an agent's colour: --accent (borders, rings: decoration) and the text
 * colours for each theme, which app.css picks with prefers-color-scheme.
 */
export function accentVars(color) {
  return { '--accent': color, '--accent-text-light': readableOn(color, 'light'), '--accent-text-dark': readableOn(color, 'dark') };
}

export function mentionVars(color) {
  return { '--mention': color, '--mention-text-light': readableOn(color, 'light'), '--mention-text-dark': readableOn(color, 'dark') };
}

/** Avatar: an image for http(s) URLs, the emoji otherwise, initials as a fallback. */
export function avatar(agent, size = '') {
  const cls = 'avatar' + (size ? ' avatar-' + size : '');
  const color = colorFor(agent);
  const src = agent && agent.avatar ? agent.avatar.trim() : '';
  if (/^https?:\/\//i.test(src) && safeHref(src)) {
    return h('span', { className: cls, vars: accentVars(color), 'aria-hidden': 'true' }, h('img', { src, alt: '', loading: 'lazy', referrerpolicy: 'no-referrer' }));
  }
  const label = src || initials(agent ? agent.name : '?');
  return h('span', { className: cls + (src ? ' avatar-emoji' : ' avatar-initials'), vars: accentVars(color), 'aria-hidden': 'true', text: label });
}

export function initials(name) {
  const parts = String(name).trim().split(/\s+/).filter(Boolean);
  return (parts.length > 1 ? parts[0][0] + parts[1][0] : (parts[0] || '?').slice(0, 2)).toUpperCase();
}

// Formatters made once: toLocaleTimeString and friends build a new one on every call, a good
// part of what rendering a page of 100 older messages costs.
const TIME = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' });
const SHORT_DATE = new Intl.DateTimeFormat([], { month: 'short', day: 'numeric' });

export function formatTime(ts) {
  const d = new Date(ts);
  if (!Number.isFinite(d.getTime())) return '';
  const now = new Date();
  const time = TIME.format(d);
  if (d.toDateString() === now.toDateString()) return time;
  return SHORT_DATE.format(d) + ' ' + time;
}

export function formatMs(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function formatCost(usd) {
  if (typeof usd !== 'number' || !Number.isFinite(usd)) return '—';
  if (usd === 0) return '$0';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function formatInt(n) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString() : '—';
}

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Simple line icons per channel (paths are constants, never data). */
const CHANNEL_PATHS = {
  web: ['M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18z', 'M3 12h18', 'M12 3c2.5 2.6 3.8 5.6 3.8 9s-1.3 6.4-3.8 9c-2.5-2.6-3.8-5.6-3.8-9S9.5 5.6 12 3z'],
  telegram: ['M21 4L3 11l6 2.2L18 7l-7 7.5V20l3.4-3.8L18 19z'],
  discord: ['M7 7.5c3.3-1.4 6.7-1.4 10 0l1.6 8.3c-1.7 1.3-3.4 2-5.1 2.2l-.8-1.5h-1.4l-.8 1.5c-1.7-.2-3.4-.9-5.1-2.2z', 'M9.5 12.5h.01', 'M14.5 12.5h.01'],
};

export function channelIcon(kind) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '18');
  svg.setAttribute('height', '18');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('fill', 'none');
  svg.setAttribute('stroke', 'currentColor');
  svg.setAttribute('stroke-width', '1.7');
  svg.setAttribute('stroke-linecap', 'round');
  svg.setAttribute('stroke-linejoin', 'round');
  for (const d of CHANNEL_PATHS[kind] || CHANNEL_PATHS.web) {
    const path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}
export const CHANNEL_NAMES = { web: 'Web', telegram: 'Telegram', discord: 'Discord' };
