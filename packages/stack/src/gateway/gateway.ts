// The stack's single entry point (port 54321, like the CLI's Kong): /rest/v1 to PostgREST,
// /auth/v1 to the auth service, /functions/v1 to the function processes, WebSocket upgrades at
// /realtime/v1/websocket to the realtime service, CORS for browsers. Two parts: nginx owns the
// port and sends ordinary REST requests straight to PostgREST (front-door.ts); everything else
// goes to the Node router (router.ts) over a Unix socket in a private runtime folder.
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StackError } from '../errors.ts';
import { type OsUser, systemUser } from '../system-user.ts';
import { assertNginxInstalled, startFrontDoor } from './front-door.ts';
import { type RouterOptions, startRouter } from './router.ts';

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

const RUNTIME_DIR_PREFIX = 'capture-gateway-';
/** The pid of the stack process a runtime folder belongs to. */
const OWNER_FILE = 'stack.pid';

/**
 * Runtime folders of stacks that died without stopping: their nginx ended with them (and took
 * its pid file along), but nothing removed the folder. Each names the process that made it.
 */
function removeStaleRuntimeDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(RUNTIME_DIR_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    try {
      const pid = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
      // /proc, not kill(pid, 0): that fails for another user's live process too.
      if (Number.isSafeInteger(pid) && pid > 0 && !existsSync(`/proc/${pid}`)) {
        rmSync(dir, { recursive: true, force: true });
      }
    } catch {
      // Another user's folder (unreadable), or one removed meanwhile: not ours to sweep.
    }
  }
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  assertNginxInstalled();
  const user = frontDoorUser();
  removeStaleRuntimeDirs();
  // nginx's pid file, temp folders and configuration (which holds the service key), and the
  // router's socket: 0700, so nothing but nginx (and root) can reach the router.
  const runtimeDir = mkdtempSync(join(tmpdir(), RUNTIME_DIR_PREFIX));
  writeFileSync(join(runtimeDir, OWNER_FILE), String(process.pid));
  if (user) chownSync(runtimeDir, user.uid, user.gid);
  const routerSocket = join(runtimeDir, 'router.sock');
  const removeRuntimeDir = () => rmSync(runtimeDir, { recursive: true, force: true });
  const router = await startRouter({ ...options, socketPath: routerSocket }).catch((error) => {
    removeRuntimeDir();
    throw error;
  });
  try {
    const frontDoor = await startFrontDoor({
      port: options.port,
      restPort: options.restPort,
      routerSocket,
      runtimeDir,
      keys: options.keys,
      user,
      logger: options.logger,
    });
    return {
      url: `http://127.0.0.1:${options.port}`,
      async stop() {
        await frontDoor.stop();
        await router.stop();
        removeRuntimeDir();
      },
    };
  } catch (error) {
    await router.stop();
    removeRuntimeDir();
    throw error;
  }
}
