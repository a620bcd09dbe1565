import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import pino from 'pino';
import { CaptureWriter, loadOrCreateCertificateAuthority, startProxy } from '../src/index.ts';

const cfg = JSON.parse(readFileSync('/tmp/proxy-review/db.json', 'utf8'));
const logger = pino({ level: process.env.LL ?? 'warn' });
process.on('exit', (code) => {
  try {
    writeFileSync('/tmp/proxy-review/proxy-exit.txt', `exit ${code}\n`);
  } catch {}
});
const pool = new pg.Pool({ connectionString: cfg.url, max: 4, connectionTimeoutMillis: 2000 });
pool.on('error', () => undefined);
const writer = new CaptureWriter({ dbUrl: cfg.url, spoolDir: '/tmp/proxy-review/spool', logger });
const ca = loadOrCreateCertificateAuthority('/tmp/proxy-review/ca');
const proxy = await startProxy({
  port: Number(process.env.PPORT ?? 0),
  managementPort: 0,
  host: '127.0.0.1',
  writer,
  allowlist: ['127.0.0.0/8', '::1/128'],
  ca,
  bodyCap: Number(process.env.CAP ?? 1048576),
  passthroughHosts: ['pinned.test'],
  destinations: process.env.DEST ? process.env.DEST.split(',') : undefined,
  upstreamCa: process.env.UPCA ? [readFileSync(process.env.UPCA, 'utf8')] : undefined,
  devices: {
    pool,
    proxyDomain: 'proxy.test',
    portRange: { start: 21000, end: 21009 },
    refreshIntervalMs: 1000,
  },
  logger,
});
writeFileSync(
  '/tmp/proxy-review/proxy.json',
  JSON.stringify({ port: proxy.port, mgmt: proxy.managementPort, pid: process.pid }),
);
console.log('proxy', proxy.port, proxy.managementPort, process.pid);
