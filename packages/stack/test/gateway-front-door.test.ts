// The gateway's front door as a process: where it keeps its files and as whom it runs, what a
// taken port or a missing nginx says, that a key cannot rewrite its configuration, that a stop
// leaves nothing behind, and that nothing outlives a stack process killed outright.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, statSync, utimesSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { errors } from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FunctionHost } from '../src/functions/function-host.ts';
import { upstreamFailureAnswer } from '../src/gateway/forward.ts';
import { assertNginxInstalled } from '../src/gateway/front-door.ts';
import { GATEWAY_USER, startGateway } from '../src/gateway/gateway.ts';
import { renderNginxConfig } from '../src/gateway/nginx-config.ts';
import { createProjectKeys, type ProjectKeys } from '../src/keys.ts';
import { findFreePort } from '../src/ports.ts';
import { systemUser } from '../src/system-user.ts';
import { until } from './helpers/until.ts';

let keys: ProjectKeys;
const toClose: Server[] = [];

beforeAll(async () => {
  keys = await createProjectKeys();
});

afterEach(async () => {
  for (const server of toClose.splice(0)) await new Promise((resolve) => server.close(resolve));
});

function gatewayOn(port: number) {
  return startGateway({
    port,
    keys,
    restPort: 9,
    authPort: 9,
    functions: { find: () => undefined } as unknown as FunctionHost,
    logger: pino({ level: 'silent' }),
  });
}

/** The runtime folder of the gateway listening on `port`, found by its configuration. */
function runtimeDirOf(port: number): string | undefined {
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith('capture-gateway-'))
    .map((name) => join(tmpdir(), name))
    .find((dir) => {
      try {
        return readFileSync(join(dir, 'nginx.conf'), 'utf8').includes(`listen 127.0.0.1:${port};`);
      } catch {
        return false;
      }
    });
}

/** Real uid of a process, from /proc. */
function uidOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('Uid:'));
  return Number(line?.split(/\s+/)[1]);
}

