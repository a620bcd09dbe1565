// The LAN test infrastructure end to end, without product code: phones on a simulated LAN
// (helpers/lan-namespace.ts) reach servers on the host's LAN address and not its loopback ones,
// and Chromium in a phone (helpers/phone-browser.ts) takes a PAC, goes through the proxy it names,
// and trusts a CA only when its NSS database holds it. Needs root, iproute2, curl and Chromium.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLan, type Lan, type Phone } from './helpers/lan-namespace.ts';
import { launchPhoneBrowser } from './helpers/phone-browser.ts';
import { type RecordingProxy, startRecordingProxy } from './helpers/recording-proxy.ts';
import { createTestCa, issueServerCertificate, type TestCa } from './helpers/test-ca.ts';

const run = promisify(execFile);
/** curl's exit code for "could not connect". */
const CURL_COULD_NOT_CONNECT = 7;
/** A documentation address (RFC 5737): only ever looked up in routing tables, never sent to. */
const BEYOND_THE_HOST = '203.0.113.7';

let lan: Lan;
let first: Phone;
let second: Phone;
let ca: TestCa;
let proxy: RecordingProxy;
let forwardingBefore: string;
const servers: Server[] = [];
/** Client addresses of the PAC fetches. */
const pacClients: string[] = [];
let loopbackPort: number;
let sitePort: number;
let originPort: number;

async function listen(server: Server, host: string): Promise<number> {
  servers.push(server);
  server.listen(0, host);
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

const ipForward = () => readFile('/proc/sys/net/ipv4/ip_forward', 'utf8');
const links = async () => (await run('ip', ['-o', 'link', 'show'])).stdout;
const namespaces = async () => (await run('ip', ['netns', 'list'])).stdout;

beforeAll(async () => {
  forwardingBefore = await ipForward();
  lan = await createLan({ phones: 2 });
  const [one, two] = lan.phones;
  if (!one || !two) throw new Error(`asked for 2 phones, got ${lan.phones.length}`);
  [first, second] = [one, two];
  const host = lan.hostAddress;
  ca = createTestCa();
  loopbackPort = await listen(
    http.createServer((_request, response) => response.end('loopback only')),
    '127.0.0.1',
  );
  // The LAN "site": the PAC file, and /whoami answering the client's address.
  sitePort = await listen(
    http.createServer((request, response) => {
      const client = request.socket.remoteAddress ?? '';
      if (request.url === '/proxy.pac') {
        pacClients.push(client);
        response.writeHead(200, { 'content-type': 'application/x-ns-proxy-autoconfig' });
        response.end(
          `function FindProxyForURL(url, host) { return "PROXY ${host}:${proxy.port}; DIRECT"; }`,
        );
      } else response.end(client);
    }),
    host,
  );
  const leaf = issueServerCertificate(ca, host);
  originPort = await listen(
    https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<title>LAN origin</title><p>hello from the LAN origin</p>');
    }),
    host,
  );
  // Chromium's own background requests (updates, accounts, connectivity checks) come through the
  // PAC too: the proxy refuses every host but ours.
  proxy = await startRecordingProxy({ host, allowedHosts: [host] });
});

afterAll(async () => {
  await proxy?.close();
  for (const server of servers) server.close();
  await lan?.destroy();
});

