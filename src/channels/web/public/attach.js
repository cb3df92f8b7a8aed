// Files chosen to go with the next message: from the attach button (a file chooser), dropped on
// the composer, or pasted into the message box (a screenshot from the clipboard). Each shows as a
// chip with a preview (images) and its size, and can be removed before sending. The limits the
// server gave (/api/agents) are checked as files are added, so a file too large or one too many
// is refused at once, with the others kept; what the server refuses (a type it does not take) is
// said by the composer, which keeps the text and the files. Chosen files belong to the group they
// were chosen in; sending them shows how far the upload got.
import { $, clear, h, show } from './dom.js';
import { isImage, kindText, sizeText } from './fileview.js';
import { state } from './state.js';

export class Attachments {
  /** @param onRefuse shows why files were not added (the composer's error line). */
  constructor(onRefuse) {
    this.onRefuse = onRefuse;
    this.form = $('#composer');
    this.button = $('#attach-btn');
    this.input = $('#attach-input');
    this.list = $('#attach-list');
    this.status = $('#upload-status');
    this.bar = $('#upload-progress');
    this.statusText = $('#upload-text');
    /** groupId → the files chosen there, in order: [{ file, url }] (url: a preview of an image). */
    this.byGroup = new Map();
    this.groupId = null;
    this.enabled = false;
    /** The name of the file the server last refused, marked until the next try. */
    this.refusedName = null;

    this.button.addEventListener('click', () => this.input.click());
    this.input.addEventListener('change', () => {
      this.add([...this.input.files]);
      // The same file can be chosen again after it was removed.
      this.input.value = '';
    });
    // Dropping files anywhere on the composer adds them; the composer shows where they will go.
    let depth = 0;
    const hasFiles = (ev) => ev.dataTransfer && [...ev.dataTransfer.types].includes('Files');
    this.form.addEventListener('dragenter', (ev) => {
      if (!hasFiles(ev) || !this.enabled) return;
      ev.preventDefault();
      depth++;
      this.form.classList.add('drop-target');
    });
    this.form.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev) || !this.enabled) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = 'copy';
    });
    this.form.addEventListener('dragleave', () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) this.form.classList.remove('drop-target');
    });
    this.form.addEventListener('drop', (ev) => {
      depth = 0;
      this.form.classList.remove('drop-target');
      if (!hasFiles(ev) || !this.enabled) return;
      ev.preventDefault();
      this.add([...ev.dataTransfer.files]);
    });
    // A pasted image (a screenshot) is attached; pasted words still go into the box as usual.
    $('#input').addEventListener('paste', (ev) => {
      const data = ev.clipboardData;
      if (!data || !this.enabled) return;
      const files = [...data.items].filter((i) => i.kind === 'file').map((i) => i.getAsFile()).filter(Boolean);
      if (files.length === 0) return;
      if (!data.types.includes('text/plain')) ev.preventDefault();
      this.add(files.map((f, i) => named(f, i)));
    });
  }

  /** The chosen files of the open group. */
  get items() {
    return this.byGroup.get(this.groupId) || [];
  }

  get files() {
    return this.items.map((x) => x.file);
  }

  get count() {
    return this.items.length;
  }

  /** The open group changed, or whether it can be written to: its own files show. */
  update(groupId, writable) {
    this.groupId = groupId;
    this.enabled = Boolean(writable && state.maxFilesPerMessage > 0);
    this.button.disabled = !this.enabled;
    show(this.button, state.maxFilesPerMessage > 0);
    this.render();
  }

  /** Add files, refusing (and saying why) each that is too large or one too many. */
  add(files) {
    if (!this.enabled || files.length === 0) return;
    const items = [...this.items];
    const refused = [];
    for (const file of files) {
      if (items.length >= state.maxFilesPerMessage) {
        refused.push(`${file.name} was not added: a message can carry at most ${state.maxFilesPerMessage} file${state.maxFilesPerMessage === 1 ? '' : 's'}.`);
      } else if (state.maxFileBytes > 0 && file.size > state.maxFileBytes) {
        refused.push(`${file.name} is ${sizeText(file.size)}; the limit is ${sizeText(state.maxFileBytes)}.`);
      } else if (file.size === 0) {
        refused.push(`${file.name} is empty.`);
      } else {
        items.push({ file, url: previewable(file) ? URL.createObjectURL(file) : null });
      }
    }
    this.byGroup.set(this.groupId, items);
    this.render();
    this.onRefuse(refused.length ? refused.join(' ') : '');
  }

  remove(item) {
    const items = this.items.filter((x) => x !== item);
    if (item.url) URL.revokeObjectURL(item.url);
    this.byGroup.set(this.groupId, items);
    this.render();
  }

  /** After sending: these files went, for the group they were chosen in. */
  sent(groupId, files) {
    const left = (this.byGroup.get(groupId) || []).filter((x) => {
      if (!files.includes(x.file)) return true;
      if (x.url) URL.revokeObjectURL(x.url);
      return false;
    });
    this.byGroup.set(groupId, left);
    if (groupId === this.groupId) this.render();
  }

  /** Mark the file the server refused (by name), so the reader sees which one to remove. */
  markRefused(name) {
    this.refusedName = name || null;
    for (const li of this.list.children) li.classList.toggle('refused', li.dataset.name === this.refusedName);
  }

  render() {
    clear(this.list);
    for (const item of this.items) {
      const { file } = item;
      const name = file.name || 'file';
      this.list.append(h('li', { className: `attach-chip${name === this.refusedName ? ' refused' : ''}`, dataset: { name } },
        item.url ? preview(item.url) : fileIcon(),
        h('span', { className: 'attach-text' },
          h('bdi', { className: 'attach-name', text: name }),
          h('span', { className: 'attach-size', text: `${kindText(file.type)} · ${sizeText(file.size)}` })),
        h('button', { type: 'button', className: 'icon-btn attach-remove', 'aria-label': `Remove ${name}`, title: 'Remove', text: '✕',
          onclick: () => {
            this.remove(item);
            this.onRefuse('');
            $('#input').focus();
          } })));
    }
    show(this.list, this.items.length > 0);
  }

  /** Show the upload's progress (null: done). */
  progress(sent, total) {
    if (sent === null) {
      show(this.status, false);
      return;
    }
    this.bar.max = Math.max(1, total);
    this.bar.value = Math.min(sent, total);
    this.statusText.textContent = `Uploading… ${sizeText(sent)} of ${sizeText(total)}`;
    show(this.status, true);
  }
}

function fileIcon() {
  return h('span', { className: 'attach-icon', 'aria-hidden': 'true', text: '📄' });
}

/** A chosen image's preview; what does not load as an image (whatever its claimed type) shows the file icon. */
function preview(url) {
  const img = h('img', { className: 'attach-preview', src: url, alt: '' });
  img.addEventListener('error', () => img.replaceWith(fileIcon()), { once: true });
  return img;
}

/** Only images the page itself can show get a preview (never an SVG or anything scriptable). */
function previewable(file) {
  return isImage(file);
}

/** A pasted image has no name of its own ("image.png" at best): give it one that says when. */
function named(file, i) {
  if (file.name && file.name !== 'image.png') return file;
  const ext = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' }[file.type] || 'bin';
  const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-');
  return new File([file], `pasted-${stamp}${i ? `-${i + 1}` : ''}.${ext}`, { type: file.type });
}
