// The stack's single entry point (port 54321, like the CLI's Kong): /rest/v1 to PostgREST,
// /auth/v1 to the auth service, /storage/v1 to the storage service, /functions/v1 to the
// function processes, WebSocket upgrades at /realtime/v1/websocket to the realtime service, CORS
// for browsers. Two parts: nginx owns the port and sends ordinary REST requests straight to
// PostgREST (front-door.ts); everything else goes to the Node router (router.ts) over a Unix
// socket in a private runtime folder.
import type { Logger } from 'pino';
import { StackError } from '../errors.ts';
import { type OsUser, systemUser } from '../system-user.ts';
import { assertNginxInstalled, startFrontDoor } from './front-door.ts';
import { type RouterOptions, startRouter } from './router.ts';
import {
  createRuntimeDir,
  openRouterSocket,
  removeRuntimeDir,
  removeStaleRuntimeDirs,
} from './runtime-dir.ts';

export interface GatewayOptions extends Omit<RouterOptions, 'upstreams' | 'socketPath'> {
  port: number;
}

export interface RunningGateway {
  url: string;
  stop(): Promise<void>;
}

/** The system account `scripts/setup.sh` creates for nginx: no other process runs as it. */
export const GATEWAY_USER = 'capture-gateway';

/**
 * nginx never runs as root: a root-run stack hands it to its own account, so no other process
 * may read its configuration (the project keys) or connect to the router's socket (and claim a
 * client address there). Without that account, `nobody`, whose other processes could.
 */
function frontDoorUser(logger: Logger): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const own = systemUser(GATEWAY_USER);
  if (own) return own;
  const user = systemUser('nobody');
  if (!user) {
    throw new StackError(
      'missing_dependency',
      `running as root but no \`${GATEWAY_USER}\` or \`nobody\` system user; run scripts/setup.sh as root`,
    );
  }
  logger.warn(
    `nginx runs as \`nobody\`, whose other processes could read the gateway's keys; run scripts/setup.sh as root to create the \`${GATEWAY_USER}\` user`,
  );
  return user;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  assertNginxInstalled();
  const user = frontDoorUser(options.logger);
  await removeStaleRuntimeDirs();
  const runtime = createRuntimeDir(user);
  const router = await startRouter({ ...options, socketPath: runtime.routerSocket }).catch(
    (error: unknown) => {
      removeRuntimeDir(runtime);
      throw error;
    },
  );
  try {
    openRouterSocket(runtime, user);
    const frontDoor = await startFrontDoor({
      port: options.port,
      restPort: options.restPort,
      runtime,
      keys: options.keys,
      user,
      logger: options.logger,
    });
    return {
      url: `http://127.0.0.1:${options.port}`,
      async stop() {
        await frontDoor.stop();
        await router.stop();
        removeRuntimeDir(runtime);
      },
    };
  } catch (error) {
    await router.stop();
    removeRuntimeDir(runtime);
    throw error;
  }
}
