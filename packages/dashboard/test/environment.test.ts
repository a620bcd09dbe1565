// The standalone server's settings from DASHBOARD_* variables: defaults, and refusals at start.
import { describe, expect, it } from 'vitest';
import { dashboardOptionsFromEnvironment } from '../server/environment.ts';
import { DashboardServerError } from '../server/errors.ts';

const REQUIRED = {
  DASHBOARD_SUPABASE_URL: 'https://ref.supabase.co/',
  DASHBOARD_SUPABASE_PUBLISHABLE_KEY: 'sb_publishable_x',
  DASHBOARD_MCP_URL: 'https://mcp.example.com',
};

describe('dashboardOptionsFromEnvironment', () => {
  it('defaults to 127.0.0.1:54323, the site URL of supabase/config.toml', () => {
    expect(dashboardOptionsFromEnvironment(REQUIRED)).toEqual({
      port: 54323,
      host: '127.0.0.1',
      distDir: undefined,
      config: {
        supabaseUrl: 'https://ref.supabase.co',
        supabasePublishableKey: 'sb_publishable_x',
        mcpUrl: 'https://mcp.example.com',
      },
    });
  });

  it('reads port, host and dist folder', () => {
    const options = dashboardOptionsFromEnvironment({
      ...REQUIRED,
      DASHBOARD_PORT: '8080',
      DASHBOARD_HOST: '0.0.0.0',
      DASHBOARD_DIST_DIR: '/srv/dashboard',
    });
    expect(options).toMatchObject({ port: 8080, host: '0.0.0.0', distDir: '/srv/dashboard' });
  });

  it.each([
    ['a missing Supabase URL', { ...REQUIRED, DASHBOARD_SUPABASE_URL: undefined }],
    ['a missing key', { ...REQUIRED, DASHBOARD_SUPABASE_PUBLISHABLE_KEY: '' }],
    ['a missing MCP URL', { ...REQUIRED, DASHBOARD_MCP_URL: undefined }],
    ['a non-http MCP URL', { ...REQUIRED, DASHBOARD_MCP_URL: 'ftp://mcp.example.com' }],
    ['a port out of range', { ...REQUIRED, DASHBOARD_PORT: '70000' }],
    ['a port that is not a number', { ...REQUIRED, DASHBOARD_PORT: 'http' }],
  ])('refuses %s with bad_config', (_name, environment) => {
    let thrown: unknown;
    try {
      dashboardOptionsFromEnvironment(environment);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DashboardServerError);
    expect((thrown as DashboardServerError).code).toBe('bad_config');
  });
});
