/**
 * `chorus doctor`: the checks `chorus check` cannot make because they need the outside world —
 * the data directory (or the PostgreSQL database) and the port on this machine, the model endpoint, each Telegram bot and the
 * groups it is in, the Discord login, intents and channel permissions, the MCP tool servers, and the chats of each room
 * across chats (every chat of a room is checked like a home chat; who relays people there). Each finding is one line
 * with its fix; the exit code is 1 when anything would fail, so scripts and CI can gate on it.
 *
 * The checks only read (one tiny model call is the exception, a few tokens per model; MCP tool
 * servers are started or connected once to list their tools, then ended): safe to run beside a
 * running daemon.
 */
import { resolve } from 'node:path';
import { chooseProvider } from '../app.js';
import type { LoadedConfig } from '../config/load.js';
import { describeError } from '../core/errors.js';
import { silentLogger } from '../core/silentLogger.js';
import { mayHoldDeclared } from '../core/router/declaredGroups.js';
import { peekGroups, type PeekedGroup } from '../store/files/peek.js';
import { checkModels } from './checks/model.js';
import { checkDataDir, checkPort } from './checks/system.js';
import { chatsOn, knownGroups, roomFindings } from './checks/rooms.js';
import { checkTelegram } from './checks/telegram.js';
import { checkRelayIn } from './checks/telegramRelay.js';
import { checkTools } from './checks/tools.js';
import { fail, formatFinding, ok, warn, type Finding } from './findings.js';

export interface DoctorResult {
  findings: Finding[];
  /** 0 when nothing fails (warnings allowed), 1 otherwise. */
  code: number;
}

/** Run every check and print one line per finding as each section completes, in a fixed order. */
export async function runDoctor(loaded: LoadedConfig, write: (line: string) => void): Promise<DoctorResult> {
  const { config } = loaded;
  const findings: Finding[] = [];
  const emit = (list: Finding[]) => {
    for (const f of list) {
      findings.push(f);
      write(formatFinding(f));
    }
  };
  emit([ok('config', `${loaded.source} is valid`)]);
  if (loaded.missingEnv.length) {
    emit([warn('config', `environment variables not set: ${[...new Set(loaded.missingEnv)].join(', ')}`, 'set them (or put them in a .env file next to the config)')]);
  }

  // Known groups: declared in the config, or found in data_dir (read-only, never repaired here).
  let stored: PeekedGroup[] = [];
  // With the PostgreSQL store there is no data_dir to read; groups come from the config only.
  if (config.storage.kind === 'files') {
    try {
      const peek = await peekGroups(resolve(config.data_dir));
      stored = peek.groups;
      for (const u of peek.unreadable) {
        const fix = 'make its files readable by the user Chorus runs as again (owner, permissions; a file where a folder belongs), or restore them from a backup';
        emit([groupFinding(u.id, `group ${u.id} is damaged: its files cannot be read (${u.problem}); Chorus does not load it and leaves its files untouched`, fix, config)]);
      }
      for (const d of peek.damaged) {
        emit([groupFinding(d.id, `group ${d.id} is damaged: ${d.problem}; Chorus does not load it and leaves its files untouched`, `restore groups/${d.id}/log from a backup; to give up its history instead, move groups/${d.id} out of data_dir`, config)]);
      }
    } catch (err) {
      emit([warn('data_dir', `could not list its groups (${describeError(err)})`, 'check the folder\'s permissions')]);
    }
  }
  const live = stored.filter((g) => !g.archived && !g.dm);
  // Every chat of every group: its home and, in a room across chats, the chats linked to it.
  const groups = knownGroups(config, live);

  // Independent checks run at once; their lines come out in this order.
  const sections: Array<Promise<Finding[]>> = [
    config.storage.kind === 'postgres' ? guard('storage', async () => (await import('./checks/postgres.js')).checkPostgres(config)) : guard('data_dir', () => checkDataDir(config)),
    guard('port', () => checkPort(config)),
    guard('model', () => checkModels(config, chooseProvider(config, silentLogger).scriptedReason)),
    guard('telegram', () => checkTelegram(config, chatsOn(groups, 'telegram'))),
    guard('tools', () => checkTools(config)),
    guard('discord', async () => {
      if (!config.channels.discord.enabled) return [];
      // discord.js is loaded only when Discord is enabled.
      const { checkDiscord } = await import('./checks/discord.js');
      return checkDiscord(config, chatsOn(groups, 'discord').map((c) => c.chatId));
    }),
    guard('rooms', async () => [...roomFindings(config, groups), ...(await checkRelayIn(config, chatsOn(groups, 'telegram', true)))]),
  ];
  for (const s of sections) emit(await s);

  const enabled = (['web', 'telegram', 'discord'] as const).filter((c) => config.channels[c].enabled);
  if (enabled.length === 0) emit([fail('channels', 'none is enabled, so nothing reaches the agents', 'enable channels.web, channels.telegram or channels.discord')]);
  const failures = findings.filter((f) => f.level === 'fail').length;
  const warnings = findings.filter((f) => f.level === 'warn').length;
  write('');
  write(failures ? `${failures} problem(s) to fix${warnings ? `, ${warnings} warning(s)` : ''}.` : warnings ? `No problems; ${warnings} warning(s).` : 'No problems found.');
  return { findings, code: failures ? 1 : 0 };
}

/**
 * A group Chorus does not load is never written over; the others run. One declared in `groups:`
 * is then left out at start, so the config does not do what it says: a failure, not a warning.
 */
function groupFinding(id: string, what: string, fix: string, config: LoadedConfig['config']): Finding {
  const declared = config.groups.find((g) => mayHoldDeclared(id, { channel: g.channel, chatId: g.chat_id, title: g.title }));
  return declared ? fail('data_dir', `${what} — it is declared in groups: (${declared.channel} ${declared.chat_id}) and left out at start`, fix) : warn('data_dir', what, fix);
}

/** A check that throws becomes one failed finding instead of ending the whole run. */
async function guard(section: string, run: () => Promise<Finding[]>): Promise<Finding[]> {
  try {
    return await run();
  } catch (err) {
    return [fail(section, `the check itself failed: ${describeError(err)}`, 'report this; the other checks still ran')];
  }
}
