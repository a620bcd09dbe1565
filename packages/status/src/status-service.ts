// The status service (002 §2.2, §4.2, §8): about every 10 s it samples the host, probes every
// component over its real interface, rolls the results up and replaces the service_status row
// with the service role. It keeps going when a component or the database is down.
import { execFile } from 'node:child_process';
import pg from 'pg';
import type { Logger } from 'pino';
import { HostSampler } from './host-metrics.ts';
import { type ComponentProbe, runProbe } from './probes.ts';
import { type ComponentStatus, StatusSnapshot } from './snapshot-schemas.ts';

export interface ComponentDefinition {
  key: string;
  label: string;
  probe: ComponentProbe;
  /** systemd unit running it, when a service manager does; its ActiveState is reported. */
  unit?: string;
}

export interface StatusServiceOptions {
  /** Postgres superuser or owner URL; writes run as `service_role` inside it. */
  dbUrl: string;
  components: ComponentDefinition[];
  intervalMs?: number;
  probeTimeoutMs?: number;
  /**
   * Whether the service's timer keeps the process alive: yes for the daemon (cli.ts), whose
   * only work it is; no when embedded (the local stack), whose owner decides when to exit.
   */
  keepsProcessAlive?: boolean;
  logger: Logger;
}

export interface RunningStatusService {
  /** The last snapshot taken (written or not). */
  latest(): StatusSnapshot | undefined;
  stop(): Promise<void>;
}

/** The components of the local stack, probed through the gateway like any client would. */
export function localStackComponents(settings: {
  dbUrl: string;
  apiUrl: string;
  anonKey: string;
  /** The capture proxy's /health, when the stack runs one. */
  proxyHealthUrl?: string;
  /** A tool-server URL that answers 200 without a token, when the stack runs one. */
  toolServerUrl?: string;
}): ComponentDefinition[] {
  const headers = { apikey: settings.anonKey };
  const wsUrl = `${settings.apiUrl.replace(/^http/, 'ws')}/realtime/v1/websocket?apikey=${settings.anonKey}&vsn=2.0.0`;
  return [
    { key: 'postgres', label: 'Postgres', probe: { kind: 'postgres', url: settings.dbUrl } },
    {
      key: 'rest',
      label: 'REST API',
      probe: { kind: 'http', url: `${settings.apiUrl}/rest/v1/`, headers },
    },
    {
      key: 'auth',
      label: 'Auth',
      probe: { kind: 'http', url: `${settings.apiUrl}/auth/v1/health`, headers },
    },
    { key: 'realtime', label: 'Realtime', probe: { kind: 'websocket', url: wsUrl } },
    {
      key: 'functions',
      label: 'Edge functions',
      probe: { kind: 'http', url: `${settings.apiUrl}/functions/v1/`, headers },
    },
    ...(settings.proxyHealthUrl
      ? [
          {
            key: 'proxy',
            label: 'Capture proxy',
            probe: { kind: 'http' as const, url: settings.proxyHealthUrl },
          },
        ]
      : []),
    ...(settings.toolServerUrl
      ? [
          {
            key: 'tool-server',
            label: 'Tool server',
            probe: { kind: 'http' as const, url: settings.toolServerUrl },
          },
        ]
      : []),
  ];
}

/** `systemctl is-active` for a unit; undefined where no service manager answers. */
function unitActiveState(unit: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    // Exit status is non-zero for inactive units; the state is still printed.
    execFile('systemctl', ['is-active', unit], { timeout: 2_000 }, (_error, stdout) => {
      resolve(stdout.trim() || undefined);
    });
  });
}

const healthy = (component: ComponentStatus) =>
  component.probe.up && component.unitState === 'active';

/** 002 §2.2: down when the database or every component is down, degraded when any is unhealthy. */
export function rollUpOverall(components: ComponentStatus[]): StatusSnapshot['overall'] {
  const database = components.find((component) => component.key === 'postgres');
  if ((database && !healthy(database)) || components.every((component) => !healthy(component))) {
    return 'down';
  }
  return components.every(healthy) ? 'ok' : 'degraded';
}

export async function startStatusService(
  options: StatusServiceOptions,
): Promise<RunningStatusService> {
  const logger = options.logger.child({ component: 'status' });
  const interval = options.intervalMs ?? 10_000;
  const timeout = options.probeTimeoutMs ?? Math.min(3_000, interval);
  const host = new HostSampler();
  const pool = new pg.Pool({
    connectionString: options.dbUrl,
    max: 1,
    connectionTimeoutMillis: timeout,
    application_name: 'status',
  });
  pool.on('error', (error) => logger.debug({ err: error }, 'status pool connection lost'));
  let latest: StatusSnapshot | undefined;
  let stopped = false;
  let tableMissingLogged = false;
  let timer: NodeJS.Timeout | undefined;
  let cycle: Promise<void> = Promise.resolve();

  async function probeComponent(definition: ComponentDefinition): Promise<ComponentStatus> {
    const probe = await runProbe(definition.probe, timeout);
    const managed = definition.unit ? await unitActiveState(definition.unit) : undefined;
    return {
      key: definition.key,
      label: definition.label,
      probe,
      // Without a service manager the probe decides: active when it answers, failed when not.
      unitState: managed ?? (probe.up ? 'active' : 'failed'),
    };
  }

  async function takeSnapshot(): Promise<StatusSnapshot> {
    const components = await Promise.all(options.components.map(probeComponent));
    // The shared schema guards what goes out: a drift fails here, not in a dashboard.
    return StatusSnapshot.parse({
      overall: rollUpOverall(components),
      host: host.sample(),
      components,
      generated_at: new Date().toISOString(),
    });
  }

  async function write(snapshot: StatusSnapshot): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query('set local role service_role');
      // A held lock on the row must not stall the service: give up and retry next cycle.
      await client.query("set local statement_timeout = '5s'; set local lock_timeout = '2s'");
      await client.query(
        `insert into public.service_status (id, snapshot, updated_at) values (1, $1, now())
         on conflict (id) do update set snapshot = excluded.snapshot, updated_at = excluded.updated_at`,
        [snapshot],
      );
      await client.query('commit');
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async function runCycle(): Promise<void> {
    try {
      latest = await takeSnapshot();
      await write(latest);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === '42P01') {
        if (!tableMissingLogged) logger.info('no public.service_status table; probing only');
        tableMissingLogged = true;
      } else {
        logger.warn({ err: error }, 'status snapshot not written; retrying next cycle');
      }
    }
  }

  function schedule(delay: number) {
    timer = setTimeout(() => {
      cycle = runCycle().finally(() => {
        if (!stopped) schedule(interval);
      });
    }, delay);
    if (!options.keepsProcessAlive) timer.unref();
  }
  schedule(0);

  return {
    latest: () => latest,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await cycle;
      await pool.end().catch(() => undefined);
    },
  };
}
