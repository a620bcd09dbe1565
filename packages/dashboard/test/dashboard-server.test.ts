// The dashboard server on a real socket, serving a fixture dist/: security headers on every
// response, /config.json, the SPA fallback, content types and caching, traversal refused, and
// the start-up checks.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DashboardRuntimeConfig,
  DashboardServerError,
  type RunningDashboardServer,
  startDashboardServer,
} from '../server/index.ts';
import { type RawResponse, sendRaw } from './helpers/raw-http.ts';

const CONFIG: DashboardRuntimeConfig = {
  supabaseUrl: 'http://127.0.0.1:54321',
  supabasePublishableKey: 'sb_publishable_test',
  mcpUrl: 'https://mcp.example.com',
};
const INDEX = '<!doctype html><title>fixture</title><div id="root"></div>';
const RID = 'rid_0123456789abcdef';
const logger = pino({ level: 'silent' });

let workDir: string;
let distDir: string;
let server: RunningDashboardServer;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'dashboard-server-test-'));
  distDir = join(workDir, 'dist');
  mkdirSync(join(distDir, 'assets'), { recursive: true });
  writeFileSync(join(distDir, 'index.html'), INDEX);
  writeFileSync(join(distDir, 'assets', 'index-AbC123.js'), 'console.log("app");');
  writeFileSync(join(distDir, 'assets', 'index-DeF456.css'), 'body{}');
  writeFileSync(join(distDir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  // What a traversal would be after: a file beside dist/, and the package's own files.
  writeFileSync(join(workDir, 'secret.txt'), 'TOP-SECRET');
  server = await startDashboardServer({ port: 0, distDir, config: CONFIG, logger });
});

afterAll(async () => {
  try {
    await server?.stop();
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
});

function expectSecurityHeaders(response: RawResponse) {
  const csp = response.headers['content-security-policy'] as string;
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("default-src 'self'");
  expect(response.headers['x-frame-options']).toBe('DENY');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
}

describe('security headers', () => {
  it.each([
    ['the app shell', '/', 'GET', 200],
    ['the consent route', `/mcp/consent?rid=${RID}`, 'GET', 200],
    ['the runtime config', '/config.json', 'GET', 200],
    ['an asset', '/assets/index-AbC123.js', 'GET', 200],
    ['a missing asset', '/assets/missing.js', 'GET', 404],
    ['a refused traversal', '/../secret.txt', 'GET', 400],
    ['a POST', '/mcp/consent', 'POST', 405],
    ['a HEAD', '/sign-in', 'HEAD', 200],
  ])('are on %s', async (_name, target, method, status) => {
    const response = await sendRaw(server.url, target, method);
    expect(response.status).toBe(status);
    expectSecurityHeaders(response);
  });

  it('let the browser connect only to itself, the Supabase API (http and ws) and the tool server', async () => {
    const response = await sendRaw(server.url, '/');
    const csp = response.headers['content-security-policy'] as string;
    const connect = csp.split('; ').find((directive) => directive.startsWith('connect-src'));
    expect(connect).toBe(
      "connect-src 'self' http://127.0.0.1:54321 ws://127.0.0.1:54321 https://mcp.example.com",
    );
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
  });
});

describe('routes', () => {
  it('serves the runtime config as JSON, never cached', async () => {
    const response = await sendRaw(server.url, '/config.json');
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(response.body)).toEqual(CONFIG);
  });

  it.each([
    ['/'],
    ['/index.html'],
    ['/sign-in'],
    ['/sign-in?next=%2Fmcp%2Fconsent%3Frid%3Drid_0123456789abcdef'],
    [`/mcp/consent?rid=${RID}`],
    ['/some/future/console'],
  ])('answers %s with index.html, never cached', async (target) => {
    const response = await sendRaw(server.url, target);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toBe(INDEX);
  });

  it.each([
    [
      '/assets/index-AbC123.js',
      'text/javascript; charset=utf-8',
      'public, max-age=31536000, immutable',
    ],
    ['/assets/index-DeF456.css', 'text/css; charset=utf-8', 'public, max-age=31536000, immutable'],
    ['/favicon.svg', 'image/svg+xml', 'no-cache'],
  ])('serves %s as %s with Cache-Control %s', async (target, type, cache) => {
    const response = await sendRaw(server.url, target);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe(type);
    expect(response.headers['cache-control']).toBe(cache);
  });

  it.each([['/assets/missing.js'], ['/missing.png'], ['/assets/']])(
    'answers 404 for %s rather than the app shell',
    async (target) => {
      const response = await sendRaw(server.url, target);
      expect(response.status).toBe(404);
      expect(response.body).not.toContain('fixture');
    },
  );

  it('answers HEAD without a body', async () => {
    const response = await sendRaw(server.url, '/assets/index-AbC123.js', 'HEAD');
    expect(response.status).toBe(200);
    expect(response.headers['content-length']).toBe(String('console.log("app");'.length));
    expect(response.body).toBe('');
  });

  it.each(['POST', 'PUT', 'DELETE', 'OPTIONS'])('refuses %s with 405', async (method) => {
    const response = await sendRaw(server.url, '/config.json', method);
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe('GET, HEAD');
  });
});

