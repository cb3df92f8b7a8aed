// Files in the feed: the attachments of a message (a person's upload, from this page or from a
// Telegram or Discord group alike, or an image an agent's tool made) drawn under its text. Images
// are thumbnails that open full size in a lightbox (a modal dialog: Escape or ✕ closes it and the
// focus goes back to the thumbnail); other files are cards that download. Every file comes from
// /api/files/:id, which serves it to be looked at, never run.
import { fileUrl } from './api.js';
import { h } from './dom.js';

/** The largest a thumbnail is drawn, in CSS pixels. */
const THUMB_W = 240;
const THUMB_H = 180;

/** A byte count as people read it: `512 B`, `120 KB`, `4.2 MB` (as the server words its limits). */
export function sizeText(bytes) {
  const n = Number(bytes) || 0;
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

export function isImage(a) {
  return /^image\/(png|jpeg|gif|webp)$/.test(String(a && a.type));
}

/** "PDF", "Text", "PNG image": what a file is, for its card and labels. */
export function kindText(type) {
  if (type === 'application/pdf') return 'PDF';
  if (type === 'text/plain') return 'Text';
  const m = /^image\/(\w+)$/.exec(String(type));
  return m ? `${m[1].toUpperCase()} image` : 'File';
}

/** The attachments of entry `e` that can be drawn (well-formed ones only). */
export function attachmentsOf(e) {
  return Array.isArray(e && e.attachments) ? e.attachments.filter((a) => a && typeof a.id === 'string' && /^[0-9a-f]{64}$/.test(a.id)) : [];
}

/** "📎 chart.png" (and "+2"): a message of files alone, where a line of text is expected. */
export function filesSummary(e) {
  const list = attachmentsOf(e);
  if (list.length === 0) return '';
  return `📎 ${list[0].name || 'a file'}${list.length > 1 ? ` +${list.length - 1}` : ''}`;
}

/** The files under a message's text, or null when it has none. */
export function attachmentsView(e) {
  const list = attachmentsOf(e);
  if (list.length === 0) return null;
  return h('ul', { className: 'attachments', 'aria-label': list.length === 1 ? 'Attached file' : `${list.length} attached files` },
    list.map((a) => h('li', { className: 'att', dataset: { fileId: a.id } },
      isImage(a) ? thumbnail(a, e.id) : card(a, e.id))));
}

/** The thumbnail's size: the image's own shape within the box, so the feed does not jump when it loads. */
function thumbSize(a) {
  if (!(a.width > 0 && a.height > 0)) return null;
  const scale = Math.min(1, THUMB_W / a.width, THUMB_H / a.height);
  return { width: Math.max(1, Math.round(a.width * scale)), height: Math.max(1, Math.round(a.height * scale)) };
}

function thumbnail(a, entryId) {
  const name = a.name || 'image';
  const size = thumbSize(a);
  const img = h('img', { src: fileUrl(a.id, entryId), alt: name, loading: 'lazy', decoding: 'async', ...(size || {}) });
  // A file that cannot be loaded (gone, or the token changed) says so instead of a broken image.
  img.addEventListener('error', () => img.closest('.att-thumb')?.classList.add('broken'), { once: true });
  return [
    h('button', { type: 'button', className: 'att-thumb', 'aria-haspopup': 'dialog', title: `Open ${name}`,
      'aria-label': `Open image ${name}, ${sizeText(a.size)}`, dataset: { fileId: a.id } }, img),
    h('span', { className: 'att-caption' }, h('bdi', { className: 'att-name', text: name }), h('span', { className: 'att-size', text: sizeText(a.size) })),
  ];
}

function card(a, entryId) {
  const name = a.name || 'file';
  const href = fileUrl(a.id, entryId);
  return h('a', { className: 'att-file', href, download: name, title: `Download ${name}`, rel: 'noopener' },
    h('span', { className: 'att-icon', 'aria-hidden': 'true', text: a.type === 'application/pdf' ? '📕' : '📄' }),
    h('span', { className: 'att-file-text' },
      h('bdi', { className: 'att-name', text: name }),
      h('span', { className: 'att-meta', text: `${kindText(a.type)} · ${sizeText(a.size)}` })));
}

/**
 * The full image over the page. One dialog for the whole feed: a click on any thumbnail of
 * `list` opens it with that image.
 */
export class Lightbox {
  constructor(list, dialog) {
    this.dialog = dialog;
    this.img = dialog.querySelector('.lightbox-img');
    this.title = dialog.querySelector('.lightbox-title');
    this.meta = dialog.querySelector('.lightbox-meta');
    this.download = dialog.querySelector('.lightbox-download');
    /** The thumbnail that opened it, focused again when it closes. */
    this.opener = null;
    list.addEventListener('click', (ev) => {
      const thumb = ev.target instanceof Element ? ev.target.closest('.att-thumb') : null;
      if (!thumb) return;
      const li = thumb.closest('[data-entry-id]');
      const entryId = li ? li.dataset.entryId : undefined;
      this.open(thumb, { id: thumb.dataset.fileId, entryId, ...this.describe(thumb, li) });
    });
    dialog.querySelector('.lightbox-close').addEventListener('click', () => dialog.close());
    // A click on the dark around the image (the dialog itself, not what is in it) closes it too.
    dialog.addEventListener('click', (ev) => {
      if (ev.target === dialog || ev.target.classList.contains('lightbox-stage')) dialog.close();
    });
    dialog.addEventListener('close', () => {
      this.img.removeAttribute('src');
      const back = this.opener;
      this.opener = null;
      if (back && back.isConnected) back.focus();
    });
  }

  describe(thumb, li) {
    const caption = thumb.parentElement && thumb.parentElement.querySelector('.att-caption');
    return {
      name: caption ? caption.querySelector('.att-name').textContent : 'image',
      size: caption ? caption.querySelector('.att-size').textContent : '',
      from: li ? li.querySelector('.author')?.textContent || '' : '',
    };
  }

  open(opener, { id, entryId, name, size, from }) {
    this.opener = opener;
    this.img.src = fileUrl(id, entryId);
    this.img.alt = name;
    this.title.textContent = name;
    this.meta.textContent = [size, from && `from ${from}`].filter(Boolean).join(' · ');
    this.download.href = fileUrl(id, entryId);
    this.download.setAttribute('download', name);
    if (!this.dialog.open) this.dialog.showModal();
    this.dialog.querySelector('.lightbox-close').focus();
  }
}
