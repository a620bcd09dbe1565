#!/usr/bin/env node
// Runs the status service outside the local stack (production: beside the proxy and tool
// server). Configuration comes from the environment, validated once at start.
import pino from 'pino';
import { z } from 'zod';
import {
  type ComponentDefinition,
  localStackComponents,
  startStatusService,
} from './status-service.ts';

const Environment = z.object({
  STATUS_DB_URL: z.string().url().describe('Postgres URL; writes run as service_role'),
  STATUS_API_URL: z.string().url().describe('Supabase API URL (gateway) the probes call'),
  STATUS_ANON_KEY: z.string().min(1).describe('anon or publishable key for the probes'),
  STATUS_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(10_000)
    .describe('milliseconds between snapshots (default 10000)'),
  STATUS_PROXY_URL: z.string().url().optional().describe('proxy health URL, when a proxy runs'),
  STATUS_TOOL_SERVER_URL: z.string().url().optional().describe('tool server URL, when present'),
  STATUS_SYSTEMD_UNITS: z
    .string()
    .optional()
    .describe('component=unit pairs, comma-separated, e.g. rest=postgrest,proxy=capture-proxy'),
});

const USAGE = `Usage: node packages/status/src/cli.ts [--help]

Runs the status service: host metrics and component probes into service_status (docs/feeds.md).
Settings come from the environment:
${Object.entries(Environment.shape)
  .map(([name, schema]) => `  ${name.padEnd(24)} ${schema.description ?? ''}`)
  .join('\n')}

Example: STATUS_DB_URL=postgresql://postgres:postgres@127.0.0.1:54322/postgres \\
  STATUS_API_URL=http://127.0.0.1:54321 STATUS_ANON_KEY=… node packages/status/src/cli.ts`;

// A CLI that explains itself, as the stack's (docs/local-stack.md "CLI"): --help, and one line per
// mistake with the usage, exit 2.
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h') || args[0] === 'help') {
  console.log(USAGE);
  process.exit(0);
}
if (args.length > 0) {
  console.error(
    `capture-status: unknown argument ${args[0]}; settings come from STATUS_* variables\n\n${USAGE}`,
  );
  process.exit(2);
}
const checked = Environment.safeParse(process.env);
if (!checked.success) {
  const problems = checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  console.error(`capture-status: ${problems.join('; ')}\n\n${USAGE}`);
  process.exit(2);
}
const environment = checked.data;
const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
const units = new Map(
  (environment.STATUS_SYSTEMD_UNITS ?? '')
    .split(',')
    .filter(Boolean)
    .map((pair) => pair.split('=') as [string, string]),
);
const components: ComponentDefinition[] = [
  ...localStackComponents({
    dbUrl: environment.STATUS_DB_URL,
    apiUrl: environment.STATUS_API_URL,
    anonKey: environment.STATUS_ANON_KEY,
  }),
  ...(environment.STATUS_PROXY_URL
    ? [
        {
          key: 'proxy',
          label: 'Capture proxy',
          probe: { kind: 'http' as const, url: environment.STATUS_PROXY_URL },
        },
      ]
    : []),
  ...(environment.STATUS_TOOL_SERVER_URL
    ? [
        {
          key: 'tool-server',
          label: 'Tool server',
          probe: { kind: 'http' as const, url: environment.STATUS_TOOL_SERVER_URL },
        },
      ]
    : []),
].map((component) => ({ ...component, unit: units.get(component.key) }));

const service = await startStatusService({
  dbUrl: environment.STATUS_DB_URL,
  components,
  intervalMs: environment.STATUS_INTERVAL_MS,
  keepsProcessAlive: true,
  logger,
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    service.stop().then(() => process.exit(0));
  });
}
