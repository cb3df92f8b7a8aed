/**
 * The built-in demo's tool: a tiny MCP server over stdio keeping the room's notes in a JSON file,
 * so a first run with no key and no network shows an agent using a tool and a person approving it.
 * `list` only reads (annotated readOnlyHint, so it runs at once); `add` changes the notes (no
 * hint, so with `confirm: auto` someone in the room must approve it first).
 *
 * The built-in config starts it (src/config/defaults.ts) with NOTES_FILE in the data folder. It
 * lives under src/ rather than examples/ so the compiled image (dist/ only) ships it too.
 * Logs go to stderr; stdout is the MCP stream.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

interface Note {
  text: string;
  at: string;
}

const FILE = process.env.NOTES_FILE ?? './data/demo-notes.json';
/** A note longer than this is refused: the demo keeps a short list, not documents. */
const MAX_NOTE_CHARS = 500;

function load(): Note[] {
  if (!existsSync(FILE)) return [];
  const data: unknown = JSON.parse(readFileSync(FILE, 'utf8'));
  return Array.isArray(data) ? (data as Note[]) : [];
}

function save(notes: Note[]): void {
  mkdirSync(dirname(FILE), { recursive: true });
  writeFileSync(`${FILE}.tmp`, JSON.stringify(notes, null, 2));
  // A rename is atomic: a crash leaves the old list or the new one, never half of one.
  renameSync(`${FILE}.tmp`, FILE);
}

const server = new McpServer({ name: 'chorus-demo-notes', version: '1.0.0' });

server.registerTool(
  'list',
  {
    description: "List the room's notes, oldest first.",
    inputSchema: {},
    annotations: { readOnlyHint: true },
  },
  async () => {
    const notes = load();
    if (notes.length === 0) return { content: [{ type: 'text', text: 'No notes yet.' }] };
    return { content: [{ type: 'text', text: notes.map((n, i) => `${i + 1}. ${n.text}`).join('\n') }] };
  },
);

server.registerTool(
  'add',
  {
    description: "Add a note to the room's notes. This changes the notes, so a person approves it first.",
    inputSchema: { text: z.string().describe('The note, one short sentence') },
  },
  async ({ text }) => {
    const note = text.trim();
    if (!note) return { isError: true, content: [{ type: 'text', text: 'A note needs some text.' }] };
    if (note.length > MAX_NOTE_CHARS) {
      return { isError: true, content: [{ type: 'text', text: `A note is at most ${MAX_NOTE_CHARS} characters.` }] };
    }
    const notes = load();
    notes.push({ text: note, at: new Date().toISOString() });
    save(notes);
    return { content: [{ type: 'text', text: `Noted (${notes.length} in all): ${note}` }] };
  },
);

await server.connect(new StdioServerTransport());
// The client closing stdin is the request to stop.
process.stdin.on('end', () => process.exit(0));
process.stderr.write(`demo notes: serving ${FILE}\n`);
