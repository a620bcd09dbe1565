// Deploys reach every instance (001 §6, §9): each instance that starts records its build and
// announces it with NOTIFY; every instance LISTENs, and a build other than the last it knew of
// makes it tell its clients that the tool and resource lists changed. Postgres is the one thing
// all instances share, so no other bus is needed. A lost listening connection is re-opened, and
// on reconnect the newest recorded build is compared, so a deploy during the gap is not missed.
// It connects in the background: an instance starting while Postgres is away still serves (its
// OAuth endpoints answer 503) and announces itself once the database is back.
import pg from 'pg';
import type { Logger } from 'pino';

const CHANNEL = 'tool_server_deploys';
const RECONNECT_MS = 2_000;
const CONNECT_TIMEOUT_MS = 5_000;

export interface DeployAnnouncer {
  stop(): Promise<void>;
}

export function startDeployAnnouncer(options: {
  dbUrl: string;
  buildNumber: string;
  logger: Logger;
  onDeploy(buildNumber: string): void;
}): DeployAnnouncer {
  const { logger } = options;
  let latest = options.buildNumber;
  let client: pg.Client | undefined;
  let stopped = false;
  let announced = false;
  let retry: NodeJS.Timeout | undefined;

  const seen = (build: string) => {
    if (build === latest) return;
    latest = build;
    logger.info({ event: 'tool_server.deploy_seen', build }, 'a new build is serving');
    options.onDeploy(build);
  };

  const scheduleReconnect = () => {
    client = undefined;
    if (!stopped) retry = setTimeout(() => void connect(), RECONNECT_MS);
  };

  /** Records and announces this build (once), or catches up on a deploy missed while away. */
  const announceOrCatchUp = async (listener: pg.Client) => {
    if (!announced) {
      await listener.query(
        `insert into private.tool_server_deploys (build_number) values ($1)
         on conflict (build_number) do update set started_at = now()`,
        [options.buildNumber],
      );
      await listener.query('select pg_notify($1, $2)', [CHANNEL, options.buildNumber]);
      announced = true;
      return;
    }
    const { rows } = await listener.query<{ build_number: string }>(
      'select build_number from private.tool_server_deploys order by started_at desc limit 1',
    );
    if (rows[0]) seen(rows[0].build_number);
  };

  const connect = async (): Promise<void> => {
    const listener = new pg.Client({
      connectionString: options.dbUrl,
      application_name: 'tool-server-deploys',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    listener.on('error', (error) => logger.warn({ err: error }, 'deploy listener connection lost'));
    listener.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload) seen(message.payload);
    });
    try {
      await listener.connect();
      if (stopped) {
        await listener.end();
        return;
      }
      await listener.query(`listen ${CHANNEL}`);
      await announceOrCatchUp(listener);
      client = listener;
      listener.once('end', scheduleReconnect);
    } catch (error) {
      logger.warn({ err: error }, 'deploy listener could not connect; retrying');
      await listener.end().catch(() => undefined);
      scheduleReconnect();
    }
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const current = client;
      client = undefined;
      current?.removeAllListeners('end');
      await current?.end().catch(() => undefined);
    },
  };
}