describe('path traversal', () => {
  it.each([
    ['/../secret.txt'],
    ['/../package.json'],
    ['/../../package.json'],
    ['/%2e%2e/secret.txt'],
    ['/%2E%2E/%2E%2E/package.json'],
    ['/%2e%2e%2fsecret.txt'],
    ['/assets/..%2f..%2fsecret.txt'],
    ['/assets/../../secret.txt'],
    ['/..%5csecret.txt'],
    ['/.%2e/secret.txt'],
    ['/./index.html'],
    ['/%00'],
    ['/index.html%00.js'],
    ['/%E0%A4%A'],
    ['http://evil.example/../secret.txt'],
    ['*'],
  ])('refuses %s with 400 and leaks nothing', async (target) => {
    const response = await sendRaw(server.url, target);
    expect(response.status).toBe(400);
    expect(response.body).not.toContain('TOP-SECRET');
    expect(response.body).not.toContain('"name"');
    expectSecurityHeaders(response);
  });

  it('collapses empty segments instead of treating them as the filesystem root', async () => {
    const response = await sendRaw(server.url, '//etc/passwd');
    expect(response.body).toBe(INDEX);
    const asset = await sendRaw(server.url, '//assets//index-AbC123.js');
    expect(asset.body).toBe('console.log("app");');
  });
});

describe('start-up', () => {
  it('fails with the build command when dist/ is missing', async () => {
    const missing = join(workDir, 'no-dist');
    const error = await startDashboardServer({
      port: 0,
      distDir: missing,
      config: CONFIG,
      logger,
    }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(DashboardServerError);
    expect((error as DashboardServerError).code).toBe('dist_missing');
    expect((error as Error).message).toContain('npm run build -w @capture/dashboard');
  });

  it.each([
    ['a javascript: MCP URL', { ...CONFIG, mcpUrl: 'javascript:alert(1)' }],
    ['an empty publishable key', { ...CONFIG, supabasePublishableKey: '' }],
  ])('refuses %s', async (_name, config) => {
    const error = await startDashboardServer({ port: 0, distDir, config, logger }).catch(
      (thrown: unknown) => thrown,
    );
    expect((error as DashboardServerError).code).toBe('bad_config');
  });

  it('uses wss:// for an https Supabase URL', async () => {
    const https = await startDashboardServer({
      port: 0,
      distDir,
      config: { ...CONFIG, supabaseUrl: 'https://ref.supabase.co' },
      logger,
    });
    try {
      const response = await sendRaw(https.url, '/');
      expect(response.headers['content-security-policy']).toContain(
        'https://ref.supabase.co wss://ref.supabase.co',
      );
    } finally {
      await https.stop();
    }
  });
});
