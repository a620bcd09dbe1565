// Pure parts of the console: HAR 1.2 building, copy as curl (shell quoting), the SSE reader,
// live-tail merging and filter matching, whoami parsing and capability rules, and set-up steps.
import { describe, expect, it } from 'vitest';
import { dashboardOptionsFromEnvironment } from '../server/environment.ts';
import { can, parseWhoami } from '../src/access-rules.ts';
import { SseParser } from '../src/assistant/sse.ts';
import { EMPTY_FILTERS, matchesFilters, mergeNewest } from '../src/captures/capture-query.ts';
import { type CaptureRow, summaryFromRecord } from '../src/captures/capture-types.ts';
import { shellQuote, toCurl } from '../src/captures/curl.ts';
import { toHar } from '../src/captures/har.ts';
import { prettyBody } from '../src/captures/pretty-body.ts';
import { pacUrlFor, platformSteps } from '../src/console/device-setup.ts';
import { isOnline } from '../src/console/online.ts';
import { ageMs, isHealthy, STATUS_STALE_MS } from '../src/console/snapshots.ts';
import { parseRuntimeConfig } from '../src/runtime-config.ts';

const ROW: CaptureRow = {
  id: 42,
  ts: '2026-11-25T04:00:00.000Z',
  kind: 'http',
  device_uuid: 'd0000000-0000-4000-8000-000000000001',
  payload: {
    method: 'POST',
    url: "https://api.shop.example/v1/cart?page=2&q=it's",
    host: 'api.shop.example',
    httpVersion: 'HTTP/1.1',
    statusCode: 201,
    statusText: 'Created',
    requestHeaders: [
      ['Host', 'api.shop.example'],
      ['Content-Type', 'application/json'],
      ['Content-Length', '13'],
      ['X-Quote', "it's"],
    ],
    responseHeaders: [
      ['Content-Type', 'application/json'],
      ['Location', '/v1/cart/7'],
    ],
    requestBody: {
      text: '{"item":"x"}',
      encoding: 'utf8',
      size: 12,
      truncated: false,
      contentType: 'application/json',
    },
    responseBody: { base64: 'AAEC', encoding: 'base64', size: 3, truncated: false },
    timings: { connect: 1, tls: 2, send: 0.5, wait: 40, receive: 3, total: 46.5 },
    client: { ip: '10.0.0.1', port: 5555 },
  },
};

describe('HAR 1.2', () => {
  it('maps one capture to a HAR entry with the spec types', () => {
    const har = toHar([ROW]);
    expect(har.log.version).toBe('1.2');
    const [entry] = har.log.entries;
    expect(entry?.request).toMatchObject({
      method: 'POST',
      url: ROW.payload.url,
      headersSize: -1,
      bodySize: 12,
      postData: { mimeType: 'application/json', text: '{"item":"x"}' },
      queryString: [
        { name: 'page', value: '2' },
        { name: 'q', value: "it's" },
      ],
    });
    expect(entry?.response).toMatchObject({
      status: 201,
      statusText: 'Created',
      redirectURL: '/v1/cart/7',
      content: { size: 3, mimeType: 'application/json', text: 'AAEC', encoding: 'base64' },
    });
    // connect includes ssl in HAR; send/wait/receive are never negative.
    expect(entry?.timings).toEqual({
      blocked: -1,
      dns: -1,
      connect: 3,
      ssl: 2,
      send: 0.5,
      wait: 40,
      receive: 3,
    });
    expect(entry?.time).toBe(46.5);
  });

  it('orders entries by capture id and marks unknown timings -1', () => {
    const tunnel: CaptureRow = {
      id: 7,
      ts: ROW.ts,
      kind: 'tunnel',
      device_uuid: null,
      payload: { url: 'https://x.example/' },
    };
    const har = toHar([ROW, tunnel]);
    expect(har.log.entries.map((entry) => entry.comment)).toEqual([
      'capture 7 (tunnel)',
      expect.stringContaining('capture 42'),
    ]);
    expect(har.log.entries[0]?.timings).toMatchObject({
      connect: -1,
      ssl: -1,
      send: 0,
      wait: 0,
      receive: 0,
    });
  });
});

