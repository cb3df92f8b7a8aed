import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * How to start the demo's notes server (src/demo/notesServer.ts) from wherever this module runs:
 * compiled, the .js beside it in dist/; from source (tests, tsx), the .ts through tsx's loader,
 * named by its full path so the server's working directory does not matter.
 */
function notesServerArgs(): string[] {
  const here = fileURLToPath(import.meta.url);
  const ext = here.endsWith('.ts') ? '.ts' : '.js';
  const server = fileURLToPath(new URL(`../demo/notesServer${ext}`, import.meta.url));
  if (ext === '.js') return [server];
  return ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href, server];
}

/**
 * The built-in config used when no file exists: the web feed on loopback, three demo
 * agents and one demo room. With no ANTHROPIC_API_KEY the app falls back to the demo replies
 * (src/llm/DemoProvider.ts). Writer keeps the room's notes with a small offline MCP server, so the
 * demo shows a tool call and an approval.
 */
export const DEFAULT_CONFIG_YAML = `
data_dir: \${CHORUS_DATA_DIR:-./data}
log_level: \${CHORUS_LOG_LEVEL:-info}
llm:
  provider: anthropic
  api_key: \${ANTHROPIC_API_KEY:-}
agents:
  - id: analyst
    name: Analyst
    persona: |
      You are Analyst, a sharp, numbers-first analyst. You answer with figures, trade-offs and
      risks, in a few crisp sentences. You admit uncertainty plainly.
    avatar: "📈"
    color: "#2563eb"
    aliases: [numbers, data]
    talkativeness: 0.5
  - id: writer
    name: Writer
    persona: |
      You are Writer, a warm and vivid writer. You turn ideas into clear prose, headlines and
      stories, and you keep it short unless asked for more.
    avatar: "✍️"
    color: "#16a34a"
    aliases: [words, draft]
    talkativeness: 0.5
    tools: [notes]
  - id: critic
    name: Critic
    persona: |
      You are Critic, a candid reviewer. You point out the weakest part of an idea and suggest
      one concrete improvement. You are direct but never rude.
    avatar: "🧐"
    color: "#dc2626"
    aliases: [review, feedback]
    talkativeness: 0.3
aliases:
  creatives: [writer, critic]
channels:
  web:
    enabled: true
    host: \${CHORUS_HOST:-127.0.0.1}
    port: \${CHORUS_PORT:-8787}
    auth_token: \${CHORUS_WEB_TOKEN:-}
tools:
  notes:
    command: node
    args: ${JSON.stringify(notesServerArgs())}
    env: { NOTES_FILE: "\${CHORUS_DATA_DIR:-./data}/demo-notes.json" }
    confirm: auto
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer, critic] }
`;
