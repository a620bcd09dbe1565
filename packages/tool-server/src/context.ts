// What every route of the tool server shares: settings, the store, the origins it serves, the
// signing secret and the client resolver.

import type { McpHttpHandler } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { ToolServerConfig } from './config.ts';
import type { Origins } from './http/origins.ts';
import type { SignatureMemo } from './http/signature-memo.ts';
import type { CallerProfiles } from './mcp/caller-profile.ts';
import type { ListenStreams } from './mcp/listen-streams.ts';
import type { ToolCallAdmission } from './mcp/tool-call-admission.ts';
import type { ClientResolver } from './oauth/client-resolver.ts';
import type { Database } from './store/database.ts';

export interface ToolServerContext {
  config: ToolServerConfig;
  db: Database;
  origins: Origins;
  /** The project's JWT secret as key bytes (HS256). */
  secret: Uint8Array;
  /** Access tokens whose signature was checked, until they expire. */
  signatures: SignatureMemo;
  /** `iss` of dashboard session tokens. */
  authIssuer: string;
  clients: ClientResolver;
  /** The MCP side: who the caller is, their listen streams, and the SDK handler. */
  profiles: CallerProfiles;
  listenStreams: ListenStreams;
  mcp: McpHttpHandler;
  /** Limits of tools/call per token and account; null where fair use is off. */
  admission: ToolCallAdmission | null;
  logger: Logger;
}

/** Hono variables set by the host check for every request. */
export interface ToolServerVariables {
  /** The allowlisted origin the request was addressed to: issuer, resource and endpoint base. */
  origin: string;
  clientAddress: string;
}

export type ToolServerEnv = { Variables: ToolServerVariables };
