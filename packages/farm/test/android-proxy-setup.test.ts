// Android over USB against Debian's real adb client and the adb server double: the exact adb
// commands of connect and revert, the CA bytes on the phone, the typed refusals, and the traffic
// check against a stand-in proxy (helpers/setup-proxy-stand-in.ts) that records the set-up page
// the phone's browser opened through it.
import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AdbDevice, parseDeviceList } from '../src/android/adb-device-list.ts';
import { AndroidProxySetup, quoteShellWord } from '../src/android/android-proxy-setup.ts';
import { AndroidSetupError } from '../src/android/android-setup-error.ts';
import { statusUrlOf, waitForSetupTraffic } from '../src/android/setup-traffic-check.ts';
import { AdbHostDouble } from './helpers/adb-host-double.ts';
import { freeLoopbackPort, isListening } from './helpers/adb-server.ts';
import {
  STAND_IN_CA_DER as CA_DER,
  type SetupProxyStandIn,
  startSetupProxyStandIn,
} from './helpers/setup-proxy-stand-in.ts';

const ADB_PATH = '/usr/bin/adb';
const TOKEN = 'Zm9vYmFyLXNldHVwLXRva2VuLTAx';

async function refusal(work: Promise<unknown>): Promise<AndroidSetupError> {
  const error = await work.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AndroidSetupError);
  return error as AndroidSetupError;
}

describe('parseDeviceList', () => {
  it.each([
    ['List of devices attached\n', []],
    [
      'List of devices attached\n' +
        '0A1B2C3D4E5F           device usb:1-4 product:panther model:Pixel_7 device:panther ' +
        'transport_id:3\n',
      [{ serial: '0A1B2C3D4E5F', state: 'device', model: 'Pixel 7' }],
    ],
    [
      'R58M123ABC             unauthorized usb:1-1 transport_id:1\n' +
        '192.168.1.7:5555       offline transport_id:2\n',
      [
        { serial: 'R58M123ABC', state: 'unauthorized', model: null },
        { serial: '192.168.1.7:5555', state: 'offline', model: null },
      ],
    ],
    [
      'HT7A1B2C3             no permissions (user in plugdev group; are your udev rules wrong?); ' +
        'see [http://developer.android.com/tools/device.html] usb:1-1 transport_id:4\n' +
        '(no serial number)     device usb:1-2 transport_id:5\n',
      [{ serial: 'HT7A1B2C3', state: 'no permissions', model: null }],
    ],
  ] as Array<[string, AdbDevice[]]>)('reads adb devices -l output %#', (output, expected) => {
    expect(parseDeviceList(output)).toEqual(expected);
  });
});

describe('quoteShellWord', () => {
  it.each([
    ['127.0.0.1:20001', '127.0.0.1:20001'],
    ['http://192.168.1.20:8889/setup/ab_C-9', 'http://192.168.1.20:8889/setup/ab_C-9'],
    ['http://h/setup/t?a=1&b=2', "'http://h/setup/t?a=1&b=2'"],
    ["it's; rm -rf /", `'it'\\''s; rm -rf /'`],
  ])('quotes %s for the phone shell as %s', (word, quoted) => {
    expect(quoteShellWord(word)).toBe(quoted);
  });
});

