// The gateway's front door: Debian's nginx with the configuration nginx-config.ts writes, run as
// a child of the stack (as `nobody` when the stack runs as root) from a private runtime folder.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { StackError } from '../errors.ts';
import { ManagedProcess } from '../managed-process.ts';
import { portTakenError } from '../port-holders.ts';
import { waitUntil } from '../ports.ts';
import type { OsUser } from '../system-user.ts';
import { type FrontDoorConfig, renderNginxConfig } from './nginx-config.ts';

const NGINX_BINARY = '/usr/sbin/nginx';

export interface FrontDoorOptions extends FrontDoorConfig {
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
  const configFile = join(options.runtimeDir, 'nginx.conf');
  writeFileSync(configFile, renderNginxConfig(options));
  const nginx = new ManagedProcess({
    name: 'gateway',
    command: NGINX_BINARY,
    // -e: the error log before the configuration is read, which otherwise is /var/log/nginx.
    args: ['-p', options.runtimeDir, '-c', configFile, '-e', 'stderr'],
    env: { PATH: process.env.PATH },
    uid: options.user?.uid,
    gid: options.user?.gid,
    logger: options.logger,
    endsWithParent: true,
  });
  // nginx writes its pid file after it has bound the port: from then on it takes connections.
  const pidFile = join(options.runtimeDir, 'nginx.pid');
  try {
    await nginx.whileRunning(
      waitUntil('gateway (nginx)', async () => {
        return (
          existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() === String(nginx.child.pid)
        );
      }),
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
