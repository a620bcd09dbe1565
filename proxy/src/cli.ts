#!/usr/bin/env node
// Runs the capture proxy on its own (production, or beside a hosted Supabase): settings come from
// PROXY_* environment variables (docs/proxy.md); logs are JSON lines on stdout (pino). SIGINT and
// SIGTERM close the listeners and flush the capture queue before exiting. With PROXY_WORKERS above
// one (the default on a machine with more than two cores) this process is the primary and runs
// the same file again as each worker (workers/primary.ts).
import cluster from 'node:cluster';
import pino from 'pino';
import { ZodError } from 'zod';
import { configFromEnvironment, type DaemonConfig, startProxyDaemon } from './daemon.ts';
import { startWorkers } from './workers/primary.ts';
import { startWorker } from './workers/worker.ts';
import { WorkerLink } from './workers/worker-link.ts';

const USAGE = `Usage: node proxy/src/cli.ts [--help]

Runs the capture proxy. Settings come from the environment (docs/proxy.md):
  PROXY_DB_URL             Postgres URL (required; a role that may set role service_role)
  PROXY_DATA_DIR           CA files and the capture spool (default .proxy)
  PROXY_HOST               bind address (default 127.0.0.1; 0.0.0.0 to serve devices)
  PROXY_PORT               shared port (default 8888)
  PROXY_MANAGEMENT_PORT    /allocate, PAC, /health, /ca.pem (default 8889)
  PROXY_DOMAIN             PAC host names (default proxy.localhost)
  PROXY_DEVICE_PORTS       device port pool (default 20000-20999)
  PROXY_ALLOWLIST          client addresses allowed (default 127.0.0.0/8,::1/128)
  PROXY_DESTINATIONS       CIDRs, host patterns and 'public' the proxy may reach (default public:
                           no loopback, private, link-local or metadata addresses)
  PROXY_PORTS_PER_ACCOUNT  device ports one account may hold (default 20)
  PROXY_ALLOCATE_FAILURES_PER_MINUTE  failed /allocate calls per address and minute (default 30)
  PROXY_PASSTHROUGH_HOSTS  hosts never intercepted (default none)
  PROXY_BODY_CAP           bytes of each body kept (default 1048576)
  PROXY_HTTP2              on or off (default on)
  PROXY_UPSTREAM_CA_FILE   extra PEM roots for origins
  PROXY_BREAKPOINT_TIMEOUT_MS  longest breakpoint hold, then it continues (default 300000)
  PROXY_BREAKPOINT_MAX_HELD    exchanges held at once; beyond, traffic flows unheld (default 200)
  PROXY_WORKERS            processes serving traffic (default: one per core but one, at least 1)
  LOG_LEVEL                pino level (default info)

Example: PROXY_DB_URL=postgresql://postgres:postgres@127.0.0.1:54322/postgres node proxy/src/cli.ts`;

// A CLI that explains itself: --help, and one line per mistake with the usage, exit 2.
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h') || args[0] === 'help') {
  console.log(USAGE);
  process.exit(0);
}
if (args.length > 0) {
  console.error(
    `capture-proxy: unknown argument ${args[0]}; settings come from PROXY_* variables\n\n${USAGE}`,
  );
  process.exit(2);
}
let config: DaemonConfig;
try {
  config = configFromEnvironment(process.env);
} catch (error) {
  if (!(error instanceof ZodError)) throw error;
  const problems = error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  console.error(`capture-proxy: ${problems.join('; ')}\n\n${USAGE}`);
  process.exit(2);
}

const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
// A promise nobody awaited must not take every device offline: it is logged as a defect, and
// the daemon keeps serving. (Every request path handles its own errors; this is the net.)
process.on('unhandledRejection', (reason) => {
  logger.error({ err: reason }, 'unhandled rejection (a defect: please report it)');
});
/** One process, the primary of several workers, or one of those workers. */
async function start(): Promise<{ stop(): Promise<void> }> {
  if (cluster.isWorker) {
    const { daemon, link } = await startWorker(config, logger);
    link.onStop(() => stop('the primary'));
    return daemon;
  }
  if ((config.workers ?? 1) > 1) {
    const workers = await startWorkers(config, logger);
    logger.info(
      { port: workers.port, managementPort: workers.managementPort, workers: config.workers },
      'capture proxy workers listening',
    );
    return workers;
  }
  return startProxyDaemon(config, logger);
}

// A fault at start (database unreachable, a port taken) is one line on stderr; the detail with
// its stack goes to the log (stdout), as for every other event of the daemon.
const running = await start().catch(async (error: unknown) => {
  logger.error({ err: error }, 'cannot start');
  if (cluster.isWorker) {
    // The primary says it, once for the daemon.
    await WorkerLink.failed((error as Error).message);
    process.exit(1);
  }
  console.error(`capture-proxy: cannot start: ${(error as Error).message} (details in the log)`);
  process.exit(1);
});
let stopping = false;
function stop(reason: string): void {
  if (stopping) return;
  stopping = true;
  logger.info({ reason }, 'stopping');
  running.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, 'stop failed');
      process.exit(1);
    },
  );
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop(signal));