describe.skipIf(!existsSync(ADB_PATH))(`Android over USB with ${ADB_PATH}`, () => {
  let adb: AdbHostDouble;
  let proxy: SetupProxyStandIn;

  beforeAll(async () => {
    proxy = await startSetupProxyStandIn();
  });
  afterAll(async () => {
    await proxy.close();
  });
  beforeEach(async () => {
    adb = await new AdbHostDouble().start();
    proxy.reset();
  });
  afterEach(async () => {
    await adb.stop();
  });

  const setupFor = (serial?: string) =>
    new AndroidProxySetup({ adbPath: ADB_PATH, adbServerPort: adb.port, serial });
  const setupUrl = () => `http://127.0.0.1:${proxy.managementPort}/setup/${TOKEN}`;

  it('lists the attached phones with their state and model', async () => {
    adb.attach('0A1B2C3D4E5F', { model: 'Pixel 7' });
    adb.attach('R58M123ABC', { state: 'unauthorized' });
    expect(await setupFor().listDevices()).toEqual([
      { serial: '0A1B2C3D4E5F', state: 'device', model: 'Pixel 7' },
      { serial: 'R58M123ABC', state: 'unauthorized', model: 'Pixel 7' },
    ]);
    expect(adb.requests).toEqual(['host:version', 'host:devices-l']);
  });

  it('points the phone at its device port through adb reverse with exactly these commands', async () => {
    const phone = adb.attach('0A1B2C3D4E5F');
    const report = await setupFor().connect({
      proxyHost: '127.0.0.1',
      port: proxy.devicePort,
      caDer: CA_DER,
      setupUrl: setupUrl(),
      reverse: true,
    });
    const P = proxy.devicePort;
    const M = proxy.managementPort;
    expect(adb.commandsOf('0A1B2C3D4E5F')).toEqual([
      `reverse tcp:${P} tcp:${P}`,
      `reverse tcp:${M} tcp:${M}`,
      `shell settings put global http_proxy 127.0.0.1:${P}`,
      'push /sdcard/Download/capture-ca.der',
      'shell am start -a android.settings.SECURITY_SETTINGS',
      `shell am start -a android.intent.action.VIEW -d ${setupUrl()}`,
    ]);
    expect(report.device.serial).toBe('0A1B2C3D4E5F');
    expect(report.commands.map((args) => args[0])).toEqual([
      'reverse',
      'reverse',
      'shell',
      'push',
      'shell',
      'shell',
    ]);
    expect(report.commands[3]?.at(-1)).toBe('/sdcard/Download/capture-ca.der');
    expect(phone.files.get('/sdcard/Download/capture-ca.der')).toEqual(CA_DER);
    expect(phone.settings.get('http_proxy')).toBe(`127.0.0.1:${P}`);
    expect([...phone.reverses.keys()]).toEqual([`tcp:${P}`, `tcp:${M}`]);
  });

  it('in LAN mode sets the LAN address and makes no reverse forwarding', async () => {
    adb.attach('0A1B2C3D4E5F');
    await setupFor().connect({
      // A loopback address stands in for the LAN one: tests reach nothing off this machine.
      proxyHost: '127.0.0.1',
      port: proxy.devicePort,
      caDer: CA_DER,
      setupUrl: setupUrl(),
      reverse: false,
    });
    const commands = adb.commandsOf('0A1B2C3D4E5F');
    expect(commands.filter((command) => command.startsWith('reverse'))).toEqual([]);
    expect(commands[0]).toBe(`shell settings put global http_proxy 127.0.0.1:${proxy.devicePort}`);
  });

  it('opens the set-up page through the device port and the traffic check reports it', async () => {
    adb.attach('0A1B2C3D4E5F');
    await setupFor().connect({
      proxyHost: '127.0.0.1',
      port: proxy.devicePort,
      caDer: CA_DER,
      setupUrl: setupUrl(),
      reverse: true,
    });
    const traffic = await waitForSetupTraffic({
      statusUrl: statusUrlOf(setupUrl()),
      timeoutMs: 5_000,
      intervalMs: 100,
    });
    expect(traffic).toMatchObject({ seen: true, connection: 'http', listener: 'device-port' });
    await adb.settled();
    // Absolute form on the device port, as a browser talks to its proxy.
    expect(proxy.hits).toEqual([{ url: setupUrl(), from: '127.0.0.1' }]);
    expect(adb.visits).toMatchObject([{ proxy: `127.0.0.1:${proxy.devicePort}`, status: 200 }]);
  });

  it('passes a set-up URL with shell characters to the phone unchanged', async () => {
    adb.attach('0A1B2C3D4E5F');
    const url = `${setupUrl()}?from=adb&step=1;id`;
    await setupFor().connect({
      proxyHost: '127.0.0.1',
      port: proxy.devicePort,
      caDer: CA_DER,
      setupUrl: url,
      reverse: false,
    });
    expect(adb.commandsOf('0A1B2C3D4E5F').at(-1)).toBe(
      `shell am start -a android.intent.action.VIEW -d ${url}`,
    );
  });

  it('reports that no traffic arrived, with the CA problem the proxy saw', async () => {
    proxy.caProblem = { host: 'example.com', at: new Date().toISOString(), reason: 'unknown_ca' };
    const traffic = await waitForSetupTraffic({
      statusUrl: statusUrlOf(setupUrl()),
      timeoutMs: 1_200,
      intervalMs: 100,
    });
    expect(traffic).toEqual({ seen: false, caProblem: proxy.caProblem, lastError: null });
  });

  it('reports why the status could not be read when the proxy is not there', async () => {
    const closed = await freeLoopbackPort();
    const traffic = await waitForSetupTraffic({
      statusUrl: `http://127.0.0.1:${closed}/setup/${TOKEN}/status`,
      timeoutMs: 600,
      intervalMs: 100,
    });
    expect(traffic).toMatchObject({ seen: false, caProblem: null });
    expect(traffic.seen === false && traffic.lastError).toBeTruthy();
  });

  it('reverts with exactly these commands and clears the proxy setting', async () => {
    const phone = adb.attach('0A1B2C3D4E5F');
    const plan = { reverse: true, port: proxy.devicePort, managementPort: proxy.managementPort };
    await setupFor().connect({
      ...plan,
      proxyHost: '127.0.0.1',
      caDer: CA_DER,
      setupUrl: setupUrl(),
    });
    adb.commands.length = 0;
    await setupFor().revert(plan);
    expect(adb.commandsOf('0A1B2C3D4E5F')).toEqual([
      'shell settings put global http_proxy :0',
      'shell settings delete global global_http_proxy_host',
      'shell settings delete global global_http_proxy_port',
      `reverse --remove tcp:${proxy.devicePort}`,
      `reverse --remove tcp:${proxy.managementPort}`,
    ]);
    expect(phone.settings.get('http_proxy')).toBe(':0');
    expect(phone.reverses.size).toBe(0);
  });

  it('reverts a second time without failing on forwardings already gone', async () => {
    adb.attach('0A1B2C3D4E5F');
    const plan = { reverse: true, port: proxy.devicePort, managementPort: proxy.managementPort };
    await expect(setupFor().revert(plan)).resolves.toMatchObject({ commands: expect.any(Array) });
  });

  it('refuses with no_device when no phone is attached', async () => {
    const error = await refusal(
      setupFor()
        .listDevices()
        .then(() => setupFor().selectDevice()),
    );
    expect(error.code).toBe('no_device');
    expect(adb.commands).toEqual([]);
  });

  it('refuses with no_device naming the attached phones when the serial is not there', async () => {
    adb.attach('0A1B2C3D4E5F');
    const error = await refusal(
      setupFor('SOMEOTHER1').connect({
        proxyHost: '127.0.0.1',
        port: proxy.devicePort,
        caDer: CA_DER,
        setupUrl: setupUrl(),
        reverse: false,
      }),
    );
    expect(error.code).toBe('no_device');
    expect(error.message).toContain('SOMEOTHER1');
    expect(error.message).toContain('0A1B2C3D4E5F');
    expect(adb.commands).toEqual([]);
  });

  it('refuses with several_devices listing the serials when two phones are attached', async () => {
    adb.attach('0A1B2C3D4E5F');
    adb.attach('R58M123ABC');
    const error = await refusal(setupFor().revert({ reverse: false }));
    expect(error.code).toBe('several_devices');
    expect(error.serials).toEqual(['0A1B2C3D4E5F', 'R58M123ABC']);
    expect(adb.commands).toEqual([]);
  });

  it('uses the chosen phone when several are attached', async () => {
    adb.attach('0A1B2C3D4E5F');
    adb.attach('R58M123ABC');
    await setupFor('R58M123ABC').revert({ reverse: false });
    expect(adb.commandsOf('R58M123ABC')).toHaveLength(3);
    expect(adb.commandsOf('0A1B2C3D4E5F')).toEqual([]);
  });

  it.each([
    ['unauthorized', 'device_unauthorized', 'Allow USB debugging'],
    ['offline', 'device_offline', 'USB debugging prompt'],
  ] as const)('says what to do for a phone that is %s', async (state, code, hint) => {
    adb.attach('0A1B2C3D4E5F', { state });
    const error = await refusal(setupFor().revert({ reverse: false }));
    expect(error.code).toBe(code);
    expect(error.message).toContain(hint);
  });

  it('fails with command_failed when the phone refuses a setting', async () => {
    adb.attach('0A1B2C3D4E5F');
    adb.failNextShellWith =
      "Exception occurred while executing 'put':\njava.lang.SecurityException: denied\n";
    const error = await refusal(setupFor().revert({ reverse: false }));
    expect(error.code).toBe('command_failed');
    expect(error.message).toContain("Exception occurred while executing 'put'");
  });

  it('refuses a serial with shell characters and a non-http set-up URL before running adb', async () => {
    expect(() => setupFor('abc;reboot')).toThrow(AndroidSetupError);
    adb.attach('0A1B2C3D4E5F');
    const error = await refusal(
      setupFor().connect({
        proxyHost: '127.0.0.1',
        port: proxy.devicePort,
        caDer: CA_DER,
        setupUrl: 'javascript:alert(1)',
        reverse: false,
      }),
    );
    expect(error.code).toBe('bad_input');
    expect(adb.requests).toEqual([]);
  });

  it('reports adb_unavailable when no adb server listens, and starts none', async () => {
    const port = await freeLoopbackPort();
    const setup = new AndroidProxySetup({ adbPath: ADB_PATH, adbServerPort: port });
    const error = await refusal(setup.listDevices());
    expect(error.code).toBe('adb_unavailable');
    expect(error.message).toContain('adb start-server');
    expect(await isListening(port)).toBe(false);
  });
});
