// startStack(): the whole local backend on one machine without Docker, in dependency order:
// Postgres → platform bootstrap → migrations (+ seed on a new database) → PostgREST, auth and
// functions → gateway. Whatever started is stopped again if a later step fails.
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { localStackComponents, startStatusService } from '@capture/status';
import pino, { type Logger } from 'pino';
import { authConfigFrom } from './auth/auth-config.ts';
import { startAuthService } from './auth/service.ts';
import { discoverFunctions, readFunctionsEnv } from './functions/discover.ts';
import { FunctionHost } from './functions/function-host.ts';
import { startGateway } from './gateway/gateway.ts';
import { createProjectKeys, type ProjectKeys } from './keys.ts';
import { assertPortFree, findFreePort } from './ports.ts';
import { startCluster } from './postgres/cluster.ts';
import { applyMigrations, applyPlatformBootstrap, applySeed } from './postgres/schema-setup.ts';
import { startPostgrest } from './postgrest.ts';
import { loadProjectConfig } from './project-config.ts';
import { startRealtime } from './realtime/realtime-service.ts';
import { type StatusVariables, statusVariables } from './status-variables.ts';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface StackPorts {
  api: number;
  db: number;
  rest: number;
  restAdmin: number;
  auth: number;
}

export interface StackOptions {
  /** Folder holding `supabase/` (config.toml, migrations, seed.sql, functions). */
  projectDir?: string;
  /** Where the cluster, mailbox and state live; default `<projectDir>/.stack`. */
  dataDir?: string;
  /** 'config' uses supabase/config.toml (54321, 54322, …); 'free' picks free ports (tests). */
  ports?: 'config' | 'free';
  /** fsync off: for throwaway test stacks. */
  ephemeral?: boolean;
  /** Apply supabase/seed.sql when the database is new (default true). */
  seed?: boolean;
  /** How often the status service writes service_status (default 10 s, 002 §8). */
  statusIntervalMs?: number;
  /** Extra function secrets over supabase/functions/.env (tests set switches such as test clocks). */
  functionSecrets?: Record<string, string>;
  logger?: Logger;
}

export interface RunningStack {
  projectDir: string;
  dataDir: string;
  mailboxDir: string;
  ports: StackPorts;
  keys: ProjectKeys;
  apiUrl: string;
  dbUrl: string;
  status(): StatusVariables;
  stop(): Promise<void>;
}

async function choosePorts(
  mode: 'config' | 'free',
  apiPort: number,
  dbPort: number,
): Promise<StackPorts> {
  if (mode === 'free') {
    const [api, db, rest, restAdmin, auth] = await Promise.all(
      Array.from({ length: 5 }, () => findFreePort()),
    );
    return { api, db, rest, restAdmin, auth } as StackPorts;
  }
  await assertPortFree(apiPort, 'API gateway');
  await assertPortFree(dbPort, 'Postgres');
  const [rest, restAdmin, auth] = await Promise.all([
    findFreePort(),
    findFreePort(),
    findFreePort(),
  ]);
  return { api: apiPort, db: dbPort, rest, restAdmin, auth } as StackPorts;
}

export async function startStack(options: StackOptions = {}): Promise<RunningStack> {
  const projectDir = resolve(options.projectDir ?? REPO_ROOT);
  const dataDir = resolve(options.dataDir ?? join(projectDir, '.stack'));
  const mailboxDir = join(dataDir, 'mailbox');
  const logger = options.logger ?? pino({ level: 'info' });
  const project = loadProjectConfig(projectDir);
  const keys = await createProjectKeys();
  const ports = await choosePorts(options.ports ?? 'config', project.api.port, project.db.port);
  const apiUrl = `http://127.0.0.1:${ports.api}`;
  mkdirSync(dataDir, { recursive: true });

  const stoppers: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const stopOne of stoppers.reverse()) await stopOne().catch(() => undefined);
    stoppers.length = 0;
  };
  try {
    const cluster = await startCluster({
      dataDir,
      port: ports.db,
      logger,
      ephemeral: options.ephemeral,
    });
    stoppers.push(cluster.stop);
    await applyPlatformBootstrap(cluster.url);
    await applyMigrations(projectDir, cluster.url, logger);
    if (cluster.created && options.seed !== false) await applySeed(projectDir, cluster.url, logger);

    const functionsDir = join(projectDir, 'supabase', 'functions');
    const functions = new FunctionHost({
      functions: discoverFunctions(functionsDir, project.functions),
      secrets: { ...readFunctionsEnv(functionsDir), ...options.functionSecrets },
      projectDir,
      logger,
      environment: {
        SUPABASE_URL: apiUrl,
        SUPABASE_ANON_KEY: keys.anonKey,
        SUPABASE_SERVICE_ROLE_KEY: keys.serviceRoleKey,
        SUPABASE_DB_URL: cluster.url,
        SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({ default: keys.publishableKey }),
        SUPABASE_SECRET_KEYS: JSON.stringify({ default: keys.secretKey }),
      },
    });
    stoppers.push(() => functions.stopAll());
    const [postgrest, auth] = await Promise.all([
      startPostgrest({
        dbPort: ports.db,
        port: ports.rest,
        adminPort: ports.restAdmin,
        jwtSecret: keys.jwtSecret,
        schemas: project.api.schemas,
        extraSearchPath: project.api.extra_search_path,
        maxRows: project.api.max_rows,
        logger,
      }),
      startAuthService({
        port: ports.auth,
        dbPort: ports.db,
        config: authConfigFrom(project, apiUrl, keys.jwtSecret),
        mailboxDir,
        logger,
      }),
      functions.startAll(),
    ]);
    stoppers.push(postgrest.stop, auth.stop);
    const realtime = await startRealtime({ dbUrl: cluster.url, jwtSecret: keys.jwtSecret, logger });
    stoppers.push(realtime.stop);
    const gateway = await startGateway({
      port: ports.api,
      keys,
      restPort: ports.rest,
      authPort: ports.auth,
      functions,
      realtime,
      logger,
    });
    stoppers.push(gateway.stop);
    const status = await startStatusService({
      dbUrl: cluster.url,
      components: localStackComponents({ dbUrl: cluster.url, apiUrl, anonKey: keys.anonKey }),
      intervalMs: options.statusIntervalMs,
      logger,
    });
    stoppers.push(status.stop);

    const stack: RunningStack = {
      projectDir,
      dataDir,
      mailboxDir,
      ports,
      keys,
      apiUrl,
      dbUrl: cluster.url,
      status: () => statusVariables(stack),
      stop,
    };
    return stack;
  } catch (error) {
    await stop();
    throw error;
  }
}
