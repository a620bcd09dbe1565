// A free-port start retries when a chosen port is taken before its server listens (another test
// file's stack took it). Each server names that race differently; these are the real messages.
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { isAddressInUse, StackError } from '../src/errors.ts';
import { serveOnLoopback } from '../src/loopback-server.ts';
import { findFreePort } from '../src/ports.ts';
import { startPostgrest } from '../src/postgrest.ts';

const held: Server[] = [];

async function holdPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  held.push(server);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

afterEach(async () => {
  await Promise.all(held.splice(0).map((server) => new Promise((done) => server.close(done))));
});

describe('a port taken before its server listens', () => {
  it('is recognised in PostgREST’s own words', async () => {
    const port = await holdPort();
    const failure = await startPostgrest({
      dbPort: await findFreePort(),
      port,
      adminPort: await findFreePort(),
      jwtSecret: 'x'.repeat(40),
      schemas: ['public'],
      extraSearchPath: ['public'],
      maxRows: 10,
      logger: pino({ level: 'silent' }),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StackError);
    expect((failure as StackError).code).toBe('process_exited');
    expect(isAddressInUse(failure)).toBe(true);
  });

  it('is recognised in Node’s words', async () => {
    const port = await holdPort();
    const second = createServer();
    second.listen(port, '127.0.0.1');
    const [error] = await once(second, 'error');
    expect(isAddressInUse(error)).toBe(true);
  });

  it('rejects the start of an in-process service (auth, storage), not an uncaught error', async () => {
    const port = await holdPort();
    const failure = await serveOnLoopback(() => new Response('never'), port).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAddressInUse(failure)).toBe(true);
  });

  it('is not confused with other failures', () => {
    expect(isAddressInUse(new StackError('process_exited', 'postgrest exited (code 1)'))).toBe(
      false,
    );
    expect(isAddressInUse(new Error('connection refused'))).toBe(false);
  });
});
