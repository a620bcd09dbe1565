// startToolServer(): the tool server on its configured sockets, with its pool and client
// resolver; stop() closes listeners (and open streams), the fetcher and the pool.
import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import type { Logger } from 'pino';
import { createToolServerApp } from './app.ts';
import { authIssuerOf, parseToolServerConfig, type ToolServerConfigInput } from './config.ts';
import { Origins } from './http/origins.ts';
import { MetadataDocumentFetcher } from './oauth/client-metadata-document.ts';
import { ClientResolver } from './oauth/client-resolver.ts';
import { createDatabase } from './store/database.ts';

export interface RunningToolServer {
  /** `{mcp_url}`, then the other origins served (`{mcp_url_legacy}`). */
  origins: readonly string[];
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
    authIssuer: authIssuerOf(config),
    clients: new ClientResolver(db, fetcher),
    logger,
  });
  const servers: Server[] = [];
  const stop = async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await fetcher.close();
    await db.close();
  };
  try {
    for (const { host, port } of config.listen) {
      const server = createAdaptorServer({ fetch: app.fetch }) as Server;
      servers.push(server);
      await listen(server, port, host);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  logger.info({ origins: origins.all }, 'tool server listening');
  return { origins: origins.all, stop };
}
