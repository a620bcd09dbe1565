// The variables `npm run stack -- status` prints, named as `supabase status` names them so
// scripts written for the Supabase CLI work, plus the stack's own additions.
import type { ProjectKeys } from './keys.ts';

/** What the variables are made of: the running stack's addresses and keys (a RunningStack). */
export interface StackAddresses {
  apiUrl: string;
  dbUrl: string;
  mailboxDir: string;
  keys: ProjectKeys;
  ports: { proxy: number; proxyManagement: number };
  proxyDomain: string;
  lan: { address: string } | undefined;
  proxySetupUrl: string;
  phoneSetupUrl: string | undefined;
  mcpUrl: string;
  mcpLegacyUrl: string;
  dashboardUrl: string;
}

export interface StatusVariables {
  API_URL: string;
  REST_URL: string;
  AUTH_URL: string;
  FUNCTIONS_URL: string;
  DB_URL: string;
  JWT_SECRET: string;
  ANON_KEY: string;
  SERVICE_ROLE_KEY: string;
  PUBLISHABLE_KEY: string;
  SECRET_KEY: string;
  MAILBOX_DIR: string;
  PROXY_URL: string;
  PROXY_MANAGEMENT_URL: string;
  PROXY_PAC_URL: string;
  /** LAN mode's address ('' on loopback only) and where set-up pages are served. */
  PROXY_LAN_ADDRESS: string;
  PROXY_SETUP_URL: string;
  /** LAN mode: the prepared phone's set-up link (its token is a credential for 24 h). */
  PHONE_SETUP_URL: string;
  MCP_URL: string;
  MCP_LEGACY_URL: string;
  DASHBOARD_URL: string;
}

export function statusVariables(stack: StackAddresses): StatusVariables {
  return {
    API_URL: stack.apiUrl,
    REST_URL: `${stack.apiUrl}/rest/v1`,
    AUTH_URL: `${stack.apiUrl}/auth/v1`,
    FUNCTIONS_URL: `${stack.apiUrl}/functions/v1`,
    DB_URL: stack.dbUrl,
    JWT_SECRET: stack.keys.jwtSecret,
    ANON_KEY: stack.keys.anonKey,
    SERVICE_ROLE_KEY: stack.keys.serviceRoleKey,
    PUBLISHABLE_KEY: stack.keys.publishableKey,
    SECRET_KEY: stack.keys.secretKey,
    MAILBOX_DIR: stack.mailboxDir,
    PROXY_URL: `http://127.0.0.1:${stack.ports.proxy}`,
    PROXY_MANAGEMENT_URL: `http://127.0.0.1:${stack.ports.proxyManagement}`,
    PROXY_PAC_URL: stack.lan
      ? `${stack.proxySetupUrl}/<port>.pac`
      : `http://<port>.${stack.proxyDomain}:${stack.ports.proxyManagement}/proxy.pac`,
    PROXY_LAN_ADDRESS: stack.lan?.address ?? '',
    PROXY_SETUP_URL: stack.proxySetupUrl,
    PHONE_SETUP_URL: stack.phoneSetupUrl ?? '',
    MCP_URL: stack.mcpUrl,
    MCP_LEGACY_URL: stack.mcpLegacyUrl,
    DASHBOARD_URL: stack.dashboardUrl,
  };
}

/** `-o env`: KEY="value" lines, as `supabase status -o env` prints them. */
export function formatEnv(variables: StatusVariables): string {
  return Object.entries(variables)
    .map(([name, value]) => `${name}="${value}"`)
    .join('\n');
}

/** The default human-readable listing. */
export function formatPretty(variables: StatusVariables): string {
  const width = Math.max(...Object.keys(variables).map((name) => name.length));
  return Object.entries(variables)
    .map(([name, value]) => `${name.padEnd(width)}  ${value}`)
    .join('\n');
}
