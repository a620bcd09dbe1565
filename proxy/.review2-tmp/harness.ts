import { mkdtempSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import pg from 'pg';
import pino from 'pino';
import { findFreePortRange } from '../../packages/stack/src/ports.ts';
import { CaptureWriter, LeafCertificateCache, loadOrCreateCertificateAuthority, startProxy } from '../src/index.ts';
import { startCaptureDatabase } from '../test/helpers/capture-database.ts';
import { startOrigins } from '../test/helpers/origins.ts';

export const crashes: string[] = [];
export let current = '';
export const setCurrent = (name: string) => { current = name; };
process.on('uncaughtException', (e) => { crashes.push(`[${current}] uncaughtException: ${e.stack?.split('\n').slice(0, 4).join(' | ')}`); });
process.on('unhandledRejection', (e) => { crashes.push(`[${current}] unhandledRejection: ${(e as Error)?.stack?.split('\n').slice(0, 4).join(' | ')}`); });

export async function setup(extra: Record<string, unknown> = {}, withDb = true) {
  const logger = pino({ level: process.env.LOG ?? 'silent' });
  const database = withDb ? await startCaptureDatabase(logger) : undefined;
  const pool = database ? new pg.Pool({ connectionString: database.url, max: 2 }) : undefined;
  pool?.on('error', () => undefined);
  const caDir = mkdtempSync(join(tmpdir(), 'review2-ca-'));
  const ca = loadOrCreateCertificateAuthority(caDir);
  const origins = await startOrigins(['127.0.0.1']);
  let rawAnswer = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok';
  const rawSeen: string[] = [];
  const answerRaw = (socket: net.Socket) => {
    socket.once('data', (c: Buffer) => { rawSeen.push(c.toString('latin1')); if (rawAnswer !== 'HANG') socket.end(rawAnswer); });
    socket.on('error', () => undefined);
  };
  const rawOrigin = net.createServer(answerRaw);
  await new Promise<void>((r) => rawOrigin.listen(0, '127.0.0.1', r));
  const rawPort = (rawOrigin.address() as AddressInfo).port;
  const leaf = await (await LeafCertificateCache.create(origins.originCa)).contextFor('localhost');
  const rawTls = tls.createServer({ key: leaf.keyPem, cert: leaf.certPem }, answerRaw);
  await new Promise<void>((r) => rawTls.listen(0, '127.0.0.1', r));
  const rawTlsPort = (rawTls.address() as AddressInfo).port;
  const spoolDir = mkdtempSync(join(tmpdir(), 'review2-spool-'));
  const writer = new CaptureWriter({ dbUrl: database?.url ?? 'postgres://x@127.0.0.1:1/x', spoolDir, logger, flushIntervalMs: 50 });
  const proxy = await startProxy({
    port: 0, managementPort: 0, writer, allowlist: ['127.0.0.0/8'], ca,
    upstreamCa: [origins.originCa.certPem],
    destinations: ['127.0.0.0/8', 'localhost'],
    ...(pool ? { devices: { pool, proxyDomain: 'proxy.test', portRange: await findFreePortRange(5) } } : {}),
    logger, ...extra,
  });
  return {
    database, pool, ca, origins, proxy, writer, rawPort, rawTlsPort, rawSeen,
    setRaw: (a: string) => { rawAnswer = a; },
    async stop() {
      await proxy.stop(); await writer.stop(); await pool?.end();
      await new Promise((r) => rawOrigin.close(r)); await new Promise((r) => rawTls.close(r));
      await origins.stop(); await database?.stop();
      rmSync(caDir, { recursive: true, force: true }); rmSync(spoolDir, { recursive: true, force: true });
    },
  };
}

export function exchange(port: number, bytes: string | Buffer, ms = 800, localAddress?: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => socket.write(bytes));
    let text = '';
    socket.on('data', (c: Buffer) => { text += c.toString('latin1'); });
    const done = () => resolve(text);
    socket.on('close', done); socket.on('error', done);
    setTimeout(() => { socket.destroy(); done(); }, ms);
  });
}
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
