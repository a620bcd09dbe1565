// The gateway's private runtime folder under the temp dir: nginx's configuration, the router's
// socket, and a subfolder nginx writes (its pid file, its temp folders). When the stack runs as
// root and nginx as `nobody`, the folder and everything root writes stay root's (0711: nginx may
// pass through, nobody may list or rename), so no link planted by a `nobody` process can turn a
// write, chmod or removal of root's elsewhere; the subfolder is nginx's, and is removed as nginx's
// user.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OsUser } from '../system-user.ts';

const PREFIX = 'capture-gateway-';

/** A folder this old whose router refuses connections belongs to a stack that died. */
const STALE_AFTER_MS = 60_000;

export interface RuntimeDir {
  path: string;
  /** nginx's own folder (its `-p` prefix): pid file and temp folders. */
  nginxDir: string;
  configFile: string;
  routerSocket: string;
}

function layout(path: string): RuntimeDir {
  return {
    path,
    nginxDir: join(path, 'nginx'),
    configFile: join(path, 'nginx.conf'),
    routerSocket: join(path, 'router.sock'),
  };
}

/** `nginxUser`: whom nginx runs as when that is not the stack's own user. */
export function createRuntimeDir(nginxUser: OsUser | undefined): RuntimeDir {
  const dir = layout(mkdtempSync(join(tmpdir(), PREFIX)));
  mkdirSync(dir.nginxDir, { mode: 0o700 });
  if (nginxUser) {
    chmodSync(dir.path, 0o711);
    chownSync(dir.nginxDir, nginxUser.uid, nginxUser.gid);
  }
  return dir;
}

/** The configuration holds the keys: readable by nginx's group only. */
export function writeConfig(dir: RuntimeDir, text: string, nginxUser: OsUser | undefined): void {
  writeFileSync(dir.configFile, text, { mode: 0o640, flag: 'wx' });
  if (nginxUser) chownSync(dir.configFile, 0, nginxUser.gid);
}

/** Lets nginx's user, and only its group besides root, connect to the router's socket. */
export function openRouterSocket(dir: RuntimeDir, nginxUser: OsUser | undefined): void {
  if (!nginxUser) return;
  chownSync(dir.routerSocket, 0, nginxUser.gid);
  chmodSync(dir.routerSocket, 0o660);
}

export function removeRuntimeDir(dir: RuntimeDir, nginxUser: OsUser | undefined): void {
  if (nginxUser) {
    spawnSync('/bin/rm', ['-rf', '--', dir.nginxDir], {
      uid: nginxUser.uid,
      gid: nginxUser.gid,
      stdio: 'ignore',
    });
  }
  rmSync(dir.path, { recursive: true, force: true });
}

/** Whether a router still answers on the socket (any other outcome: nobody is there). */
function routerAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      // EACCES: a socket we may not use is someone else's, and live as far as we can tell.
      resolve(error.code === 'EACCES');
    });
  });
}

/**
 * Removes the folders of gateways that died without stopping (a stack killed outright): ours
 * (same owner), older than a minute, with no router answering on their socket. Asking the
 * socket, not a pid, also holds for a stack in another pid namespace sharing this temp dir.
 */
export async function removeStaleRuntimeDirs(nginxUser: OsUser | undefined): Promise<void> {
  const uid = process.getuid?.();
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = layout(join(tmpdir(), name));
    try {
      const stat = lstatSync(dir.path);
      if (!stat.isDirectory() || stat.uid !== uid) continue;
      if (Date.now() - stat.mtimeMs < STALE_AFTER_MS) continue;
      if (await routerAnswers(dir.routerSocket)) continue;
      removeRuntimeDir(dir, nginxUser);
    } catch {
      // Removed meanwhile, or not ours to remove.
    }
  }
}
