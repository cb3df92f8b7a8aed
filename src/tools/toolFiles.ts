/**
 * Images a tool returns (MCP `image` content, or an embedded resource holding an image or a PDF)
 * are kept like a person's upload, through the same checks, so the agent can post them with its
 * reply under its own identity. The model still reads a line for each (content.ts); the bytes are
 * never put into the text prompt.
 */
import type { Attachment, Files } from '../core/fileTypes.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import type { ToolResultLike } from './content.js';

/** File names by type, for a part that does not name itself. */
const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp', 'application/pdf': 'pdf' };

/** Keep the files of one result, at most `files.maxPerMessage`; one that is refused or cannot be kept is logged and left out. */
export async function keepToolFiles(result: ToolResultLike, files: Pick<Files, 'keep' | 'maxPerMessage'>, label: string, logger: Logger): Promise<Attachment[]> {
  const kept: Attachment[] = [];
  let n = 0;
  for (const part of result.content ?? []) {
    if (kept.length >= files.maxPerMessage) break;
    const found = fileOf(part);
    if (!found) continue;
    n++;
    const name = found.name ?? `${label.replace(/[^\w.-]+/g, '-')}-${n}.${EXTENSIONS[found.mimeType] ?? 'bin'}`;
    try {
      const res = await files.keep({ name, bytes: Buffer.from(found.data, 'base64') });
      if (res.ok) kept.push(res.attachment);
      else logger.info({ tool: label, reason: res.reason }, 'a file the tool returned was not taken');
    } catch (err) {
      logger.warn({ tool: label, err: describeError(err) }, 'a file the tool returned could not be kept');
    }
  }
  return kept;
}

/** The base64 data of an image part, or of a resource whose type is a file Chorus takes. */
function fileOf(part: Record<string, unknown> & { type: string }): { data: string; mimeType: string; name?: string | undefined } | null {
  if (part.type === 'image' && typeof part.data === 'string') return { data: part.data, mimeType: String(part.mimeType ?? '') };
  if (part.type === 'resource' && part.resource && typeof part.resource === 'object') {
    const r = part.resource as Record<string, unknown>;
    const mimeType = String(r.mimeType ?? '');
    if (typeof r.blob !== 'string' || !EXTENSIONS[mimeType]) return null;
    const uri = typeof r.uri === 'string' ? r.uri : '';
    const last = uri.split(/[/?#]/).filter(Boolean).pop();
    return { data: r.blob, mimeType, name: last && /\.\w{2,5}$/.test(last) ? decodeURIComponentSafe(last) : undefined };
  }
  return null;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
