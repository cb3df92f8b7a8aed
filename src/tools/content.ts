/**
 * A tool's answer as the text the model reads. Text parts are joined; an image, audio clip or
 * resource becomes a short placeholder (`[image/png, 12 KB]`): their bytes mean nothing in a text
 * prompt and would only fill it. `structuredContent` is shown as JSON when no part is text.
 *
 * The size cap comes first: the text is cut to `maxBytes` UTF-8 bytes while it is assembled, on a
 * character boundary, with a visible marker, and the uncut size is reported — so a 1 MB answer is
 * never copied whole again, nor logged, recorded or sent to a model.
 */
import { cutUtf8 } from '../core/text/utf8.js';

/** The parts of a tools/call result this host reads (the SDK's CallToolResult has more). */
export interface ToolResultLike {
  content?: ReadonlyArray<Record<string, unknown> & { type: string }> | undefined;
  structuredContent?: Record<string, unknown> | undefined;
}

export function renderResult(result: ToolResultLike, maxBytes: number): { content: string; bytes: number } {
  const out = new CappedText(maxBytes);
  let sawText = false;
  let first = true;
  const add = (s: string) => {
    if (!first) out.add('\n');
    first = false;
    out.add(s);
  };
  for (const part of result.content ?? []) {
    if (part.type === 'text' && typeof part.text === 'string') {
      sawText = true;
      add(part.text);
    } else add(placeholder(part));
  }
  if (!sawText && result.structuredContent !== undefined) add(JSON.stringify(result.structuredContent));
  return out.result();
}

/** Text of a fixed size limit, cut with a marker; `bytes` is always the uncut size. */
export class CappedText {
  private readonly parts: string[] = [];
  private kept = 0;
  private total = 0;
  private full = false;

  constructor(private readonly maxBytes: number) {}

  add(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.total += n;
    if (this.full) return;
    if (this.kept + n <= this.maxBytes) {
      this.parts.push(s);
      this.kept += n;
      return;
    }
    const head = cutUtf8(s, this.maxBytes - this.kept);
    this.parts.push(head);
    this.kept += Buffer.byteLength(head, 'utf8');
    this.full = true;
  }

  result(): { content: string; bytes: number } {
    const body = this.parts.join('');
    if (!this.full) return { content: body, bytes: this.total };
    return { content: `${body}\n… [cut: ${count(this.total)} bytes, showing the first ${count(this.kept)}]`, bytes: this.total };
  }
}

function placeholder(part: Record<string, unknown> & { type: string }): string {
  if (part.type === 'image' || part.type === 'audio') {
    return `[${str(part.mimeType) ?? part.type}, ${size(base64Bytes(part.data))}]`;
  }
  if (part.type === 'resource' && part.resource && typeof part.resource === 'object') {
    const r = part.resource as Record<string, unknown>;
    const n = typeof r.text === 'string' ? Buffer.byteLength(r.text, 'utf8') : base64Bytes(r.blob);
    return `[resource ${str(r.uri) ?? ''} (${[str(r.mimeType), size(n)].filter(Boolean).join(', ')})]`;
  }
  if (part.type === 'resource_link') return `[resource link: ${str(part.name) ?? ''} <${str(part.uri) ?? ''}>]`;
  return `[${part.type} content]`;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

function size(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** 1048576 → "1,048,576": the marker is read by people as well as models. */
function count(n: number): string {
  return n.toLocaleString('en-US');
}
