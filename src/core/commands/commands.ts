/**
 * `/group …`, `/ask …` and `/help`. Commands behave the same on every channel; replies
 * come from the system voice and neither the command nor its reply is shown to agents.
 */
import type { GroupDoc } from '../records.js';
import type { InboundMessage } from '../types.js';
import { StoreUnavailableError, UserError, describeError } from '../errors.js';
import type { CommandContext } from './CommandContext.js';
import type { HandleIndex } from '../router/mentions.js';
import { formatGroupList, formatUsage } from './format.js';
import { linkCommand, unlinkCommand } from './linkCommands.js';

export type { CommandContext } from './CommandContext.js';

export interface ParsedCommand {
  name: 'group' | 'ask' | 'help' | 'stop' | 'approve' | 'deny';
  /** `/group@some_bot`: the bot the command was addressed to. */
  target?: string | undefined;
  args: string[];
  /** Everything after the command word, as typed. */
  rest: string;
}

const COMMAND = /^\/(group|ask|help|start|stop|approve|deny)(?:@([A-Za-z0-9_]{1,64}))?(?=\s|$)\s*([\s\S]*)$/i;

/** Recognise a command; null for ordinary text. */
export function parseCommand(text: string): ParsedCommand | null {
  const m = COMMAND.exec(text.trim());
  if (!m) return null;
  const word = m[1]!.toLowerCase();
  const rest = m[3]!.trim();
  return { name: word === 'start' ? 'help' : (word as ParsedCommand['name']), target: m[2], args: rest ? rest.split(/\s+/) : [], rest };
}

const ADMIN_SUBCOMMANDS = new Set(['create', 'add', 'remove', 'mute', 'unmute', 'reset', 'dissolve', 'config', 'link', 'unlink']);

export const HELP_TEXT = [
  'Chorus commands:',
  '/group create <agent> <agent> … — make this chat a group (admin)',
  '/group add <agent> · /group remove <agent> — change members (admin)',
  '/group list — members, status, strategy and settings',
  '/group config [<key> <value>] — show or change a setting (admin to change)',
  '/group mute <agent> · /group unmute <agent> — no voluntary turns (admin)',
  '/group reset [agent] — clear agent memory (admin)',
  '/group usage — tokens and estimated cost per agent',
  '/group dissolve — archive the group (admin)',
  '/group link — a one-time code to share this group with another chat (admin)',
  '/group link <code> — this chat joins the room the code was made in (admin)',
  '/group unlink — this chat leaves the room it joined (admin)',
  '/ask <agent> [<agent> …] [text] — make these agents answer',
  '/stop — end the agents\' current round and cancel their replies in progress (anyone)',
  '/approve <id> [#digest] · /deny <id> — let an agent\'s tool call run, or refuse it',
  'Address agents with @handle; @all reaches everyone.',
].join('\n');

/**
 * Each command with its arguments, one entry per thing typed: what the web composer offers when a
 * message starts with `/`. The same commands as HELP_TEXT, which groups some of them per line.
 */
export const COMMAND_LIST: readonly { command: string; args: string; summary: string }[] = [
  { command: '/help', args: '', summary: 'list the commands' },
  { command: '/ask', args: '<agent> [<agent> …] [text]', summary: 'make these agents answer' },
  { command: '/stop', args: '', summary: "end the agents' round and cancel replies in progress" },
  { command: '/approve', args: '<id>', summary: "let an agent's tool call run" },
  { command: '/deny', args: '<id>', summary: "refuse an agent's tool call" },
  { command: '/group list', args: '', summary: 'members, status, strategy and settings' },
  { command: '/group usage', args: '', summary: 'tokens and estimated cost per agent' },
  { command: '/group config', args: '[<key> <value>]', summary: 'show or change a setting' },
  { command: '/group add', args: '<agent>', summary: 'add an agent (admin)' },
  { command: '/group remove', args: '<agent>', summary: 'remove an agent (admin)' },
  { command: '/group mute', args: '<agent>', summary: 'no voluntary turns (admin)' },
  { command: '/group unmute', args: '<agent>', summary: 'voluntary turns again (admin)' },
  { command: '/group reset', args: '[agent]', summary: 'clear agent memory (admin)' },
  { command: '/group dissolve', args: '', summary: 'archive the group (admin)' },
  { command: '/group create', args: '<agent> <agent> …', summary: 'make this chat a group (admin)' },
  { command: '/group link', args: '[code]', summary: 'a code to share the group with another chat, or join with one (admin)' },
  { command: '/group unlink', args: '', summary: 'this chat leaves the room it joined (admin)' },
];

/** What a command did: its answer (already passed to `r.reply`) and whether it failed. */
export interface CommandOutcome {
  reply: string | null;
  failed: boolean;
}

/**
 * Whether a command may change the group (members, settings, memory, a new round). The others
 * only read (`/help`, `/group list|usage`, `/group config` without a value): on the web their
 * answer goes to the asker alone and nothing is recorded.
 */
