import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
const dataDir = mkdtempSync(join(tmpdir(), 'review2-'));
const stack = await startStack({ dataDir, ports: 'free', ephemeral: true, logger: pino({ level: 'warn' }),
  functionSecrets: { FEDERATION_TEST_CLOCK: '1', FEDERATION_ALLOW_HTTP_PARTNERS: '1', FEDERATION_JWKS_COOLDOWN_MS: '0' } });
writeFileSync(join(import.meta.dirname, 'stack.json'), JSON.stringify({ apiUrl: stack.apiUrl, ports: stack.ports, keys: stack.keys, dataDir }));
const stop = async () => { await stack.stop(); rmSync(dataDir, { recursive: true, force: true }); process.exit(0); };
process.on('SIGTERM', stop); process.on('SIGINT', stop);
setInterval(() => {}, 1 << 30);
