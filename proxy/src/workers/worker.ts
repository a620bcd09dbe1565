// One worker process of a daemon (docs/proxy.md "Worker processes"): a whole daemon serving its
// share of the connections on the ports the primary shares, linked to its siblings through the
// primary (worker-link.ts). Its index and the worker count come from the primary's environment.
import type { Logger } from 'pino';
import { z } from 'zod';
import { type DaemonConfig, type RunningDaemon, startProxyDaemon } from '../daemon.ts';
import { WORKER_COUNT_VARIABLE, WORKER_INDEX_VARIABLE } from './messages.ts';
import { WorkerLink } from './worker-link.ts';

const WorkerEnvironment = z.object({
  [WORKER_INDEX_VARIABLE]: z.coerce.number().int().min(0),
  [WORKER_COUNT_VARIABLE]: z.coerce.number().int().min(1),
});

export interface RunningWorker {
  daemon: RunningDaemon;
  link: WorkerLink;
}

export async function startWorker(config: DaemonConfig, logger: Logger): Promise<RunningWorker> {
  const environment = WorkerEnvironment.parse(process.env);
  const index = environment[WORKER_INDEX_VARIABLE];
  const link = new WorkerLink(index, environment[WORKER_COUNT_VARIABLE]);
  const daemon = await startProxyDaemon(config, logger.child({ worker: index }), link);
  // Listed on /health from now on: a worker there is one that takes connections.
  link.reportCaptures(daemon.writer);
  link.ready(daemon.proxy.port, daemon.proxy.managementPort);
  return { daemon, link };
}
