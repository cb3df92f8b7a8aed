// A reply rendered while it streams in. Rendering the whole text again for every chunk costs
// time that grows with the square of the reply's length: a 20 KB answer in 4-character chunks
// kept the tab frozen for over a minute. Instead the text is cut into top-level Markdown blocks;
// a block that can no longer change (a later block has begun after it) is rendered once into its
// own nodes, and only the open block at the end — the tail — is rendered again, at most once per
// animation frame. A long tail (one huge code block) is re-rendered less often, in proportion
// to what rendering it costs, so the page keeps most of each second to itself.
// When the reply is recorded, its bubble keeps what was rendered: `finish` splits the recorded
// text the same way, keeps every block already on screen whose text is unchanged and renders only
// the rest, a frame's budget at a time. Rendering 20 KB whole again would hold the page up for
// over 100 ms on a busy machine, just as the reply ends.

/** A fence line: up to 3 spaces, then ``` or ~~~ (a backtick fence's info string has no backtick). */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
/** A list item's first line (bullet or number). */
const LIST_ITEM = /^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)/;
/** Per frame, settled blocks are rendered for at most this long; the rest wait for the next frame. */
const FRAME_BUDGET_MS = 12;
/** A tail is rendered again no sooner than this many times its last render took. */
const TAIL_BACKOFF = 4;
/** The server never streams the pass token; this only keeps a stray one off the screen. */
const PASS_TOKEN = /\[PASS\]/gi;
/**
 * Markdown that reaches across blocks, so the blocks rendered one by one would not match the
 * whole text rendered at once: a link reference definition (`[x]: url`, usable from any block)
 * and raw HTML (an HTML block may run over blank lines). A recorded reply with either is
 * rendered whole.
 */
const CROSS_BLOCK = /^ {0,3}(?:\[[^\]\n]+\]:|<)/m;

/**
 * Splits growing Markdown into the top-level blocks that are settled and the tail still open.
 * A block is settled once a line starts a new one: a line flush at the left margin after a blank
 * line or after a closed code fence. Blank lines inside a fence never end anything, and the next
 * item of a list after a blank line belongs to the same (loose) list, so its numbering and
 * spacing come out as in the whole render. Each line is looked at once, so feeding a reply in
 * any number of chunks costs time in proportion to its length.
 */
export class BlockSplitter {
  constructor() {
    /** Everything pushed so far. */
    this.text = '';
    /** The lines of the open block (each with its newline), and the incomplete line after them. */
    this.block = [];
    this.blockHasText = false;
    this.partial = '';
    /** The fence of the code block the scan is in: { char, len }, or null. */
    this.fence = null;
    this.afterBlank = false;
    this.afterFence = false;
    /** The open block is a list so far (its last line at the margin was a list item). */
    this.inList = false;
  }

  /** Add streamed text; returns the blocks it settled, in order, each exactly once. */
  push(chunk) {
    // Only the new text is searched: `text` is never scanned again, so the cost stays linear.
    this.text += chunk;
    const settled = [];
    const buf = this.partial + chunk;
    let from = 0;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n', from)) {
      this.line(buf.slice(from, nl + 1), settled);
      from = nl + 1;
    }
    this.partial = buf.slice(from);
    return settled;
  }

  /** The open block (with any incomplete last line). */
  tail() {
    return this.block.join('') + this.partial;
  }

  /** One whole line (`raw` ends with its newline). */
  line(raw, settled) {
    const line = raw.slice(0, -1);
    if (this.fence) {
      const m = FENCE.exec(line);
      if (m && m[1][0] === this.fence.char && m[1].length >= this.fence.len && m[2].trim() === '') {
        this.fence = null;
        this.afterFence = true;
      }
      this.block.push(raw);
      return;
    }
    if (line.trim() === '') {
      this.afterBlank = true;
      this.afterFence = false;
      this.block.push(raw);
      return;
    }
    const flush = !/^[ \t]/.test(line);
    const item = LIST_ITEM.test(line);
    if ((this.afterBlank || this.afterFence) && flush && this.blockHasText && !(this.inList && item)) {
      settled.push(this.block.join(''));
      this.block = [];
      this.inList = false;
    }
    this.block.push(raw);
    this.blockHasText = true;
    // Indented lines continue whatever the block is (a list item's second paragraph, say).
    if (!/^\s{4}/.test(line)) this.inList = item || (this.inList && !flush);
    this.afterBlank = false;
    this.afterFence = false;
    const m = FENCE.exec(line);
    if (m && !(m[1][0] === '`' && m[2].includes('`'))) this.fence = { char: m[1][0], len: m[1].length };
  }
}

