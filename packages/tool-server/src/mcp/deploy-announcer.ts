// Deploys reach every instance (001 §6, §9): each instance that starts records its build and
// announces it with NOTIFY; every instance LISTENs, and a build other than the last it knew of
// makes it tell its clients that the tool and resource lists changed. Postgres is the one thing
// all instances share, so no other bus is needed. A lost listening connection is re-opened, and
// on reconnect the newest recorded build is compared, so a deploy during the gap is not missed.
import pg from 'pg';
import type { Logger } from 'pino';

const CHANNEL = 'tool_server_deploys';
const RECONNECT_MS = 2_000;

export interface DeployAnnouncer {
  stop(): Promise<void>;
}

export async function startDeployAnnouncer(options: {
  dbUrl: string;
  buildNumber: string;
  logger: Logger;
  onDeploy(buildNumber: string): void;
}): Promise<DeployAnnouncer> {
  const { logger } = options;
  let latest = options.buildNumber;
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const seen = (build: string) => {
    if (build === latest) return;
    latest = build;
    logger.info({ event: 'tool_server.deploy_seen', build }, 'a new build is serving');
    options.onDeploy(build);
  };

  const connect = async (first: boolean): Promise<void> => {
    const next = new pg.Client({
      connectionString: options.dbUrl,
      application_name: 'tool-server-deploys',
    });
    next.on('error', (error) => logger.warn({ err: error }, 'deploy listener connection lost'));
    next.on('end', () => {
      if (!stopped)
        retry = setTimeout(() => void connect(false).catch(() => undefined), RECONNECT_MS);
    });
    next.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload) seen(message.payload);
    });
    try {
      await next.connect();
      await next.query(`listen ${CHANNEL}`);
      if (first) {
        await next.query(
          `insert into private.tool_server_deploys (build_number) values ($1)
           on conflict (build_number) do update set started_at = now()`,
          [options.buildNumber],
        );
        await next.query('select pg_notify($1, $2)', [CHANNEL, options.buildNumber]);
      } else {
        const { rows } = await next.query<{ build_number: string }>(
          'select build_number from private.tool_server_deploys order by started_at desc limit 1',
        );
        if (rows[0]) seen(rows[0].build_number);
      }
      client = next;
    } catch (error) {
      await next.end().catch(() => undefined);
      if (first) throw error;
    }
  };

  await connect(true);
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
