#!/usr/bin/env node
// Runs the capture proxy on its own (production, or beside a hosted Supabase): settings come from
// PROXY_* environment variables (docs/proxy.md); logs are JSON lines on stdout (pino). SIGINT and
// SIGTERM close the listeners and flush the capture queue before exiting.
import pino from 'pino';
import { configFromEnvironment, startProxyDaemon } from './daemon.ts';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
// A promise nobody awaited must not take every device offline: it is logged as a defect, and
// the daemon keeps serving. (Every request path handles its own errors; this is the net.)
process.on('unhandledRejection', (reason) => {
  logger.error({ err: reason }, 'unhandled rejection (a defect: please report it)');
});
const daemon = await startProxyDaemon(configFromEnvironment(process.env), logger);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'stopping');
    daemon.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  });
}
