// The dashboard's Android-over-USB routes on the repo stack, with Debian's real adb client against
// the adb server double and a stand-in proxy: a dashboard session is required, SQL decides
// (create_device_setup_link as the caller: another user's device is 404, a role without
// devices:edit 403), and a member's own device gets its phone pointed at its port, the set-up page
// opened through it and the traffic seen; then reverted.
import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AdbHostDouble } from '../../farm/test/helpers/adb-host-double.ts';
import { freeLoopbackPort } from '../../farm/test/helpers/adb-server.ts';
import {
  type SetupProxyStandIn,
  STAND_IN_CA_DER,
  startSetupProxyStandIn,
} from '../../farm/test/helpers/setup-proxy-stand-in.ts';
import { DEMO, signIn, useOAuthStack } from './helpers/oauth-stack.ts';

const ADB_PATH = '/usr/bin/adb';
const MEMBER_PHONE = 'd0000000-0000-4000-8000-000000000001';
const ADMIN_IPAD = 'd0000000-0000-4000-8000-000000000004';
const VIEWER_PHONE = 'd0000000-0000-4000-8000-000000000006';
const SERIAL = '0A1B2C3D4E5F';

const adbPort = await freeLoopbackPort();
const devicePort = await freeLoopbackPort();
const managementPort = await freeLoopbackPort();
const stack = useOAuthStack({
  toolServerSettings: {
    androidSetup: {
      adbPath: ADB_PATH,
      adbServerPort: adbPort,
      // No LAN address: the phone reaches the proxy through adb reverse, on 127.0.0.1.
      proxyHost: null,
      setupBaseUrl: `http://127.0.0.1:${managementPort}`,
      managementUrl: `http://127.0.0.1:${managementPort}`,
      trafficTimeoutMs: 5_000,
    },
  },
});

