// The daemon's primary process when it runs several workers (PROXY_WORKERS; docs/proxy.md
// "Worker processes"). Node's cluster module shares every listening port: a worker's listen
// reaches the primary, which binds the port once and deals the accepted connections to the workers
// in turn. Each worker is otherwise a whole daemon of its own (its writer, its breakpoint rows
// under its own instance name, its listeners following the database's port map), because the
// state that must hold across workers already lives in Postgres: device ports and their
// bindings, the /allocate failure counts, the breakpoint rows. What only lived in memory is passed
// through here: the set-up pages' device activity, the hosts learned to pass through, the bindings /allocate and set-up links just
// made (ahead of the database's notification), and the capture counts for /health.
//
// The primary serves no traffic. It creates the CA and the instance name before any worker starts
// (so none races to create them), closes the breakpoint rows every worker of an earlier run left
// held, gathers the captures they left spooled, starts the workers,
// restarts one that dies, and on stop tells each to stop (answering held exchanges, flushing its
// captures) and waits for it.
import cluster, { type Worker } from 'node:cluster';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { closeHoldsOfEarlierRun } from '../breakpoints/breakpoints.ts';
import type { DaemonConfig } from '../daemon.ts';
import { proxyInstanceId } from '../daemon.ts';
import { loadOrCreateCertificateAuthority } from '../tls/certificate-authority.ts';
import {
  type FromPrimary,
  type FromWorker,
  isProxyMessage,
  WORKER_COUNT_VARIABLE,
  WORKER_INDEX_VARIABLE,
  type WorkerCaptureStats,
} from './messages.ts';
import { gatherWorkerSpools } from './worker-spools.ts';

const BROADCAST_EVERY_MS = 1_000;
/** A worker that dies is started again after this, doubling while it keeps dying, up to a minute. */
const FIRST_RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 60_000;
/** A worker up this long has recovered: its next death waits the first delay again. */
const HEALTHY_AFTER_MS = 60_000;
/** A worker still stopping after this is killed (held exchanges and the flush take seconds). */
const STOP_GRACE_MS = 60_000;

export interface RunningWorkers {
  port: number;
  managementPort: number | undefined;
  stop(): Promise<void>;
}