describe('copy as curl', () => {
  it('quotes every value for a POSIX shell', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    const curl = toCurl(ROW.payload);
    expect(curl).toBe(
      `curl -X 'POST' 'https://api.shop.example/v1/cart?page=2&q=it'\\''s' -H 'Content-Type: application/json' -H 'X-Quote: it'\\''s' --data-raw '{"item":"x"}'`,
    );
    // Host and Content-Length are curl's own; a proxy credential never leaves the capture.
    expect(curl).not.toContain('Host:');
    expect(
      toCurl({ ...ROW.payload, requestHeaders: [['Proxy-Authorization', 'Basic [redacted]']] }),
    ).not.toContain('Proxy');
  });

  it('says when a binary body is left out', () => {
    expect(
      toCurl({
        method: 'PUT',
        url: 'https://x.example/',
        requestBody: { base64: 'AA==', size: 1 },
      }),
    ).toContain('# the 1-byte binary request body is not included');
  });
});

describe('the SSE reader', () => {
  it('splits events across chunks, ignores comments, and handles CRLF', () => {
    const parser = new SseParser();
    expect(parser.push(': ping\n\nevent: tool\ndata: {"label":"Thi')).toEqual([]);
    expect(parser.push('nking"}\r\n\r\nevent: text\ndata: {"delta":"a"}\n')).toEqual([
      { event: 'tool', data: '{"label":"Thinking"}' },
    ]);
    expect(parser.push('\r')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ event: 'text', data: '{"delta":"a"}' }]);
    expect(parser.push('data: line1\ndata: line2\n\n')).toEqual([
      { event: 'message', data: 'line1\nline2' },
    ]);
  });
});

describe('live tail', () => {
  const summary = (id: number, host = 'a.example') => ({
    id,
    ts: ROW.ts,
    kind: 'http',
    device_uuid: 'd1',
    method: 'GET',
    host,
    url: `https://${host}/x`,
    status_code: 200,
    duration_ms: 1,
  });

  it('merges arrivals newest first, without repeats, bounded', () => {
    const merged = mergeNewest([summary(5), summary(4)], [summary(6), summary(5), summary(7)], 3);
    expect(merged.map((row) => row.id)).toEqual([7, 6, 5]);
  });

  it('keeps a live row only when it matches the filters', () => {
    expect(matchesFilters(summary(1), EMPTY_FILTERS)).toBe(true);
    expect(matchesFilters(summary(1), { ...EMPTY_FILTERS, device: 'd2' })).toBe(false);
    expect(matchesFilters(summary(1), { ...EMPTY_FILTERS, host: 'A.example' })).toBe(true);
    expect(matchesFilters(summary(1), { ...EMPTY_FILTERS, statusClass: '5' })).toBe(false);
    expect(matchesFilters(summary(1), { ...EMPTY_FILTERS, search: '/X' })).toBe(true);
    expect(matchesFilters(summary(1), { ...EMPTY_FILTERS, workspace: 'w' })).toBe(false);
  });

  it('reads a Realtime record, falling back to the payload', () => {
    expect(
      summaryFromRecord({ id: '9', ts: ROW.ts, kind: 'http', payload: ROW.payload }),
    ).toMatchObject({
      id: 9,
      method: 'POST',
      host: 'api.shop.example',
      status_code: 201,
      duration_ms: 46.5,
    });
    expect(summaryFromRecord({ id: 'x', ts: ROW.ts })).toBeNull();
  });
});

describe('access', () => {
  it('parses whoami and applies edit-implies-view and admin-holds-all', () => {
    const member = parseWhoami({
      user_id: 'u',
      email: 'm@x',
      is_admin: false,
      roles: [],
      capabilities: ['devices:edit'],
    });
    expect(can(member, 'devices', 'view')).toBe(true);
    expect(can(member, 'devices', 'edit')).toBe(true);
    expect(can(member, 'stats')).toBe(false);
    const admin = parseWhoami({ user_id: 'a', is_admin: true, capabilities: [] });
    expect(can(admin, 'federation', 'edit')).toBe(true);
    expect(() => parseWhoami(null)).toThrow();
  });
});

