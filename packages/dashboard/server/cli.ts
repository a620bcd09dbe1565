#!/usr/bin/env node
// Runs the dashboard server on its own (production, or beside a hosted Supabase): settings come
// from DASHBOARD_* environment variables; logs are JSON lines on stdout (pino).
import pino from 'pino';
import { startDashboardServer } from './dashboard-server.ts';
import { dashboardOptionsFromEnvironment } from './environment.ts';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
const server = await startDashboardServer({
  ...dashboardOptionsFromEnvironment(process.env),
  logger,
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'stopping');
    server.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  });
}
