// Who this browser is on the feed. There are no accounts: each browser makes a random key once and
// keeps it (localStorage); the server records a one-way tag of it on every message the browser
// sends, and tells the page its own tag (/api/info). Messages carrying that tag are this reader's
// own (drawn on the right), and so are reactions whose `byKey` it is; everyone else's messages sit
// on the left with their name and a colour. The name is asked for before the first message and
// kept in this browser too.
import { $, colorFor, show } from './dom.js';

const KEY_KEY = 'chorus.clientKey';
const NAME_KEY = 'chorus.name';
/** What the server accepts as a key (channels/web/client.ts). */
const KEY_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;

let key = null;
let ownTag = null;

function randomKey() {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** This browser's key, made on first use. Without storage it lasts as long as the page. */
export function clientKey() {
  if (key) return key;
  try {
    const kept = localStorage.getItem(KEY_KEY);
    if (kept && KEY_SHAPE.test(kept)) return (key = kept);
  } catch {
    // No storage: a key for this page only.
  }
  key = randomKey();
  try {
    localStorage.setItem(KEY_KEY, key);
  } catch {
    // Not remembered; messages from an earlier visit then read as someone else's.
  }
  return key;
}

export function setOwnTag(tag) {
  ownTag = typeof tag === 'string' && tag ? tag : null;
}

/** True for a reaction this browser made: its `byKey` is this browser's tag (/api/info `client`). */
export function isOwnReaction(r) {
  return Boolean(ownTag && r && r.byKey === ownTag);
}

/** True for entries this browser sent. */
export function isOwn(e) {
  return Boolean(ownTag && e && e.kind === 'human' && e.clientTag === ownTag);
}

/** A stable colour for another person: per browser when known, else per author id. */
export function personColor(e) {
  return colorFor({ id: 'person:' + (e.clientTag || e.authorId || e.authorName || '?') });
}

/** The name this browser posts under; '' until one is chosen ("You" was the old default, not a choice). */
export function savedName() {
  let name = '';
  try {
    name = (localStorage.getItem(NAME_KEY) || '').trim();
  } catch {
    name = sessionName;
  }
  return name === 'You' ? '' : name;
}

let sessionName = '';
const listeners = new Set();

/** Call `fn(name)` whenever the name changes. */
export function onNameChange(fn) {
  listeners.add(fn);
}

function saveName(name) {
  sessionName = name;
  try {
    localStorage.setItem(NAME_KEY, name);
  } catch {
    // Kept for this page only.
  }
  for (const fn of listeners) fn(name);
}

let asking = null;

/**
 * Ask for a name (the dialog), with `message` shown as the reason when given. Resolves with the
 * name saved, or null when the reader cancels.
 */
export function askName(message = '') {
  if (asking) return asking;
  const dialog = $('#name-dialog');
  const form = $('#name-form');
  const input = $('#author-name');
  const error = $('#name-error');
  const opener = document.activeElement;
  error.textContent = message;
  show(error, Boolean(message));
  input.value = savedName();
  asking = new Promise((resolve) => {
    const done = (name) => {
      form.removeEventListener('submit', onSubmit);
      dialog.removeEventListener('close', onClose);
      asking = null;
      if (dialog.open) dialog.close();
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      resolve(name);
    };
    const onSubmit = (ev) => {
      ev.preventDefault();
      const name = input.value.trim();
      if (!name) {
        error.textContent = 'Type the name others will see next to your messages.';
        show(error, true);
        input.focus();
        return;
      }
      saveName(name);
      done(name);
    };
    const onClose = () => done(null);
    form.addEventListener('submit', onSubmit);
    dialog.addEventListener('close', onClose);
    if (!dialog.open) dialog.showModal();
    input.focus();
    input.select();
  });
  return asking;
}

/** The saved name, or the dialog's answer when there is none yet (null: the reader cancelled). */
export async function ensureName() {
  return savedName() || askName();
}

/** The "Your name" button in the sidebar: shows the name and opens the dialog. */
export function wireNameButton() {
  const btn = $('#name-btn');
  const render = () => {
    const name = savedName();
    btn.textContent = name ? `👤 ${name}` : '👤 Choose a name';
    btn.setAttribute('aria-label', name ? `Your name: ${name}. Change it` : 'Choose the name others see');
  };
  btn.addEventListener('click', () => askName());
  $('#name-cancel').addEventListener('click', () => $('#name-dialog').close());
  onNameChange(render);
  render();
}
