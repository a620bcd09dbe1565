// A private Debian adb server per test file: its own free port (`adb -P`), its own HOME (keys)
// and TMPDIR (its log), so it never meets the machine's or another test's server; stop() kills it
// and waits until its port is closed, leaving nothing running.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
export const ADB_PATH = '/usr/bin/adb';

export interface PrivateAdbServer {
  port: number;
  /** Runs an adb client against this server. */
  adb(...args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** `adb connect host:port`, then waits until the device is online. */
  attach(serial: string): Promise<void>;
  stop(): Promise<void>;
}

export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** `port`: one chosen earlier (a tool server configured before the adb server starts). */
export async function startPrivateAdbServer(chosenPort?: number): Promise<PrivateAdbServer> {
  const home = await mkdtemp(join(tmpdir(), 'adb-home-'));
  const port = chosenPort ?? (await freeLoopbackPort());
  const env = { PATH: '/usr/bin:/bin', HOME: home, TMPDIR: home, ADB_LIBUSB: '0' };
  const adb = async (...args: string[]) => {
    const { stdout, stderr } = await exec(ADB_PATH, ['-P', String(port), ...args], {
      env,
      timeout: 20_000,
    });
    return { stdout, stderr };
  };
  await adb('start-server');
  return {
    port,
    adb,
    async attach(serial) {
      const { stdout } = await adb('connect', serial);
      if (!stdout.includes(`connected to ${serial}`)) throw new Error(`adb connect: ${stdout}`);
      await adb('-s', serial, 'wait-for-device');
    },
    async stop() {
      await adb('kill-server').catch(() => undefined);
      for (let attempt = 0; attempt < 50 && (await isListening(port)); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await rm(home, { recursive: true, force: true });
    },
  };
}