describe('devices and feeds', () => {
  it('derives online from the 150 s window and staleness from 30 s', () => {
    const now = Date.parse('2026-11-25T04:00:00Z');
    expect(isOnline({ last_seen_at: '2026-11-25T03:57:31Z' }, now)).toBe(true);
    expect(isOnline({ last_seen_at: '2026-11-25T03:57:29Z' }, now)).toBe(false);
    expect(isOnline({ last_seen_at: null }, now)).toBe(false);
    expect(ageMs('2026-11-25T03:59:29Z', now) > STATUS_STALE_MS).toBe(true);
    expect(
      isHealthy({
        key: 'rest',
        label: 'REST',
        probe: { up: true, httpStatus: 200, latencyMs: 1 },
        unitState: 'failed',
      }),
    ).toBe(false);
  });

  it('fills the PAC URL into every platform', () => {
    const pac = pacUrlFor('http://{port}.proxy.localhost:8889/proxy.pac', 20001);
    expect(pac).toBe('http://20001.proxy.localhost:8889/proxy.pac');
    const steps = platformSteps({
      pacUrl: pac,
      manualProxy: '127.0.0.1:8888',
      caDerUrl: 'http://127.0.0.1:8889/ca.der',
      caPemUrl: 'http://127.0.0.1:8889/ca.pem',
      mobileconfigUrl: 'http://127.0.0.1:8889/ca.mobileconfig',
    });
    expect(steps.map((item) => item.id)).toEqual([
      'ios',
      'android',
      'macos',
      'windows',
      'linux',
      'chromeos',
      'firefox',
    ]);
    for (const item of steps) expect(item.steps.join(' ')).toContain(pac);
  });

  it('pretty-prints bodies by type', () => {
    expect(prettyBody('{"a":1}', 'application/json')).toEqual({
      kind: 'json',
      text: '{\n  "a": 1\n}',
    });
    expect(prettyBody('a=1&b=x+y', 'application/x-www-form-urlencoded')).toEqual({
      kind: 'form',
      text: 'a = 1\nb = x y',
    });
    expect(prettyBody('{broken', 'application/json').kind).toBe('text');
  });
});

describe('the runtime config proxy block', () => {
  const base = {
    supabaseUrl: 'http://127.0.0.1:54321',
    supabasePublishableKey: 'sb_publishable_x',
    mcpUrl: 'http://127.0.0.1:54324',
  };
  const proxy = {
    managementUrl: 'http://127.0.0.1:8889/',
    pacUrlTemplate: 'http://{port}.proxy.localhost:8889/proxy.pac',
    manualProxy: '127.0.0.1:8888',
  };

  it('is optional, and read with the trailing slash dropped', () => {
    expect(parseRuntimeConfig(base).proxy).toBeUndefined();
    expect(parseRuntimeConfig({ ...base, proxy }).proxy).toEqual({
      ...proxy,
      managementUrl: 'http://127.0.0.1:8889',
      // Set-up pages default to the management URL (docs/devices.md); LAN mode names the LAN
      // address.
      setupUrl: 'http://127.0.0.1:8889',
    });
    expect(
      parseRuntimeConfig({ ...base, proxy: { ...proxy, setupUrl: 'http://192.168.1.20:8889/' } })
        .proxy?.setupUrl,
    ).toBe('http://192.168.1.20:8889');
  });

  it('refuses a template without {port}, a non-http URL, and a manual proxy that is not host:port', () => {
    expect(() =>
      parseRuntimeConfig({
        ...base,
        proxy: { ...proxy, pacUrlTemplate: 'http://proxy.localhost/' },
      }),
    ).toThrow('{port}');
    expect(() =>
      parseRuntimeConfig({ ...base, proxy: { ...proxy, pacUrlTemplate: 'javascript:{port}' } }),
    ).toThrow();
    expect(() =>
      parseRuntimeConfig({ ...base, proxy: { ...proxy, managementUrl: 'file:///etc/passwd' } }),
    ).toThrow();
    expect(() =>
      parseRuntimeConfig({ ...base, proxy: { ...proxy, manualProxy: 'http://x:1"><script>' } }),
    ).toThrow('host:port');
    expect(() =>
      parseRuntimeConfig({ ...base, proxy: { ...proxy, setupUrl: 'javascript:alert(1)' } }),
    ).toThrow('proxy.setupUrl');
  });

  it('comes from DASHBOARD_PROXY_URL and its two companions', () => {
    const environment = {
      DASHBOARD_SUPABASE_URL: base.supabaseUrl,
      DASHBOARD_SUPABASE_PUBLISHABLE_KEY: base.supabasePublishableKey,
      DASHBOARD_MCP_URL: base.mcpUrl,
    };
    expect(dashboardOptionsFromEnvironment(environment).config.proxy).toBeUndefined();
    expect(
      dashboardOptionsFromEnvironment({
        ...environment,
        DASHBOARD_PROXY_URL: proxy.managementUrl,
        DASHBOARD_PAC_URL_TEMPLATE: proxy.pacUrlTemplate,
        DASHBOARD_MANUAL_PROXY: proxy.manualProxy,
      }).config.proxy?.manualProxy,
    ).toBe('127.0.0.1:8888');
    expect(() =>
      dashboardOptionsFromEnvironment({ ...environment, DASHBOARD_PROXY_URL: proxy.managementUrl }),
    ).toThrow('DASHBOARD_PAC_URL_TEMPLATE is required');
  });
});
