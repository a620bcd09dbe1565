// startToolServer(): the tool server on its configured sockets, with its pool and client
// resolver; stop() closes listeners (and open streams), the fetcher and the pool.
import type { Server } from 'node:http';
import { startFarm } from '@capture/farm';
import { createAdaptorServer } from '@hono/node-server';
import type { Logger } from 'pino';
import { createToolServerApp } from './app.ts';
import { authIssuerOf, parseToolServerConfig, type ToolServerConfigInput } from './config.ts';
import { Origins } from './http/origins.ts';
import { SignatureMemo } from './http/signature-memo.ts';
import { CallerProfiles } from './mcp/caller-profile.ts';
import { type DeployAnnouncer, startDeployAnnouncer } from './mcp/deploy-announcer.ts';
import { ListenStreams } from './mcp/listen-streams.ts';
import { createMcpEndpoint } from './mcp/mcp-endpoint.ts';
import { createRedactor } from './mcp/redactor.ts';
import { ToolCallAdmission } from './mcp/tool-call-admission.ts';
import { MetadataDocumentFetcher } from './oauth/client-metadata-document.ts';
import { ClientResolver } from './oauth/client-resolver.ts';
import { createDatabase } from './store/database.ts';

export interface RunningToolServer {
  stop(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export async function startToolServer(
  input: ToolServerConfigInput,
  parentLogger: Logger,
): Promise<RunningToolServer> {
  const config = parseToolServerConfig(input);
  const logger = parentLogger.child({ component: 'tool-server' });
  const db = createDatabase(config.dbUrl, logger, { timeoutMs: config.storeDeadlineMs - 500 });
  // Tool queries run as the caller with the API's 8 s statement timeout (001 §8), on their own pool
  // so a slow tool call never holds up sign-ins; its connections go round-robin per user, the
  // search path in a smaller share (docs/tool-server.md "Fair use").
  const { toolCalls } = config;
  const toolDb = createDatabase(config.dbUrl, logger, {
    timeoutMs: 10_000,
    max: toolCalls.poolSize,
    fairQueue: toolCalls.fairUse
      ? { searchSlots: toolCalls.searchSlots, waitMs: toolCalls.slotWaitMs }
      : undefined,
  });
  const redact = createRedactor(config.jwtSecret);
  // A store outage does not cut streams (the keep-alive check then counts as live).
  const listenStreams = new ListenStreams(async (jti) => {
    const rows = await db.query(
      `select 1 from public.api_tokens t join auth.users u on u.id = t.user_id
        where t.jti = $1 and t.revoked_at is null and t.expires_at > now()
          and u.deleted_at is null and (u.banned_until is null or u.banned_until < now())`,
      [jti],
    );
    return rows.length > 0;
  });
  const farm = config.farm.enabled
    ? startFarm(config.farm, db, logger, { dashboardUrl: config.dashboardUrl, redact })
    : null;
  const mcp = createMcpEndpoint({
    buildNumber: config.buildNumber,
    logger,
    approvalsInClient: config.approvalsInClient,
    toolCallFor: (caller, accessToken) => ({
      caller,
      asCaller: (work, options) => toolDb.asCaller(caller.claims, work, options),
      redact,
      pacUrl: (port) =>
        config.pacUrlTemplate ? config.pacUrlTemplate.replace('{port}', String(port)) : null,
      farm,
      // Storage reads as the caller (their token, the anon key): RLS on storage.objects decides.
      storage: config.supabaseAnonKey
        ? {
            url: `${config.supabaseUrl.replace(/\/+$/, '')}/storage/v1`,
            apikey: config.supabaseAnonKey,
            accessToken,
          }
        : null,
    }),
  });
  const fetcher = new MetadataDocumentFetcher({
    allowPrivateAddresses: config.metadataDocumentsAllowPrivateAddresses,
    extraCa: config.metadataDocumentsExtraCa,
  });
  const origins = new Origins(config.origins);
  const app = createToolServerApp({
    config,
    db,
    origins,
    secret: new TextEncoder().encode(config.jwtSecret),
    signatures: new SignatureMemo(),
    authIssuer: authIssuerOf(config),
    clients: new ClientResolver(db, fetcher),
    profiles: new CallerProfiles(toolDb),
    listenStreams,
    mcp,
    admission: toolCalls.fairUse ? new ToolCallAdmission(toolCalls) : null,
    logger,
  });
  const servers: Server[] = [];
  let announcer: DeployAnnouncer | undefined;
  const stop = async () => {
    await announcer?.stop();
    listenStreams.closeAll();
    await mcp.close();
    await farm?.close();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await fetcher.close();
    await db.close();
    await toolDb.close();
  };
  try {
    for (const { host, port } of config.listen) {
      const server = createAdaptorServer({ fetch: app.fetch }) as Server;
      servers.push(server);
      await listen(server, port, host);
    }
    // 001 §6: every deploy makes every instance's clients refresh their lists.
    announcer = startDeployAnnouncer({
      dbUrl: config.dbUrl,
      buildNumber: config.buildNumber,
      logger,
      onDeploy: () => {
        mcp.notify.toolsChanged();
        mcp.notify.resourcesChanged();
        listenStreams.broadcast('notifications/tools/list_changed');
        listenStreams.broadcast('notifications/resources/list_changed');
      },
    });
  } catch (error) {
    await stop();
    throw error;
  }
  logger.info({ origins: origins.all }, 'tool server listening');
  return { stop };
}
