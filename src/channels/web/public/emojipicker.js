// The picker of reactions (reactions.js fetches it the first time it opens, so the first load of
// the page does not carry it): a grid of common emoji and a field for any other one. Arrow keys,
// Home and End move in the grid; Enter, Space or a click picks; Escape closes. Picking or Escape
// gives the focus back to the button that opened it; a click elsewhere or tabbing out just closes.
// It imports nothing: the caller hands it dom.js's `h`, so dom.js stays in the page's one script
// instead of moving to a chunk shared with this one (one more request on every first load).

export const COMMON = [
  ['👍', 'thumbs up'], ['👎', 'thumbs down'], ['❤️', 'red heart'], ['😂', 'tears of joy'], ['😮', 'surprised'], ['😢', 'sad'],
  ['🎉', 'party'], ['🙏', 'thank you'], ['👀', 'eyes'], ['🔥', 'fire'], ['✅', 'done'], ['❌', 'no'],
  ['💯', 'hundred points'], ['🚀', 'rocket'], ['🤔', 'thinking'], ['👏', 'clapping'], ['😄', 'smiling'], ['😍', 'love it'],
  ['🙌', 'raised hands'], ['💡', 'idea'], ['⭐', 'star'], ['⚠️', 'warning'], ['👌', 'OK'], ['🤝', 'handshake'],
];
const COLUMNS = 6;

// What the server takes as one emoji (core/text/emoji.ts): it decides; this only saves a round trip.
const MOD = String.raw`(?:\p{Emoji_Modifier}|\uFE0F|\uFE0E|[\u{E0020}-\u{E007F}])`;
const PICTOGRAPH = String.raw`\p{Extended_Pictographic}${MOD}*`;
const EMOJI = new RegExp(String.raw`^(?:${PICTOGRAPH}(?:\u200D${PICTOGRAPH})*|\p{Regional_Indicator}{2}|[0-9#*]\uFE0F?\u20E3)$`, 'u');

export function isOneEmoji(text) {
  if (!text || text.length > 32 || !EMOJI.test(text)) return false;
  if (typeof Intl.Segmenter !== 'function') return true;
  return [...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)].length === 1;
}

/**
 * Open the picker beside `opener` (inside its parent, which is positioned), kept within
 * `scroller` sideways; `h` builds its elements (dom.js). `onPick(emoji)` once one is chosen;
 * `onClose()` whenever it closes. Returns `{ opener, close(returnFocus) }`.
 */
export function openPicker({ h, opener, scroller, onPick, onClose }) {
  const buttons = COMMON.map(([emoji, name], i) => h('button', { type: 'button', className: 'emoji-pick', dataset: { emoji }, tabindex: i === 0 ? '0' : '-1', 'aria-label': `${emoji} ${name}`, title: name, text: emoji }));
  const grid = h('div', { className: 'emoji-grid', role: 'group', 'aria-label': 'Common emoji' }, buttons);
  const field = h('input', { type: 'text', className: 'emoji-field', 'aria-label': 'Any emoji', placeholder: 'Any emoji', maxlength: '32', autocomplete: 'off', spellcheck: 'false' });
  const error = h('p', { className: 'emoji-error', role: 'status' });
  const form = h('form', { className: 'emoji-form' }, field, h('button', { type: 'submit', className: 'btn btn-small', text: 'Add' }));
  const box = h('div', { className: 'popup emoji-picker', role: 'dialog', 'aria-label': 'Add a reaction' }, grid, form, error);
  const li = opener.closest('.msg');

  let closed = false;
  const close = (returnFocus) => {
    if (closed) return;
    closed = true;
    document.removeEventListener('pointerdown', outside, true);
    box.remove();
    opener.setAttribute('aria-expanded', 'false');
    li?.classList.remove('menu-open');
    if (returnFocus && opener.isConnected) opener.focus();
    onClose();
  };
  // The opener's own click closes it (reactions.js), so it is not "outside".
  const outside = (ev) => {
    if (!box.contains(ev.target) && !opener.contains(ev.target)) close(false);
  };
  const pick = (emoji) => {
    close(true);
    onPick(emoji);
  };

  grid.addEventListener('click', (ev) => {
    const b = ev.target.closest('.emoji-pick');
    if (b) pick(b.dataset.emoji);
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = field.value.trim();
    if (isOneEmoji(value)) pick(value);
    else {
      error.textContent = value ? 'Type one emoji, like 🦄.' : 'Type an emoji first.';
      field.focus();
    }
  });
  field.addEventListener('input', () => (error.textContent = ''));
  box.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      ev.stopPropagation();
      close(true);
      return;
    }
    const at = buttons.indexOf(ev.target);
    if (at < 0) return;
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: COLUMNS, ArrowUp: -COLUMNS, Home: -at, End: buttons.length - 1 - at }[ev.key];
    if (step === undefined) return;
    ev.preventDefault();
    move(buttons[Math.min(buttons.length - 1, Math.max(0, at + step))]);
  });
  box.addEventListener('focusout', (ev) => {
    if (ev.relatedTarget && !box.contains(ev.relatedTarget)) close(false);
  });
  const move = (b) => {
    for (const o of buttons) o.tabIndex = o === b ? 0 : -1;
    b.focus();
  };

  opener.after(box);
  opener.setAttribute('aria-expanded', 'true');
  li?.classList.add('menu-open');
  // Upwards, unless there is no room above inside the feed; sideways, within it.
  const area = scroller.getBoundingClientRect();
  box.classList.toggle('down', opener.getBoundingClientRect().top - area.top < box.offsetHeight + 12);
  let rect = box.getBoundingClientRect();
  if (rect.right > area.right - 4) {
    box.classList.add('end');
    rect = box.getBoundingClientRect();
  }
  if (rect.left < area.left + 4) {
    box.classList.remove('end');
    box.classList.add('start');
  }
  box.scrollIntoView({ block: 'nearest' });
  document.addEventListener('pointerdown', outside, true);
  buttons[0].focus();
  return { opener, close };
}