export function changesState(cmd: ParsedCommand): boolean {
  if (cmd.name === 'help') return false;
  if (cmd.name === 'ask' || cmd.name === 'stop' || cmd.name === 'approve' || cmd.name === 'deny') return true;
  const [sub = 'list', ...args] = cmd.args;
  const s = sub.toLowerCase();
  if (s === 'config') return args.length > 0;
  return ADMIN_SUBCOMMANDS.has(s);
}

/** Run a command and answer in the chat. Never throws: mistakes become a reply. */
export async function handleCommand(r: CommandContext, msg: InboundMessage, cmd: ParsedCommand, g: GroupDoc | undefined): Promise<CommandOutcome> {
  let reply: string | null;
  let failed = false;
  try {
    reply = await run(r, msg, cmd, g);
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err; // the message is refused (503), not answered
    failed = true;
    reply = err instanceof UserError ? `⚠ ${err.message}` : `⚠ command failed: ${describeError(err)}`;
    if (!(err instanceof UserError)) r.logger.error({ err: describeError(err), command: cmd.name }, 'command failed');
  }
  if (reply) await r.reply(msg, g && !g.state.archived ? g : undefined, reply);
  return { reply, failed };
}

async function run(r: CommandContext, msg: InboundMessage, cmd: ParsedCommand, g: GroupDoc | undefined): Promise<string | null> {
  if (cmd.name === 'help') return HELP_TEXT;
  if (cmd.name === 'ask') return ask(r, msg, cmd, g);
  if (cmd.name === 'stop') {
    if (!g) throw new UserError('this chat has no group; there is nothing to stop');
    await r.stop(g, msg.author.name, msg.messageId);
    return null; // the stop notice is the answer
  }
  if (cmd.name === 'approve' || cmd.name === 'deny') {
    if (!g) throw new UserError('this chat has no group, so no tool call waits here');
    const id = cmd.args[0];
    if (!id) throw new UserError(`say which call: /${cmd.name} <id> (the id is in the request's line)`);
    const channel = r.channel(msg.channel);
    const admin = channel ? await channel.isAdmin({ channel: msg.channel, chatId: msg.chatId, threadId: msg.threadId }, msg.author.id) : false;
    // `/approve t12 #0123456789`: only the call with these arguments (the request shows its digest).
    await r.decideTool(g, id, cmd.name === 'approve', { name: msg.author.name, admin }, cmd.args[1]);
    return null; // the decision's line is the answer
  }
  const [sub = 'list', ...args] = cmd.args;
  const subLower = sub.toLowerCase();
  if (ADMIN_SUBCOMMANDS.has(subLower) && !(subLower === 'config' && args.length === 0)) {
    const channel = r.channel(msg.channel);
    const admin = channel ? await channel.isAdmin({ channel: msg.channel, chatId: msg.chatId, threadId: msg.threadId }, msg.author.id) : false;
    if (!admin) throw new UserError(`only chat admins can use /group ${subLower}`);
  }
  if (subLower === 'create') return create(r, msg, args, g);
  if (subLower === 'link') return linkCommand(r, msg, args, g);
  if (subLower === 'unlink') return unlinkCommand(r, msg, g);
  if (!g) throw new UserError('this chat has no group yet; an admin can start one with /group create <agent> <agent> …');
  switch (subLower) {
    case 'add': {
      const id = resolveAgent(r, one(args, 'add'), null);
      await r.admin.addMember(g.id, id, r.task);
      return `${r.agentMap.get(id)!.name} joined. Address it as ${r.handles.handlesOf(id).slice(0, 3).join(' ')}.`;
    }
    case 'remove': {
      const id = resolveAgent(r, one(args, 'remove'), g.participants);
      await r.admin.removeMember(g.id, id, {}, r.task);
      return `${r.agentMap.get(id)!.name} left the group; its memory is kept.`;
    }
    case 'list':
      return formatGroupList(r, g);
    case 'usage':
      return formatUsage(r, g);
    case 'config':
      return config(r, g, args);
    case 'mute':
    case 'unmute': {
      const id = resolveAgent(r, one(args, subLower), g.participants);
      await r.admin.setMuted(g.id, id, subLower === 'mute', r.task);
      const name = r.agentMap.get(id)!.name;
      return subLower === 'mute' ? `${name} is muted: it answers only when @mentioned.` : `${name} is unmuted.`;
    }
    case 'reset': {
      const ids = args.length ? [resolveAgent(r, args[0]!, g.participants)] : g.participants;
      await r.admin.resetMemory(g.id, ids, r.task);
      return args.length ? `${r.agentMap.get(ids[0]!)!.name}'s memory of this group was cleared.` : 'Every agent’s memory of this group was cleared.';
    }
    case 'dissolve':
      await r.admin.dissolveGroup(g.id, r.task);
      return 'This group was dissolved; its history stays on disk. Agents now answer here one-to-one only when the chat is private.';
    default:
      throw new UserError(`unknown subcommand "${sub}"; try /help`);
  }
}

