import { writeFileSync } from 'node:fs';
import pg from 'pg';
import pino from 'pino';
import { loadOrCreateCertificateAuthority } from '../src/index.ts';
import { createUser, issueBundle } from '../test/helpers/bundles.ts';
import { startCaptureDatabase } from '../test/helpers/capture-database.ts';

const logger = pino({ level: 'warn' });
const db = await startCaptureDatabase(logger);
const pool = new pg.Pool({ connectionString: db.url });
const ca = loadOrCreateCertificateAuthority('/tmp/proxy-review/ca');
await pool.query(`select private.register_proxy_ca($1,$2)`, [ca.certPem, ca.fingerprint256]);
const A = 'ad000000-0000-4000-8000-00000000a001',
  B = 'ad000000-0000-4000-8000-00000000b001';
await createUser(pool, A, 'a@x.test');
await createUser(pool, B, 'b@x.test');
const bundleA = await issueBundle(pool, A);
const bundleB = await issueBundle(pool, B);
await pool.end();
writeFileSync(
  '/tmp/proxy-review/db.json',
  JSON.stringify({ url: db.url, dataDir: db.dataDir, bundleA, bundleB }),
);
console.log('db ready', db.url, db.dataDir);
const stop = async () => {
  await db.stop();
  console.log('db stopped');
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setInterval(() => {}, 1 << 30);
