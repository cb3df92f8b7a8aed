/**
 * Doctor checks of the machine: can `data_dir` take durable writes (and how much room is left),
 * and can the web channel bind its port. Both are tried for real — a small file written, synced
 * and removed; a socket bound and closed — because permissions, read-only mounts and other
 * processes are only found out by trying.
 */
import { constants } from 'node:fs';
import { access, open, rm, statfs, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import type { ChorusConfig } from '../../config/schema.js';
import { fail, ok, warn, type Finding } from '../findings.js';

/** Below this much free space a warning: a day of busy groups writes tens of megabytes. */
const LOW_SPACE_BYTES = 200 * 1024 * 1024;

export async function checkDataDir(config: ChorusConfig): Promise<Finding[]> {
  const dir = resolve(config.data_dir);
  const subject = `data_dir ${dir}`;
  const existing = await nearestExisting(dir);
  if (existing === null) return [fail(subject, 'neither it nor any folder above it exists', 'set data_dir to a folder on a mounted disk')];
  if (existing !== dir) {
    // Chorus creates it at start; check that it could.
    try {
      await access(existing, constants.W_OK);
    } catch {
      return [fail(subject, `does not exist and ${existing} is not writable, so it cannot be created`, `create it yourself (mkdir -p ${dir}) and give the user running Chorus write access`)];
    }
    return [ok(subject, `does not exist yet; Chorus will create it (${existing} is writable)`), ...(await space(subject, existing))];
  }
  const s = await stat(dir);
  if (!s.isDirectory()) return [fail(subject, 'is a file, not a folder', 'point data_dir at a folder')];
  const probe = join(dir, `.doctor-${process.pid}-${Date.now()}.tmp`);
  try {
    const fh = await open(probe, 'wx');
    try {
      await fh.writeFile('chorus doctor write probe\n');
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await rm(probe, { force: true });
  } catch (err) {
    await rm(probe, { force: true }).catch(() => undefined);
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'EROFS' ? 'the file system is read-only' : code === 'ENOSPC' ? 'the disk is full' : code;
    return [fail(subject, `cannot write a file there (${why})`, 'give the user running Chorus write access to it, or point data_dir elsewhere')];
  }
  return [ok(subject, 'writable (a file was written, synced and removed)'), ...(await space(subject, dir))];
}

async function space(subject: string, dir: string): Promise<Finding[]> {
  try {
    const s = await statfs(dir);
    const free = s.bavail * s.bsize;
    const mb = Math.round(free / 1024 / 1024);
    if (free < LOW_SPACE_BYTES) return [warn(subject, `only ${mb} MB free`, 'free some space or move data_dir: a full disk makes Chorus refuse messages (503) until there is room')];
    return [];
  } catch {
    return [];
  }
}

async function nearestExisting(path: string): Promise<string | null> {
  for (let p = path; ; p = dirname(p)) {
    try {
      await stat(p);
      return p;
    } catch {
      if (dirname(p) === p) return null;
    }
  }
}

/**
 * Can the web channel listen? A port in use is fine when the one using it is a Chorus (then this
 * doctor runs beside the daemon, and `chorus status` tells how it is doing).
 */
export async function checkPort(config: ChorusConfig): Promise<Finding[]> {
  const web = config.channels.web;
  if (!web.enabled) return [];
  const subject = `port ${web.port} on ${web.host}`;
  if (web.port === 0) return [ok(subject, 'port 0: the system picks a free port at start')];
  const err = await tryListen(web.port, web.host);
  if (!err) return [ok(subject, 'free: the web channel can listen there')];
  if (err === 'EADDRINUSE') {
    if (await answersLikeChorus(web.host, web.port)) return [ok(subject, 'in use by a running Chorus (see `chorus status` for its health)')];
    return [fail(subject, 'already in use by another program', `stop that program, or set channels.web.port (or CHORUS_PORT) to a free port`)];
  }
  if (err === 'EACCES') return [fail(subject, 'no permission to listen there (ports below 1024 need privileges)', 'use a port above 1024, e.g. 8787, and put a reverse proxy in front')];
  if (err === 'EADDRNOTAVAIL' || err === 'ENOTFOUND') return [fail(subject, `${web.host} is not an address of this machine`, 'set channels.web.host to 127.0.0.1, or 0.0.0.0 with an auth_token to listen on every interface')];
  return [fail(subject, `cannot listen (${err})`, 'check channels.web.host and channels.web.port')];
}

function tryListen(port: number, host: string): Promise<string | null> {
  return new Promise((resolveListen) => {
    const server = createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolveListen(e.code ?? e.message));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolveListen(null)));
  });
}

async function answersLikeChorus(host: string, port: number): Promise<boolean> {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  try {
    const res = await fetch(`http://${h}:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
    const body = (await res.json()) as { status?: unknown };
    return res.status === 200 && body.status === 'ok';
  } catch {
    return false;
  }
}
