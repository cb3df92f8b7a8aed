/**
 * The built-in config used when no file exists: the web feed on loopback, three demo
 * agents and one demo room. With no ANTHROPIC_API_KEY the app falls back to the scripted provider.
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
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst, writer, critic] }
`;