async function create(r: CommandContext, msg: InboundMessage, args: string[], g: GroupDoc | undefined): Promise<string> {
  if (g && !g.dmAgentId) throw new UserError(`this chat already has a group (“${g.title}”); use /group add or /group dissolve`);
  if (msg.isPrivate) throw new UserError('groups live in group chats; add the agent bots to a group and run /group create there');
  const known = r.agents.map((a) => a.id);
  if (args.length === 0) throw new UserError(`name the agents: /group create ${known.slice(0, 2).join(' ')} (known: ${known.join(', ')})`);
  const ids: string[] = [];
  for (const a of args) {
    const resolved = r.handles.resolve(a, known);
    if (resolved.length === 0) throw new UserError(`unknown agent "${a}"; known agents: ${known.join(', ')}`);
    for (const id of resolved) if (!ids.includes(id)) ids.push(id);
  }
  const created = await r.admin.createGroupInChat(msg, ids);
  return r.admin.greeting(created);
}

async function ask(r: CommandContext, msg: InboundMessage, cmd: ParsedCommand, g: GroupDoc | undefined): Promise<string | null> {
  if (!g) throw new UserError('this chat has no group yet; an admin can start one with /group create <agent> …');
  const { ids, text } = askArgs(r.handles, g.participants, cmd);
  if (ids.length === 0) throw new UserError(`name who should answer: /ask ${g.participants[0] ?? 'agent'} [text] (members: ${g.participants.join(', ')})`);
  await r.ask(g, msg, ids, text);
  return null;
}

/** `/ask a b question…`: the leading agent names, and the question (null when there is none). */
export function askArgs(handles: HandleIndex, participants: string[], cmd: ParsedCommand): { ids: string[]; text: string | null } {
  const ids: string[] = [];
  let i = 0;
  for (; i < cmd.args.length; i++) {
    const found = handles.resolve(cmd.args[i]!, participants);
    if (found.length === 0) break;
    for (const id of found) if (!ids.includes(id)) ids.push(id);
  }
  // Everything after the agent names is the question, exactly as typed.
  const text = cmd.rest.split(/\s+/).slice(i).join(' ').trim();
  return { ids, text: text || null };
}

async function config(r: CommandContext, g: GroupDoc, args: string[]): Promise<string> {
  if (args.length === 0) {
    return ['Settings (change with /group config <key> <value>):', ...Object.entries(g.config).map(([k, v]) => `${k} = ${showSetting(v)}`)].join('\n');
  }
  const [key, ...valueParts] = args;
  if (valueParts.length === 0) throw new UserError(`give a value: /group config ${key} <value>`);
  const value = parseValue(valueParts.join(' '));
  // `budget.daily_usd 5`: one field of a nested setting; the other fields keep their values.
  const [top, sub] = key!.split('.', 2) as [string, string | undefined];
  const current = (g.config as unknown as Record<string, unknown>)[top];
  if (sub !== undefined && (typeof current !== 'object' || current === null)) throw new UserError(`${top} has no fields; use /group config ${top} <value>`);
  const patch = sub !== undefined ? { [top]: { ...(current as object), [sub]: value } } : { [key!]: value };
  const next = (await r.admin.updateConfig(g.id, patch, r.task)) as unknown as Record<string, unknown>;
  const shown = sub !== undefined ? (next[top] as Record<string, unknown> | undefined)?.[sub] : next[key!];
  return `${key} = ${showSetting(shown ?? null)}`;
}

/** A setting as `/group config` shows it: none for null, fields of a nested one as `a=1, b=none`. */
function showSetting(v: unknown): string {
  if (v === null || v === undefined) return 'none';
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k}=${showSetting(x)}`).join(', ');
  return String(v);
}

/** Command-line words to typed values: numbers, booleans, none/null. */
export function parseValue(raw: string): unknown {
  const v = raw.trim();
  if (/^(true|on|yes)$/i.test(v)) return true;
  if (/^(false|off|no)$/i.test(v)) return false;
  if (/^(none|null|off)$/i.test(v)) return null;
  if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v);
  return v;
}

function one(args: string[], sub: string): string {
  if (args.length !== 1) throw new UserError(`usage: /group ${sub} <agent>`);
  return args[0]!;
}

/** An agent named by id, @handle, name or alias; limited to `within` when given. */
function resolveAgent(r: CommandContext, word: string, within: string[] | null): string {
  const pool = within ?? r.agents.map((a) => a.id);
  const found = r.handles.resolve(word, pool);
  if (found.length === 1) return found[0]!;
  const all = r.handles.resolve(word, r.agents.map((a) => a.id));
  if (within && all.length === 1) throw new UserError(`${r.agentMap.get(all[0]!)!.name} is not in this group (members: ${within.join(', ')})`);
  throw new UserError(`unknown agent "${word}"; known agents: ${pool.join(', ')}`);
}