describe('the front door process', () => {
  it('keeps its files in a private folder, runs unprivileged, and leaves nothing at stop', async () => {
    const port = await findFreePort();
    const gateway = await gatewayOn(port);
    const dir = runtimeDirOf(port);
    expect(dir).toBeDefined();
    const runtimeDir = dir as string;
    const asRoot = process.getuid?.() === 0;
    // As root, nginx runs as its own account (scripts/setup.sh creates it; CI runs setup first).
    const nginxUid = asRoot ? systemUser(GATEWAY_USER)?.uid : process.getuid?.();
    expect(nginxUid).toBeDefined();
    // The stack user's folder (nginx may pass through, no more) and nginx's own subfolder.
    const folder = statSync(runtimeDir);
    expect(folder.uid).toBe(process.getuid?.());
    expect(folder.mode & 0o777).toBe(asRoot ? 0o711 : 0o700);
    const nginxDir = statSync(join(runtimeDir, 'nginx'));
    expect(nginxDir.mode & 0o777).toBe(0o700);
    expect(nginxDir.uid).toBe(nginxUid);
    // The configuration (it holds the keys) and the router's socket: nginx's user's alone.
    const config = statSync(join(runtimeDir, 'nginx.conf'));
    expect(config.mode & 0o777).toBe(0o400);
    expect(config.uid).toBe(nginxUid);
    const socket = statSync(join(runtimeDir, 'router.sock'));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);
    expect(socket.uid).toBe(nginxUid);
    const pid = Number(readFileSync(join(runtimeDir, 'nginx', 'nginx.pid'), 'utf8'));
    expect(uidOf(pid)).toBe(nginxUid);

    await gateway.stop();
    expect(existsSync(runtimeDir)).toBe(false);
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    const refused = await fetch(`http://127.0.0.1:${port}/rest/v1/`).catch((error) => error);
    expect(refused).toBeInstanceOf(Error);
  });

  // Another unprivileged account (here `nobody`, which other daemons run as) can neither read
  // the project keys in the configuration nor reach the router, where it could claim any client
  // address for auth's rate limits. Only meaningful when the stack runs as root.
  it.skipIf(process.getuid?.() !== 0)(
    'keeps the keys and the router out of reach of other unprivileged processes',
    async () => {
      const port = await findFreePort();
      const gateway = await gatewayOn(port);
      try {
        const runtimeDir = runtimeDirOf(port) as string;
        // Asynchronously: the router answering the last command lives in this process.
        const asNobody = (...command: string[]) =>
          new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
            execFile(
              'setpriv',
              ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', ...command],
              { encoding: 'utf8', timeout: 5_000 },
              (error, stdout, stderr) =>
                resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
            );
          });
        const read = await asNobody('cat', join(runtimeDir, 'nginx.conf'));
        expect(read.status).not.toBe(0);
        expect(read.stderr).toContain('Permission denied');
        expect(read.stdout).not.toContain(keys.serviceRoleKey);
        const reach = await asNobody(
          'socat',
          '-u',
          'OPEN:/dev/null',
          `UNIX-CONNECT:${join(runtimeDir, 'router.sock')}`,
        );
        expect(reach.status).not.toBe(0);
        expect(reach.stderr).toContain('Permission denied');
        // The same account reaches what is meant for everyone: the gateway's port.
        const viaPort = await asNobody(
          'curl',
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          `http://127.0.0.1:${port}/rest/v1/`,
        );
        expect(viaPort.stdout).toBe('401');
      } finally {
        await gateway.stop();
      }
    },
  );

  it('names the port, the service and the holder when the port is taken, and cleans up', async () => {
    const holder = createServer();
    toClose.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const failure = await gatewayOn(port).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'StackError', code: 'port_in_use' });
    expect((failure as Error).message).toContain(`port ${port}, which the API gateway`);
    expect((failure as Error).message).toContain(`pid ${process.pid}`);
    expect((failure as Error).message).toContain('--free-ports');
    expect(runtimeDirOf(port)).toBeUndefined();
  });

  it('answers a REST request it hands the router with the JSON 502 when the router is gone', async () => {
    const port = await findFreePort();
    const gateway = await gatewayOn(port);
    const socket = join(runtimeDirOf(port) as string, 'router.sock');
    renameSync(socket, `${socket}.away`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/rest/v1/notes`, {
        headers: { apikey: 'a-user-token', authorization: 'bearer a-user-token' },
      });
      expect(response.status).toBe(502);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(await response.json()).toEqual({
        message: 'An invalid response was received from the upstream server',
      });
    } finally {
      renameSync(`${socket}.away`, socket);
      await gateway.stop();
    }
  });

  it('says what to install when nginx is missing', () => {
    expect(() => assertNginxInstalled('/nonexistent/nginx')).toThrow(
      /nginx not found at \/nonexistent\/nginx .*apt-get install -y nginx/,
    );
  });
});

describe('upstream failures on the router path', () => {
  it('answers an upstream that never sent its head in time 504, as nginx does', () => {
    expect(upstreamFailureAnswer(new errors.HeadersTimeoutError())).toEqual({
      status: 504,
      body: { message: 'The upstream server is timing out' },
    });
    expect(upstreamFailureAnswer(new errors.SocketError('other side closed'))).toEqual({
      status: 502,
      body: { message: 'An invalid response was received from the upstream server' },
    });
  });
});

describe('the front door configuration', () => {
  const settings = () => ({
    port: 54321,
    restPort: 3000,
    routerSocket: '/tmp/x/router.sock',
    nginxDir: '/tmp/x/nginx',
    keys,
  });

  it('maps every project key, case-sensitively and whole, to the JWT it stands for', () => {
    const config = renderNginxConfig(settings());
    const pattern = (key: string) => `"~^${key.replace(/[^A-Za-z0-9]/g, '\\$&')}$"`;
    expect(config).toContain(`${pattern(keys.publishableKey)} "${keys.anonKey}";`);
    expect(config).toContain(`${pattern(keys.anonKey)} "${keys.anonKey}";`);
    expect(config).toContain(`${pattern(keys.secretKey)} "${keys.serviceRoleKey}";`);
    expect(config).toContain(`${pattern(keys.serviceRoleKey)} "${keys.serviceRoleKey}";`);
  });

  it.each([
    ['a quote', 'sb_publishable_x"; } server { listen 80; #'],
    ['a newline', 'sb_publishable_x\nlisten 80;'],
    ['a dollar sign', 'sb_publishable_$remote_addr'],
  ])('refuses a key holding %s instead of writing it into the configuration', (_what, key) => {
    expect(() =>
      renderNginxConfig({ ...settings(), keys: { ...keys, publishableKey: key } }),
    ).toThrow(/cannot quote/);
  });
});

describe('when the stack process dies without stopping', () => {
  const gatewayModule = join(import.meta.dirname, '..', 'src', 'gateway', 'gateway.ts');
  const keysModule = join(import.meta.dirname, '..', 'src', 'keys.ts');

  it('nginx ends with it, and the next gateway sweeps the leftover folder', async () => {
    const port = await findFreePort();
    const script = `
      import pino from 'pino';
import { errors } from 'undici';
      import { startGateway } from ${JSON.stringify(gatewayModule)};
      import { createProjectKeys } from ${JSON.stringify(keysModule)};
      await startGateway({
        port: ${port},
        keys: await createProjectKeys(),
        restPort: 9,
        authPort: 9,
        functions: { find: () => undefined },
        logger: pino({ level: 'silent' }),
      });
      console.log('ready');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          if (String(chunk).includes('ready')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`gateway child exited with ${code}`)));
      });
      const runtimeDir = runtimeDirOf(port) as string;
      const pid = Number(readFileSync(join(runtimeDir, 'nginx', 'nginx.pid'), 'utf8'));
      expect(existsSync(`/proc/${pid}`)).toBe(true);

      child.kill('SIGKILL');
      await until(() => !existsSync(`/proc/${pid}`) || undefined, 10_000);
      // Its folder is left behind (nothing ran to remove it) until another gateway starts, and
      // is taken for a dead stack's only once it is a minute old: made older here.
      expect(existsSync(runtimeDir)).toBe(true);
      const young = await gatewayOn(await findFreePort());
      await young.stop();
      expect(existsSync(runtimeDir)).toBe(true);
      const minuteAgo = new Date(Date.now() - 61_000);
      utimesSync(runtimeDir, minuteAgo, minuteAgo);
      const next = await gatewayOn(await findFreePort());
      await next.stop();
      expect(existsSync(runtimeDir)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
