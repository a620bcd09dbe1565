// Port helpers: a free loopback port for throwaway stacks, and a readiness wait for services.
import { connect, createServer } from 'node:net';
import { StackError } from './errors.ts';
import { portTakenError } from './port-holders.ts';

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

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * A run of `size` consecutive ports free on every host in `hosts` (the proxy's device ports),
 * chosen in 10000-29999: below the kernel's ephemeral range (32768+), so outgoing connections
 * and other stacks' `findFreePort()` never take a port of the run before the proxy listens on it.
 */
export async function findFreePortRange(
  size: number,
  hosts: string[] = ['127.0.0.1'],
): Promise<{ start: number; end: number }> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const start = 10_000 + Math.floor(Math.random() * (20_000 - size));
    let free = true;
    for (let port = start; port < start + size && free; port += 1) {
      for (const host of hosts) free = free && (await bindable(port, host));
    }
    if (free) return { start, end: start + size - 1 };
  }
  throw new StackError('port_in_use', `no run of ${size} free ports found`);
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
  if (await isPortOpen(port)) throw portTakenError(port, what);
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
