// The gateway's front door as a process: where it keeps its files and as whom it runs, what a
// taken port or a missing nginx says, that a key cannot rewrite its configuration, that a stop
// leaves nothing behind, and that nothing outlives a stack process killed outright.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FunctionHost } from '../src/functions/function-host.ts';
import { assertNginxInstalled } from '../src/gateway/front-door.ts';
import { startGateway } from '../src/gateway/gateway.ts';
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
    expect(statSync(runtimeDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(runtimeDir, 'router.sock')).isSocket()).toBe(true);
    const pid = Number(readFileSync(join(runtimeDir, 'nginx.pid'), 'utf8'));
    const expectedUid =
      process.getuid?.() === 0 ? systemUser('nobody')?.uid : (process.getuid?.() as number);
    expect(uidOf(pid)).toBe(expectedUid);
    expect(statSync(runtimeDir).uid).toBe(expectedUid);

    await gateway.stop();
    expect(existsSync(runtimeDir)).toBe(false);
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    const refused = await fetch(`http://127.0.0.1:${port}/rest/v1/`).catch((error) => error);
    expect(refused).toBeInstanceOf(Error);
  });

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

  it('says what to install when nginx is missing', () => {
    expect(() => assertNginxInstalled('/nonexistent/nginx')).toThrow(
      /nginx not found at \/nonexistent\/nginx .*apt-get install -y nginx/,
    );
  });
});

describe('the front door configuration', () => {
  const settings = () => ({
    port: 54321,
    restPort: 3000,
    routerSocket: '/tmp/x/router.sock',
    runtimeDir: '/tmp/x',
    keys,
  });

  it('maps every project key to the JWT it stands for', () => {
    const config = renderNginxConfig(settings());
    expect(config).toContain(`"${keys.publishableKey}" "${keys.anonKey}";`);
    expect(config).toContain(`"${keys.secretKey}" "${keys.serviceRoleKey}";`);
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
      const pid = Number(readFileSync(join(runtimeDir, 'nginx.pid'), 'utf8'));
      expect(existsSync(`/proc/${pid}`)).toBe(true);

      child.kill('SIGKILL');
      await until(() => !existsSync(`/proc/${pid}`) || undefined, 10_000);
      // Its folder is left behind (nothing ran to remove it) until another gateway starts.
      expect(existsSync(runtimeDir)).toBe(true);
      const next = await gatewayOn(await findFreePort());
      await next.stop();
      expect(existsSync(runtimeDir)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