describe('a LAN of network namespaces', () => {
  it('gives each phone its own address, which a server on the host LAN address sees', async () => {
    const url = `http://${lan.hostAddress}:${sitePort}/whoami`;
    const seen = await Promise.all(
      [first, second].map((phone) => phone.exec('curl', ['-sS', '--max-time', '2', url])),
    );
    expect(seen.map((result) => result.stdout)).toEqual([first.address, second.address]);
    expect(first.address).not.toBe(second.address);
    expect(lan.subnet).toBe(`${lan.hostAddress.replace(/\.1$/, '.0')}/${lan.prefixLength}`);
  });

  it('keeps the phones IPv4 only, so no address of theirs changes once the LAN is up', async () => {
    for (const phone of [first, second]) {
      const inet6 = await phone.exec('ip', ['-6', '-o', 'addr', 'show', 'dev', 'eth0']);
      expect(inet6.code).toBe(0);
      expect(inet6.stdout).toBe('');
    }
  });

  it('does not let a phone reach a server bound only to the host loopback', async () => {
    for (const address of [lan.hostAddress, '127.0.0.1']) {
      const url = `http://${address}:${loopbackPort}/`;
      const result = await first.exec('curl', ['-sS', '--max-time', '2', url], {
        timeoutMs: 5_000,
      });
      expect(result.code).toBe(CURL_COULD_NOT_CONNECT);
      expect(result.stdout).not.toContain('loopback only');
    }
    const fromHost = await fetch(`http://127.0.0.1:${loopbackPort}/`);
    expect(await fromHost.text()).toBe('loopback only');
  });

  it('sends everything from a phone to the host, which forwards none of it', async () => {
    const inPhone = await first.exec('ip', ['route', 'get', BEYOND_THE_HOST]);
    expect(inPhone.stdout).toContain(`via ${lan.hostAddress}`);
    // The host's routing decision for such a packet arriving on the bridge: none.
    const onHost = run('ip', [
      'route',
      'get',
      BEYOND_THE_HOST,
      'from',
      first.address,
      'iif',
      lan.bridge,
    ]);
    await expect(onHost).rejects.toMatchObject({
      stderr: expect.stringMatching(/unreachable|No route/i),
    });
    expect(await readFile(`/proc/sys/net/ipv4/conf/${lan.bridge}/forwarding`, 'utf8')).toBe('0\n');
    expect(await ipForward()).toBe(forwardingBefore);
  });
});

describe('Chromium in a phone', () => {
  it('loads an HTTPS origin through the PAC proxy when its NSS database has the CA', async () => {
    const pacUrl = `http://${lan.hostAddress}:${sitePort}/proxy.pac`;
    const browser = await launchPhoneBrowser(first, { pacUrl, caDer: ca.certDer });
    try {
      const page = await browser.page();
      const response = await page.goto(`https://${lan.hostAddress}:${originPort}/`);
      expect(response?.status()).toBe(200);
      expect(await page.textContent('p')).toBe('hello from the LAN origin');
    } finally {
      await browser.close();
    }
    expect(pacClients).toContain(first.address);
    expect(proxy.requests).toContainEqual({
      method: 'CONNECT',
      target: `${lan.hostAddress}:${originPort}`,
      clientAddress: first.address,
      allowed: true,
    });
  });

  it('refuses the same origin when the CA is not trusted', async () => {
    const pacUrl = `http://${lan.hostAddress}:${sitePort}/proxy.pac`;
    const browser = await launchPhoneBrowser(first, { pacUrl });
    try {
      const page = await browser.page();
      await expect(page.goto(`https://${lan.hostAddress}:${originPort}/`)).rejects.toThrow(
        /ERR_CERT_AUTHORITY_INVALID/,
      );
    } finally {
      await browser.close();
    }
  });
});

describe('cleaning up', () => {
  it('sweeps what a dead run left and keeps what a live one owns', async () => {
    const exited = spawn('true');
    await once(exited, 'exit');
    const living = spawn('sleep', ['30']);
    // Octet ff is never claimed (candidates are 1-254), so these cannot clash with a real LAN.
    const deadBridge = `lnt-${exited.pid?.toString(36)}-ff`;
    const liveBridge = `lnt-${living.pid?.toString(36)}-ff`;
    try {
      await run('ip', ['link', 'add', 'name', deadBridge, 'type', 'bridge']);
      await run('ip', ['netns', 'add', `${deadBridge}-1`]);
      await run('ip', ['link', 'add', 'name', liveBridge, 'type', 'bridge']);
      const other = await createLan({ phones: 1 });
      await other.destroy();
      expect(await links()).not.toContain(`${deadBridge}:`);
      expect(await namespaces()).not.toContain(`${deadBridge}-1`);
      expect(await links()).toContain(`${liveBridge}:`);
    } finally {
      await run('ip', ['link', 'delete', liveBridge]).catch(() => undefined);
      living.kill();
    }
  });

  it('leaves no namespace or link behind, and may be called twice', async () => {
    await lan.destroy();
    await lan.destroy();
    const names = [lan.bridge, ...lan.phones.map((phone) => phone.name)];
    for (const name of names) {
      expect(await links()).not.toMatch(new RegExp(`\\d+: ${name}[:@]`));
      expect(await namespaces()).not.toMatch(new RegExp(`^${name}( |$)`, 'm'));
    }
  });
});
