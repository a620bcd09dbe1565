// The dashboard server's settings from DASHBOARD_* environment variables, read once and checked
// before anything listens (README "Deploying" lists them).
import { parseRuntimeConfig } from '../src/runtime-config.ts';
import type { DashboardServerOptions } from './dashboard-server.ts';
import { DashboardServerError } from './errors.ts';

type Environment = Record<string, string | undefined>;

/** 54323 is `site_url` in supabase/config.toml: where the auth service sends magic links. */
const DEFAULT_PORT = 54323;

function readPort(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_PORT;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new DashboardServerError('bad_config', `DASHBOARD_PORT is not a port: ${value}`);
  }
  return port;
}

function required(environment: Environment, name: string): string {
  const value = environment[name];
  if (!value) throw new DashboardServerError('bad_config', `${name} is required`);
  return value;
}

export function dashboardOptionsFromEnvironment(
  environment: Environment,
): Omit<DashboardServerOptions, 'logger'> {
  let config: DashboardServerOptions['config'];
  try {
    config = parseRuntimeConfig({
      supabaseUrl: required(environment, 'DASHBOARD_SUPABASE_URL'),
      supabasePublishableKey: required(environment, 'DASHBOARD_SUPABASE_PUBLISHABLE_KEY'),
      mcpUrl: required(environment, 'DASHBOARD_MCP_URL'),
      // Optional: without a proxy the Devices page shows no PAC URL or CA download.
      ...(environment.DASHBOARD_PROXY_URL
        ? {
            proxy: {
              managementUrl: environment.DASHBOARD_PROXY_URL,
              pacUrlTemplate: required(environment, 'DASHBOARD_PAC_URL_TEMPLATE'),
              manualProxy: required(environment, 'DASHBOARD_MANUAL_PROXY'),
              setupUrl: environment.DASHBOARD_PROXY_SETUP_URL || undefined,
            },
          }
        : {}),
    });
  } catch (cause) {
    if (cause instanceof DashboardServerError) throw cause;
    throw new DashboardServerError('bad_config', (cause as Error).message, cause);
  }
  return {
    port: readPort(environment.DASHBOARD_PORT),
    host: environment.DASHBOARD_HOST || '127.0.0.1',
    distDir: environment.DASHBOARD_DIST_DIR || undefined,
    config,
  };
}
