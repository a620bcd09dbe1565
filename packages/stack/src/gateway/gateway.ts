// The stack's single entry point (port 54321, like the CLI's Kong): /rest/v1 to PostgREST,
// /auth/v1 to the auth service, /functions/v1 to the function processes, WebSocket upgrades at
// /realtime/v1/websocket to the realtime service, CORS for browsers. Two parts: nginx owns the
// port and sends ordinary REST requests straight to PostgREST (front-door.ts); everything else
// goes to the Node router (router.ts) over a Unix socket in a private runtime folder.
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

/** nginx never runs as root: a root-run stack hands it to `nobody`. */
function frontDoorUser(): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = systemUser('nobody');
  if (!user) {
    throw new StackError('missing_dependency', 'running as root but no `nobody` system user');
  }
  return user;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  assertNginxInstalled();
  const user = frontDoorUser();
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
