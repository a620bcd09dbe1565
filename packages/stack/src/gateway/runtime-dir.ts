// The gateway's private runtime folder under the temp dir: nginx's configuration, the router's
// socket, and a subfolder nginx writes (its pid file, its temp folders). When the stack runs as
// root and nginx as another account, the folder stays root's (0711: nginx may pass through, no
// one else may list, add or rename), so no link planted by a process of nginx's account can turn
// a write or chmod of root's elsewhere. The configuration and the socket belong to nginx's user
// alone; the subfolder is nginx's to write. Removal is Node's rmSync, which opens each folder
// with O_NOFOLLOW and unlinks relative to it, so links planted in nginx's subfolder are removed,
// never followed.
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

/** The configuration holds the keys: readable by nginx's user alone (and root). */
export function writeConfig(dir: RuntimeDir, text: string, nginxUser: OsUser | undefined): void {
  writeFileSync(dir.configFile, text, { mode: 0o400, flag: 'wx' });
  if (nginxUser) chownSync(dir.configFile, nginxUser.uid, nginxUser.gid);
}

/** Hands the router's socket (created 0600, router.ts) to nginx's user alone (and root). */
export function openRouterSocket(dir: RuntimeDir, nginxUser: OsUser | undefined): void {
  if (nginxUser) chownSync(dir.routerSocket, nginxUser.uid, nginxUser.gid);
}

/**
 * Never throws: a folder that cannot be removed now (a process of nginx's account racing the
 * removal) is left for the next gateway's sweep rather than failing a stop or hiding a start's
 * real error.
 */
export function removeRuntimeDir(dir: RuntimeDir): void {
  try {
    rmSync(dir.path, { recursive: true, force: true });
  } catch {
    // swept later (removeStaleRuntimeDirs)
  }
}

/** Whether a router still answers on the socket. */
function routerAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Removes the folders of gateways that died without stopping (a stack killed outright): ours
 * (same owner), older than a minute, with no router answering on their socket. Asking the
 * socket, not a pid, also holds for a stack in another pid namespace sharing this temp dir.
 */
export async function removeStaleRuntimeDirs(): Promise<void> {
  const uid = process.getuid?.();
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = layout(join(tmpdir(), name));
    try {
      const stat = lstatSync(dir.path);
      if (!stat.isDirectory() || stat.uid !== uid) continue;
      if (Date.now() - stat.mtimeMs < STALE_AFTER_MS) continue;
      if (await routerAnswers(dir.routerSocket)) continue;
      removeRuntimeDir(dir);
    } catch {
      // Removed meanwhile, or not ours to remove.
    }
  }
}
