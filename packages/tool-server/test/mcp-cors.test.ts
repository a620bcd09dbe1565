// CORS of the MCP endpoint tried from a foreign page (MCP transports 2025-11-25: the Origin
// check refuses it): its preflight is answered without Access-Control-Allow-Origin, while our own
// origins and the dashboard's get theirs. Preflights never reach the store, so the app runs here
// on a context that has none.
import { describe, expect, it } from 'vitest';
import { createToolServerApp } from '../src/app.ts';
import type { ToolServerContext } from '../src/context.ts';
import { Origins } from '../src/http/origins.ts';

const MCP_URL = 'https://mcp.example.com';
const LEGACY_URL = 'https://mcp-legacy.example.com';
const DASHBOARD_URL = 'https://app.example.com';

const app = createToolServerApp({
  config: { dashboardUrl: DASHBOARD_URL, storeDeadlineMs: 1_000, trustedProxyHops: 0 },
  origins: new Origins([MCP_URL, LEGACY_URL]),
} as unknown as ToolServerContext);

function preflight(origin: string, path = '/') {
  return app.request(`${MCP_URL}${path}`, {
    method: 'OPTIONS',
    headers: {
      host: new URL(MCP_URL).host,
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
    },
  });
}

describe('the MCP endpoint preflight', () => {
  it.each([
    'https://evil.example',
    'http://localhost:6274',
    'null',
    `${MCP_URL}.evil.example`,
    'https://app.example.com:8443',
  ])('answers %s without allowing it', async (origin) => {
    const response = await preflight(origin);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-allow-headers')).toBeNull();
    expect(response.headers.get('vary')).toMatch(/origin/i);
  });

  it.each([MCP_URL, LEGACY_URL, DASHBOARD_URL])(
    'allows %s, the origin it serves, by name',
    async (origin) => {
      const response = await preflight(origin);
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-headers')).toMatch(/mcp-protocol-version/);
      expect(response.headers.get('access-control-expose-headers')).toMatch(/www-authenticate/);
      expect(response.headers.get('vary')).toMatch(/origin/i);
    },
  );

  it('refuses a foreign page its request with 403 and no Access-Control-Allow-Origin', async () => {
    const response = await app.request(`${MCP_URL}/`, {
      method: 'POST',
      headers: {
        host: new URL(MCP_URL).host,
        origin: 'https://evil.example',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('still lets any origin read the public OAuth routes', async () => {
    const response = await preflight('https://evil.example', '/token');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
  });
});
