#!/usr/bin/env node
// Runs the tool server outside the local stack (production: beside the proxy and the status
// service, any number of instances behind a load balancer). Settings come from the environment,
// validated once at start (docs/tool-server.md lists them).
import pino from 'pino';
import { z } from 'zod';
import { startToolServer } from './tool-server.ts';

/** host:port, the host optionally in brackets (IPv6). */
const LISTEN_PAIR = /^\[?([^\]]+?)\]?:(\d+)$/;

const list = z.string().transform((value) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean),
);

const Environment = z.object({
  TOOL_SERVER_ORIGINS: list.describe(
    '{mcp_url},{mcp_url_legacy}: the origins served, canonical first',
  ),
  TOOL_SERVER_LISTEN: list
    .default(['0.0.0.0:8080'])
    .refine((pairs) => pairs.every((pair) => LISTEN_PAIR.test(pair)), 'each entry is host:port')
    .describe('host:port pairs to listen on, comma-separated'),
  TOOL_SERVER_DASHBOARD_URL: z.string().url().describe('{dashboard_url}'),
  TOOL_SERVER_DB_URL: z
    .string()
    .min(1)
    .describe('Postgres URL of the project (owner of schema private)'),
  TOOL_SERVER_SUPABASE_URL: z.string().url().describe('{base_url}: the Supabase API URL'),
  TOOL_SERVER_SUPABASE_ANON_KEY: z
    .string()
    .min(1)
    .optional()
    .describe("the project's anon key: Storage reads as the caller (apk_object)"),
  TOOL_SERVER_JWT_SECRET: z.string().min(32).describe("the project's JWT secret (HS256)"),
  TOOL_SERVER_BUILD_NUMBER: z.string().min(1).describe('serverInfo.version; set by the deploy'),
  TOOL_SERVER_ACCESS_TOKEN_TTL: z.coerce
    .number()
    .int()
    .optional()
    .describe('access-token lifetime in seconds (default 3600)'),
  TOOL_SERVER_REGISTRATIONS_PER_HOUR: z.coerce
    .number()
    .int()
    .optional()
    .describe('client registrations per address per hour (default 30)'),
  TOOL_SERVER_TRUSTED_PROXY_HOPS: z.coerce
    .number()
    .int()
    .optional()
    .describe('proxies in front that append X-Forwarded-For (default 0)'),
  TOOL_SERVER_TOOL_CALLS_PER_TOKEN: z.coerce
    .number()
    .int()
    .optional()
    .describe('tool calls in flight per access token (default 8)'),
  TOOL_SERVER_TOOL_CALLS_PER_USER: z.coerce
    .number()
    .int()
    .optional()
    .describe('tool calls in flight per account (default 16)'),
  TOOL_SERVER_TOOL_CALLS_RATE: z.coerce
    .number()
    .optional()
    .describe('tool calls per second per account, sustained (default 10)'),
  TOOL_SERVER_TOOL_CALLS_BURST: z.coerce
    .number()
    .int()
    .optional()
    .describe('tool calls per account at once after a quiet spell (default 50)'),
  TOOL_SERVER_TOOL_POOL_SIZE: z.coerce
    .number()
    .int()
    .optional()
    .describe('connections for tool queries (default 10)'),
  TOOL_SERVER_TOOL_SEARCH_SLOTS: z.coerce
    .number()
    .int()
    .optional()
    .describe('of those, at most this many for searches (default 3)'),
  TOOL_SERVER_APPROVALS_IN_CLIENT: z
    .enum(['on', 'off'])
    .optional()
    .describe('farm approvals also by elicitation in the client (default on; off: dashboard only)'),
});

const USAGE = `Usage: node packages/tool-server/src/cli.ts [--help]

Runs the tool server: the MCP endpoint and its OAuth 2.1 authorization server
(docs/tool-server.md). Settings come from the environment:
${Object.entries(Environment.shape)
  .map(([name, schema]) => `  ${name.padEnd(36)} ${schema.description ?? ''}`)
  .join('\n')}

Example: TOOL_SERVER_ORIGINS=https://mcp.example.com TOOL_SERVER_DB_URL=… \\
  TOOL_SERVER_SUPABASE_URL=https://<ref>.supabase.co TOOL_SERVER_JWT_SECRET=… \\
  TOOL_SERVER_DASHBOARD_URL=https://app.example.com TOOL_SERVER_BUILD_NUMBER=42 \\
  node packages/tool-server/src/cli.ts`;

// A CLI that explains itself, as the stack's (docs/local-stack.md "CLI"): --help, and one line per
// mistake with the usage, exit 2.
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h') || args[0] === 'help') {
  console.log(USAGE);
  process.exit(0);
}
if (args.length > 0) {
  console.error(
    `capture-tool-server: unknown argument ${args[0]}; settings come from TOOL_SERVER_* variables\n\n${USAGE}`,
  );
  process.exit(2);
}
const checked = Environment.safeParse(process.env);
if (!checked.success) {
  const problems = checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  console.error(`capture-tool-server: ${problems.join('; ')}\n\n${USAGE}`);
  process.exit(2);
}
const environment = checked.data;
const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });

function parseListen(pair: string): { host: string; port: number } {
  const match = LISTEN_PAIR.exec(pair) as RegExpExecArray; // checked by the schema
  return { host: match[1] as string, port: Number(match[2]) };
}

// A fault at start (database unreachable, a port taken) is one line on stderr; the detail with
// its stack goes to the log (stdout).
const server = await startToolServer(
  {
    origins: environment.TOOL_SERVER_ORIGINS,
    listen: environment.TOOL_SERVER_LISTEN.map(parseListen),
    dashboardUrl: environment.TOOL_SERVER_DASHBOARD_URL,
    dbUrl: environment.TOOL_SERVER_DB_URL,
    supabaseUrl: environment.TOOL_SERVER_SUPABASE_URL,
    supabaseAnonKey: environment.TOOL_SERVER_SUPABASE_ANON_KEY,
    jwtSecret: environment.TOOL_SERVER_JWT_SECRET,
    buildNumber: environment.TOOL_SERVER_BUILD_NUMBER,
    accessTokenTtlSeconds: environment.TOOL_SERVER_ACCESS_TOKEN_TTL,
    registrationsPerHour: environment.TOOL_SERVER_REGISTRATIONS_PER_HOUR,
    trustedProxyHops: environment.TOOL_SERVER_TRUSTED_PROXY_HOPS,
    toolCalls: {
      perTokenConcurrency: environment.TOOL_SERVER_TOOL_CALLS_PER_TOKEN,
      perUserConcurrency: environment.TOOL_SERVER_TOOL_CALLS_PER_USER,
      perUserRate: environment.TOOL_SERVER_TOOL_CALLS_RATE,
      perUserBurst: environment.TOOL_SERVER_TOOL_CALLS_BURST,
      poolSize: environment.TOOL_SERVER_TOOL_POOL_SIZE,
      searchSlots: environment.TOOL_SERVER_TOOL_SEARCH_SLOTS,
    },
    approvalsInClient:
      environment.TOOL_SERVER_APPROVALS_IN_CLIENT === undefined
        ? undefined
        : environment.TOOL_SERVER_APPROVALS_IN_CLIENT === 'on',
  },
  logger,
).catch((error: unknown) => {
  logger.error({ err: error }, 'cannot start');
  console.error(
    `capture-tool-server: cannot start: ${(error as Error).message} (details in the log)`,
  );
  process.exit(1);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.stop().then(() => process.exit(0));
  });
}
