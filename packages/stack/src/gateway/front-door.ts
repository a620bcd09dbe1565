// The gateway's front door: Debian's nginx with the configuration nginx-config.ts writes, run as
// a child of the stack (as its own `capture-gateway` account when the stack runs as root) from a
// private runtime folder.
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { StackError } from '../errors.ts';
import type { ProjectKeys } from '../keys.ts';
import { ManagedProcess } from '../managed-process.ts';
import { isListeningOn, portTakenError } from '../port-holders.ts';
import { waitUntil } from '../ports.ts';
import type { OsUser } from '../system-user.ts';
import { renderNginxConfig } from './nginx-config.ts';
import { type RuntimeDir, writeConfig } from './runtime-dir.ts';

const NGINX_BINARY = '/usr/sbin/nginx';

export interface FrontDoorOptions {
  /** The gateway port, on 127.0.0.1. */
  port: number;
  restPort: number;
  runtime: RuntimeDir;
  keys: ProjectKeys;
  /** The account nginx runs as; undefined runs it as the stack's own user. */
  user: OsUser | undefined;
  logger: Logger;
}

export interface RunningFrontDoor {
  stop(): Promise<void>;
}

/** Fails with what to install when Debian's nginx is not there. */
export function assertNginxInstalled(binary = NGINX_BINARY): void {
  if (!existsSync(binary)) {
    throw new StackError(
      'missing_dependency',
      `nginx not found at ${binary} (the gateway's front door); install it with: sudo apt-get ` +
        'update && sudo apt-get install -y nginx (or run `npm start`, which does this when run as root)',
    );
  }
}

export async function startFrontDoor(options: FrontDoorOptions): Promise<RunningFrontDoor> {
  assertNginxInstalled();
  const { runtime } = options;
  writeConfig(
    runtime,
    renderNginxConfig({
      port: options.port,
      restPort: options.restPort,
      routerSocket: runtime.routerSocket,
      nginxDir: runtime.nginxDir,
      keys: options.keys,
    }),
    options.user,
  );
  const nginx = new ManagedProcess({
    name: 'gateway',
    command: NGINX_BINARY,
    // -e: the error log before the configuration is read, which otherwise is /var/log/nginx.
    args: ['-p', runtime.nginxDir, '-c', runtime.configFile, '-e', 'stderr'],
    env: { PATH: process.env.PATH },
    uid: options.user?.uid,
    gid: options.user?.gid,
    logger: options.logger,
    endsWithParent: true,
  });
  // Up once our nginx holds the listening socket (never judged by a file nginx's user writes).
  const pid = nginx.child.pid as number;
  try {
    await nginx.whileRunning(
      waitUntil('gateway (nginx)', async () => isListeningOn(pid, options.port)),
    );
  } catch (error) {
    await nginx.stop();
    if (/Address already in use/.test(nginx.recentOutput())) {
      throw portTakenError(options.port, 'API gateway', { cause: error });
    }
    throw error;
  }
  return { stop: () => nginx.stop() };
}