/**
 * The text of one streaming bubble. `append` only records text; `flush` (once per frame, from
 * the feed) puts it on screen. `render(text)` turns Markdown into a fragment.
 */
export class StreamView {
  constructor(el, render) {
    this.el = el;
    this.render = render;
    /** Rendering time one flush may take before yielding (tests about what is rendered lift it). */
    this.frameBudgetMs = FRAME_BUDGET_MS;
    this.splitter = new BlockSplitter();
    /** Blocks not rendered yet (the text to render). */
    this.pending = [];
    /** Blocks on screen, in order: the text each was rendered from, and its nodes. */
    this.blocks = [];
    /** The nodes of the rendered tail, always the last children of `el`, and their text. */
    this.tailNodes = [];
    this.tailSource = null;
    this.tailDirty = false;
    /** performance.now() before which the tail is not rendered again. */
    this.tailNotBefore = 0;
    /** Set by `finish`: the text is the recorded reply, every part of it a block, and nothing more comes. */
    this.final = false;
  }

  get text() {
    return this.splitter.text;
  }

  /** Whether there is anything but white space to show yet. */
  get visible() {
    return /\S/.test(this.splitter.text);
  }

  append(chunk) {
    if (this.final) return;
    for (const block of this.splitter.push(chunk)) this.pending.push(clean(block));
    this.tailDirty = true;
  }

  /** Start again from `text` (the server's copy of the reply so far, after a reconnect). */
  replace(text) {
    if (this.final) return;
    this.splitter = new BlockSplitter();
    this.pending = [];
    this.blocks = [];
    this.removeTail();
    while (this.el.firstChild) this.el.firstChild.remove();
    this.tailNotBefore = 0;
    this.append(text);
  }

  /**
   * The reply is recorded as `text`: make `el` hold exactly what rendering `text` whole gives,
   * keeping the blocks already rendered from the same text. Returns true when that is done now;
   * otherwise (a long reply that was far from all on screen) the rest is rendered in later
   * tasks, a frame's budget each, and `later()` is called once it is.
   */
  finish(text, later) {
    this.final = true;
    let blocks;
    if (CROSS_BLOCK.test(text)) blocks = [text];
    else {
      const splitter = new BlockSplitter();
      blocks = splitter.push(text);
      blocks.push(splitter.tail());
    }
    blocks = blocks.filter((b) => b !== '');
    // Rendering is a function of the text alone, so a block rendered from the same text is the
    // same nodes a fresh render would give. Blocks rendered from text that has changed since
    // (a stray pass token cleaned out while streaming) go, with everything after them.
    let keep = 0;
    while (keep < this.blocks.length && keep < blocks.length && this.blocks[keep].source === blocks[keep]) keep++;
    for (const b of this.blocks.splice(keep)) for (const n of b.nodes) n.remove();
    if (keep === this.blocks.length && keep < blocks.length && this.tailSource === blocks[keep]) {
      // The tail on screen is the last text streamed, and now a block of the recorded reply.
      this.blocks.push({ source: this.tailSource, nodes: this.tailNodes });
      this.tailNodes = [];
      keep++;
    }
    this.removeTail();
    this.tailDirty = false;
    this.pending = blocks.slice(keep);
    if (!this.flush()) return true;
    const step = () => (this.flush() ? setTimeout(step, 0) : later());
    setTimeout(step, 0);
    return false;
  }

  /** Bring the screen up to date within this frame's budget; true when more work is left. */
  flush() {
    const started = performance.now();
    if (this.pending.length > 0) {
      // The old tail held the text of these blocks: it goes before they are shown.
      this.removeTail();
      this.tailDirty = !this.final;
      while (this.pending.length > 0) {
        const source = this.pending.shift();
        const frag = this.render(source);
        this.blocks.push({ source, nodes: [...frag.childNodes] });
        this.el.append(frag);
        if (performance.now() - started > this.frameBudgetMs) return this.pending.length > 0 || this.tailDirty;
      }
    }
    if (!this.tailDirty) return false;
    const now = performance.now();
    if (now < this.tailNotBefore) return true;
    this.removeTail();
    const source = clean(this.splitter.tail());
    const frag = this.render(source);
    this.tailNodes = [...frag.childNodes];
    this.tailSource = source;
    this.el.append(frag);
    this.tailDirty = false;
    const took = performance.now() - now;
    this.tailNotBefore = performance.now() + took * TAIL_BACKOFF;
    return false;
  }

  removeTail() {
    for (const n of this.tailNodes) n.remove();
    this.tailNodes = [];
    this.tailSource = null;
  }
}

function clean(text) {
  return text.replace(PASS_TOKEN, '');
}
