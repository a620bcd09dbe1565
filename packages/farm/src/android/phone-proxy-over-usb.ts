// The one-action Android set-up over USB, shared by `npm run stack -- device android` and the
// dashboard's route: fetch the proxy's CA, point the phone at its device port, open its set-up
// page, then wait for its traffic; and the one-action revert. Callers bring the device's port
// and a set-up token, each from SQL under their own authority.
import type { AdbDevice } from './adb-device-list.ts';
import {
  AndroidProxySetup,
  type AndroidSetupReport,
  CA_INSTALL_STEPS,
} from './android-proxy-setup.ts';
import { AndroidSetupError } from './android-setup-error.ts';
import { statusUrlOf, type TrafficCheck, waitForSetupTraffic } from './setup-traffic-check.ts';

export interface PhoneAdb {
  adbPath: string;
  adbServerPort: number;
  serial?: string;
}

/**
 * Where the phone reaches the proxy. On the LAN, `<lanAddress>:<port>`. Without LAN mode the
 * proxy listens on 127.0.0.1, which a phone cannot reach, so `adb reverse` carries the device
 * port and the set-up page's port over USB and the phone uses `127.0.0.1:<port>`; its
 * connections then reach the proxy from 127.0.0.1, the same address the set-up page is opened
 * from, so the port's binding to the opener's address matches the traffic.
 */
export interface PhoneProxyRoute {
  /** The LAN address (PROXY_LAN_ADDRESS); null: adb reverse. */
  lanAddress: string | null;
  /** The device's dedicated port (public.device_ports). */
  port: number;
  /** Base URL of set-up pages (PROXY_SETUP_URL). */
  setupBaseUrl: string;
}

export interface PhoneProxyConnection {
  report: AndroidSetupReport;
  /** `host:port` the phone's http_proxy now holds. */
  proxy: string;
  reverse: boolean;
  /** The adb runs as a person reads them, the set-up token left out. */
  commandLines: string[];
  caInstallSteps: string;
  traffic: TrafficCheck;
}

const CA_FETCH_LIMIT_MS = 10_000;

export async function pointPhoneAtProxy(
  adb: PhoneAdb,
  route: PhoneProxyRoute,
  options: {
    /** The proxy's management URL (PROXY_MANAGEMENT_URL), serving `/ca.der`. */
    managementUrl: string;
    token: string;
    trafficTimeoutMs?: number;
    /** Progress for a person waiting (the CLI prints each line). */
    onProgress?: (line: string) => void;
  },
): Promise<PhoneProxyConnection> {
  const setup = new AndroidProxySetup(adb);
  const reverse = route.lanAddress === null;
  const proxyHost = route.lanAddress ?? '127.0.0.1';
  const setupUrl = `${route.setupBaseUrl.replace(/\/+$/, '')}/setup/${encodeURIComponent(options.token)}`;
  const caDer = await fetchCaDer(options.managementUrl);
  const report = await setup.connect({ proxyHost, port: route.port, caDer, setupUrl, reverse });
  const commandLines = report.commands.map((args) =>
    ['adb', '-s', report.device.serial, ...args].join(' ').replaceAll(options.token, '<token>'),
  );
  for (const line of commandLines) options.onProgress?.(line);
  const timeoutMs = options.trafficTimeoutMs ?? 30_000;
  options.onProgress?.(`Waiting up to ${Math.round(timeoutMs / 1000)} s for the phone's traffic…`);
  const traffic = await waitForSetupTraffic({ statusUrl: statusUrlOf(setupUrl), timeoutMs });
  return {
    report,
    proxy: `${proxyHost}:${route.port}`,
    reverse,
    commandLines,
    caInstallSteps: CA_INSTALL_STEPS,
    traffic,
  };
}

/** Every phone this machine's adb sees, in any state (the dashboard lists them to choose from). */
export function listAttachedPhones(adb: PhoneAdb): Promise<AdbDevice[]> {
  return new AndroidProxySetup(adb).listDevices();
}

export async function revertPhoneProxy(
  adb: PhoneAdb,
  route: PhoneProxyRoute,
): Promise<AndroidSetupReport> {
  const setupBase = new URL(route.setupBaseUrl);
  const managementPort = Number(setupBase.port || (setupBase.protocol === 'https:' ? 443 : 80));
  return new AndroidProxySetup(adb).revert({
    reverse: route.lanAddress === null,
    port: route.port,
    managementPort,
  });
}

/** One line a person reads for a traffic check's outcome. */
export function describeTraffic(traffic: TrafficCheck): string {
  if (traffic.seen) {
    const how = traffic.connection ? ` over ${traffic.connection}` : '';
    const where = traffic.listener === 'shared-port' ? ' (on the shared port)' : '';
    return `Traffic from the phone arrived${how}${where}.`;
  }
  if (traffic.caProblem) {
    return (
      `No traffic was attributed to the phone yet; its TLS to ${traffic.caProblem.host} failed ` +
      `(${traffic.caProblem.reason}): install the CA certificate.`
    );
  }
  const why = traffic.lastError
    ? ` (the set-up status could not be read: ${traffic.lastError})`
    : '';
  return `No traffic from the phone arrived${why}: open the set-up page on the phone.`;
}

async function fetchCaDer(managementUrl: string): Promise<Buffer> {
  const url = `${managementUrl.replace(/\/+$/, '')}/ca.der`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(CA_FETCH_LIMIT_MS) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const der = Buffer.from(await response.arrayBuffer());
    // A DER certificate is one ASN.1 SEQUENCE (0x30); anything else is not the CA.
    if (der[0] !== 0x30) throw new Error('not a DER certificate');
    return der;
  } catch (error) {
    throw new AndroidSetupError(
      'proxy_unavailable',
      `the capture proxy's CA certificate could not be fetched from ${url}`,
      { cause: error },
    );
  }
}
