// Port helpers: a free loopback port for throwaway stacks, and a readiness wait for services.
import { connect, createServer } from 'node:net';
import { StackError } from './errors.ts';

export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

export async function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Fails fast with a clear message when a fixed port (54321, 54322, …) is taken. */
export async function assertPortFree(port: number, what: string): Promise<void> {
  if (await isPortOpen(port)) {
    throw new StackError(
      'port_in_use',
      `port ${port} (${what}) is already in use: stop whatever listens there, or run ` +
        '`npm run stack -- down` if it is an earlier stack',
    );
  }
}

/** Polls `probe` until it resolves true or the deadline passes. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new StackError('start_timeout', `${what} did not become ready within ${timeoutMs} ms`);
}