describe.skipIf(!existsSync(ADB_PATH))(`Android set-up routes with ${ADB_PATH}`, () => {
  let adb: AdbHostDouble;
  let proxy: SetupProxyStandIn;
  let db: pg.Client;
  const tokens: Record<'member' | 'viewer', string> = { member: '', viewer: '' };

  beforeAll(async () => {
    adb = await new AdbHostDouble().start(adbPort);
    proxy = await startSetupProxyStandIn({ devicePort, managementPort });
    db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    // The stack runs without a proxy, so no pool hands out ports: the member's phone gets the
    // stand-in's device port, as the proxy's pool would give it one.
    await db.query('insert into public.device_ports (device_uuid, port) values ($1, $2)', [
      MEMBER_PHONE,
      devicePort,
    ]);
    tokens.member = await signIn(stack(), DEMO.member);
    tokens.viewer = await signIn(stack(), DEMO.viewer);
  });
  afterAll(async () => {
    await db?.end();
    await adb?.stop();
    await proxy?.close();
  });
  beforeEach(() => {
    for (const serial of [...adb.phones.keys()]) adb.detach(serial);
    adb.commands.length = 0;
    proxy.reset();
  });

  const call = (path: string, token: string | null, body?: unknown) =>
    fetch(`${stack().mcpUrl}/dashboard/android/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(token && { authorization: `Bearer ${token}` }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
        origin: stack().dashboardUrl,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it.each([
    ['devices', undefined],
    ['connect', { device_uuid: MEMBER_PHONE }],
    ['revert', { device_uuid: MEMBER_PHONE }],
  ])('answers 401 to %s without a dashboard session', async (path, body) => {
    const response = await call(path, null, body);
    expect(response.status).toBe(401);
    expect(adb.commands).toEqual([]);
  });

  it('answers the dashboard origin a CORS preflight', async () => {
    const response = await fetch(`${stack().mcpUrl}/dashboard/android/connect`, {
      method: 'OPTIONS',
      headers: {
        origin: stack().dashboardUrl,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(stack().dashboardUrl);
  });

  it('lists the phones adb sees for a member', async () => {
    adb.attach(SERIAL, { model: 'Pixel 7' });
    adb.attach('R58M123ABC', { state: 'unauthorized' });
    const response = await call('devices', tokens.member);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(stack().dashboardUrl);
    expect(await response.json()).toEqual({
      devices: [
        { serial: SERIAL, state: 'device', model: 'Pixel 7' },
        { serial: 'R58M123ABC', state: 'unauthorized', model: 'Pixel 7' },
      ],
    });
  });

  it('answers 403 to a viewer, who may not edit devices, and runs no adb command', async () => {
    adb.attach(SERIAL);
    expect((await call('devices', tokens.viewer)).status).toBe(403);
    const connect = await call('connect', tokens.viewer, { device_uuid: VIEWER_PHONE });
    expect(connect.status).toBe(403);
    expect((await call('revert', tokens.viewer, { device_uuid: VIEWER_PHONE })).status).toBe(403);
    expect(adb.commands).toEqual([]);
  });

  it("answers 404 to a member for another user's device, and runs no adb command", async () => {
    adb.attach(SERIAL);
    const response = await call('connect', tokens.member, { device_uuid: ADMIN_IPAD });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: 'not_found' });
    expect((await call('revert', tokens.member, { device_uuid: ADMIN_IPAD })).status).toBe(404);
    expect(adb.commands).toEqual([]);
    const { rows } = await db.query(
      'select count(*)::int as links from private.device_setup_links where device_uuid = $1',
      [ADMIN_IPAD],
    );
    expect(rows[0]?.links).toBe(0);
  });

  it('answers 400 to a body without a device uuid or with a serial adb would not take', async () => {
    expect((await call('connect', tokens.member, {})).status).toBe(400);
    const badSerial = await call('connect', tokens.member, {
      device_uuid: MEMBER_PHONE,
      serial: 'x;reboot',
    });
    expect(badSerial.status).toBe(400);
  });

  it("points a member's phone at its device port and sees its traffic", async () => {
    const phone = adb.attach(SERIAL, { model: 'Pixel 7' });
    const response = await call('connect', tokens.member, { device_uuid: MEMBER_PHONE });
    const body = (await response.json()) as Record<string, unknown> & { commands: string[] };
    expect(response.status).toBe(200);
    expect(body).toMatchObject({
      serial: SERIAL,
      model: 'Pixel 7',
      proxy: `127.0.0.1:${devicePort}`,
      reverse: true,
      traffic: { seen: true, connection: 'http', listener: 'device-port', ca_problem: null },
    });
    const [token] = [...proxy.seenTokens];
    const setupUrl = `http://127.0.0.1:${managementPort}/setup/${token}`;
    expect(adb.commandsOf(SERIAL)).toEqual([
      `reverse tcp:${devicePort} tcp:${devicePort}`,
      `reverse tcp:${managementPort} tcp:${managementPort}`,
      `shell settings put global http_proxy 127.0.0.1:${devicePort}`,
      'push /sdcard/Download/capture-ca.der',
      'shell am start -a android.settings.SECURITY_SETTINGS',
      `shell am start -a android.intent.action.VIEW -d ${setupUrl}`,
    ]);
    expect(phone.files.get('/sdcard/Download/capture-ca.der')).toEqual(STAND_IN_CA_DER);
    expect(proxy.hits).toEqual([{ url: setupUrl, from: '127.0.0.1' }]);
    // The token is a credential: the answer shows where it goes, not the token itself.
    expect(JSON.stringify(body)).not.toContain(token);
    expect(body.commands.at(-1)).toContain('/setup/<token>');
    const { rows } = await db.query(
      `select count(*)::int as links from private.device_setup_links
        where device_uuid = $1 and created_by = 'a0000000-0000-4000-8000-000000000002'`,
      [MEMBER_PHONE],
    );
    expect(rows[0]?.links).toBe(1);
  });

  it('refuses with 409 several_devices naming the serials when no serial is chosen', async () => {
    adb.attach(SERIAL);
    adb.attach('R58M123ABC');
    const response = await call('connect', tokens.member, { device_uuid: MEMBER_PHONE });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({
      error: 'several_devices',
      serials: [SERIAL, 'R58M123ABC'],
    });
    expect(adb.commands).toEqual([]);
  });

  it("reverts the chosen phone's proxy setting and forwardings", async () => {
    adb.attach(SERIAL);
    const other = adb.attach('R58M123ABC');
    const response = await call('revert', tokens.member, {
      device_uuid: MEMBER_PHONE,
      serial: 'R58M123ABC',
    });
    expect(response.status).toBe(200);
    expect(adb.commandsOf('R58M123ABC')).toEqual([
      'shell settings put global http_proxy :0',
      'shell settings delete global global_http_proxy_host',
      'shell settings delete global global_http_proxy_port',
      `reverse --remove tcp:${devicePort}`,
      `reverse --remove tcp:${managementPort}`,
    ]);
    expect(other.settings.get('http_proxy')).toBe(':0');
    expect(adb.commandsOf(SERIAL)).toEqual([]);
  });

  it('lists no phone and says why when no adb server runs (the usual laptop: not a failure)', async () => {
    await adb.stop();
    try {
      const response = await call('devices', tokens.member);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { devices: unknown[]; adb_unavailable: string };
      expect(body.devices).toEqual([]);
      expect(body.adb_unavailable).toMatch(/adb/);
    } finally {
      adb = await new AdbHostDouble().start(adbPort);
    }
  });
});