/** Before any worker starts, as one process does before it listens (breakpoints.ts). */
async function closeHoldsOfEveryWorker(config: DaemonConfig, logger: Logger): Promise<void> {
  const pool = new pg.Pool({
    connectionString: config.dbUrl,
    max: 1,
    connectionTimeoutMillis: 2_000,
    application_name: 'capture-proxy-primary',
  });
  pool.on('error', () => undefined);
  try {
    await closeHoldsOfEarlierRun(pool, proxyInstanceId(config.dataDir), logger);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

interface Slot {
  worker: Worker | undefined;
  startedAt: number;
  restartDelayMs: number;
  restartTimer: NodeJS.Timeout | undefined;
}

export async function startWorkers(config: DaemonConfig, logger: Logger): Promise<RunningWorkers> {
  const count = config.workers ?? 1;
  loadOrCreateCertificateAuthority(config.dataDir);
  await closeHoldsOfEveryWorker(config, logger);
  const gathered = gatherWorkerSpools(join(config.dataDir, 'spool'));
  if (gathered > 0)
    logger.info({ captures: gathered }, 'spooled captures of earlier workers gathered');

  const slots: Slot[] = Array.from({ length: count }, () => ({
    worker: undefined,
    startedAt: 0,
    restartDelayMs: FIRST_RESTART_DELAY_MS,
    restartTimer: undefined,
  }));
  const captures = new Map<number, WorkerCaptureStats>();
  let stopping = false;

  const send = (worker: Worker | undefined, message: FromPrimary) => {
    if (worker?.isConnected()) worker.send(message, undefined, () => undefined);
  };
  const broadcastCaptures = setInterval(() => {
    const workers = [...captures.values()];
    for (const slot of slots) send(slot.worker, { kind: 'captures', workers });
  }, BROADCAST_EVERY_MS);
  broadcastCaptures.unref();

  // A binding goes to every live sibling; its maker hears back once each has applied it.
  const pendingShares = new Map<number, { maker: Worker; makerId: number; waiting: number }>();
  let nextShareId = 1;
  const shareDevice = (maker: Worker, message: Extract<FromWorker, { kind: 'device' }>) => {
    const siblings = slots
      .map((slot) => slot.worker)
      .filter(
        (other): other is Worker => other !== undefined && other !== maker && other.isConnected(),
      );
    if (siblings.length === 0) {
      send(maker, { kind: 'device-shared', id: message.id });
      return;
    }
    const id = nextShareId++;
    pendingShares.set(id, { maker, makerId: message.id, waiting: siblings.length });
    // A sibling that dies before it answers: the maker stopped waiting after a second.
    setTimeout(() => pendingShares.delete(id), 10_000).unref();
    for (const sibling of siblings) send(sibling, { ...message, id });
  };
  const deviceApplied = (id: number) => {
    const pending = pendingShares.get(id);
    if (!pending) return;
    pending.waiting -= 1;
    if (pending.waiting > 0) return;
    pendingShares.delete(id);
    send(pending.maker, { kind: 'device-shared', id: pending.makerId });
  };

  const fork = (index: number): Promise<Extract<FromWorker, { kind: 'ready' }>> => {
    const slot = slots[index] as Slot;
    const worker = cluster.fork({
      [WORKER_INDEX_VARIABLE]: String(index),
      [WORKER_COUNT_VARIABLE]: String(count),
    });
    slot.worker = worker;
    slot.startedAt = Date.now();
    return new Promise((resolve, reject) => {
      let ready = false;
      let failure: string | undefined;
      worker.on('message', (message: unknown) => {
        if (!isProxyMessage<FromWorker>(message)) return;
        if (message.kind === 'ready') {
          ready = true;
          resolve(message);
        } else if (message.kind === 'failed') {
          failure = message.message;
        } else if (message.kind === 'activity' || message.kind === 'passthrough') {
          for (const other of slots) if (other.worker !== worker) send(other.worker, message);
        } else if (message.kind === 'device') {
          shareDevice(worker, message);
        } else if (message.kind === 'device-applied') {
          deviceApplied(message.id);
        } else if (message.kind === 'captures') {
          captures.set(index, message.stats);
        }
      });
      worker.once('exit', (code, signal) => {
        if (slot.worker === worker) slot.worker = undefined;
        captures.delete(index);
        const how = signal ?? `code ${code}`;
        if (!ready) {
          reject(new Error(failure ?? `proxy worker ${index} exited (${how}) before it was ready`));
          return;
        }
        if (stopping) return;
        if (Date.now() - slot.startedAt > HEALTHY_AFTER_MS) {
          slot.restartDelayMs = FIRST_RESTART_DELAY_MS;
        }
        logger.error(
          { worker: index, exit: how, restartInMs: slot.restartDelayMs },
          'proxy worker died; starting it again',
        );
        scheduleRestart(index);
      });
    });
  };

  const scheduleRestart = (index: number) => {
    const slot = slots[index] as Slot;
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      if (stopping) return;
      fork(index).then(
        () => logger.info({ worker: index }, 'proxy worker started again'),
        (error: unknown) => {
          if (stopping) return;
          logger.error({ worker: index, err: error }, 'proxy worker failed to start again');
          scheduleRestart(index);
        },
      );
    }, slot.restartDelayMs);
    slot.restartDelayMs = Math.min(slot.restartDelayMs * 2, MAX_RESTART_DELAY_MS);
  };

  const stop = async () => {
    stopping = true;
    clearInterval(broadcastCaptures);
    for (const slot of slots) if (slot.restartTimer) clearTimeout(slot.restartTimer);
    await Promise.all(
      slots.map(({ worker }) => {
        if (!worker || worker.isDead()) return undefined;
        return new Promise<void>((resolve) => {
          const kill = setTimeout(() => worker.process.kill('SIGKILL'), STOP_GRACE_MS);
          worker.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          send(worker, { kind: 'stop' });
        });
      }),
    );
  };

  // Workers start one after the other: the first binds each port in the primary, the next join it.
  let first: Extract<FromWorker, { kind: 'ready' }> | undefined;
  try {
    for (let index = 0; index < count; index += 1) {
      const ready = await fork(index);
      first ??= ready;
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const { port, managementPort } = first as Extract<FromWorker, { kind: 'ready' }>;
  return { port, managementPort, stop };
}
