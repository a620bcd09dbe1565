// LAN mode's pure parts (docs/devices.md): which address `--lan` serves on (the default route's
// interface, or a given address of this machine, never another) and its subnet, and the banner's
// QR code, read back by a QR decoder (jsQR) as a phone's camera would read the terminal.
import jsQRModule from 'jsqr';
import { describe, expect, it } from 'vitest';
import { StackError } from '../src/errors.ts';
import { resolveLanAddress } from '../src/lan-address.ts';
import { terminalQr } from '../src/terminal-qr.ts';

const INTERFACES = {
  lo: [
    {
      address: '127.0.0.1',
      netmask: '255.0.0.0',
      family: 'IPv4',
      internal: true,
      cidr: '127.0.0.1/8',
      mac: '00:00:00:00:00:00',
    },
  ],
  docker0: [
    {
      address: '172.17.0.1',
      netmask: '255.255.0.0',
      family: 'IPv4',
      internal: false,
      cidr: '172.17.0.1/16',
      mac: '02:42:00:00:00:01',
    },
  ],
  wlan0: [
    {
      address: 'fe80::1',
      netmask: 'ffff:ffff:ffff:ffff::',
      family: 'IPv6',
      internal: false,
      cidr: 'fe80::1/64',
      mac: '02:00:00:00:00:02',
      scopeid: 3,
    },
    {
      address: '192.168.1.20',
      netmask: '255.255.255.0',
      family: 'IPv4',
      internal: false,
      cidr: '192.168.1.20/24',
      mac: '02:00:00:00:00:02',
    },
  ],
} as const;

// /proc/net/route: wlan0 carries the default route with the lower metric; docker0 a subnet route.
const ROUTES = [
  'Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
  'docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0',
  'eth9\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0',
  'wlan0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0',
].join('\n');

const interfaces = INTERFACES as unknown as Parameters<typeof resolveLanAddress>[1];

describe('the LAN address', () => {
  it("is the default route's interface address, with its subnet", () => {
    expect(resolveLanAddress(undefined, interfaces, ROUTES)).toEqual({
      address: '192.168.1.20',
      interfaceName: 'wlan0',
      cidr: '192.168.1.0/24',
      chosenBy: 'default route',
    });
  });

  it('is the address given, when it is one of this machine', () => {
    expect(resolveLanAddress('172.17.0.1', interfaces, ROUTES)).toMatchObject({
      interfaceName: 'docker0',
      cidr: '172.17.0.0/16',
      chosenBy: 'given',
    });
  });

  it('refuses an address this machine does not have, loopback, or a name', () => {
    for (const given of ['192.168.1.99', '127.0.0.1', 'my-laptop.local']) {
      expect(() => resolveLanAddress(given, interfaces, ROUTES)).toThrow(StackError);
    }
    expect(() => resolveLanAddress('192.168.1.99', interfaces, ROUTES)).toThrow(
      /not an address of this machine \(its LAN addresses: 172\.17\.0\.1, 192\.168\.1\.20\)/,
    );
  });

  it('says to pass one when no default route leaves by an interface with an address', () => {
    expect(() => resolveLanAddress(undefined, interfaces, ROUTES.split('\n')[0])).toThrow(
      /pass one: --lan ADDRESS/,
    );
  });
});

/** The terminal's characters back to pixels: a drawn half is light, as on a dark terminal. */
function pixelsOf(drawing: string, scale: number) {
  const rows = drawing.split('\n').flatMap((line) => {
    const top = [...line].map((char) => char === '█' || char === '▀');
    const bottom = [...line].map((char) => char === '█' || char === '▄');
    return [top, bottom];
  });
  const width = (rows[0]?.length ?? 0) * scale;
  const height = rows.length * scale;
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const value = rows[Math.floor(y / scale)]?.[Math.floor(x / scale)] ? 255 : 0;
      data.set([value, value, value, 255], (y * width + x) * 4);
    }
  }
  return { data, width, height };
}

describe('the banner QR code', () => {
  it('reads back as the set-up link', () => {
    const link = 'http://192.168.1.20:8889/setup/1FH9OYgpHzb5rt0dkeQUv-IkNbTpU1ug';
    const { data, width, height } = pixelsOf(terminalQr(link), 4);
    // jsQR is CommonJS: its function is also its own `default`, which is what the types know.
    const decoded = jsQRModule.default(data, width, height, { inversionAttempts: 'dontInvert' });
    expect(decoded?.data).toBe(link);
  });

  it('draws a quiet zone of light modules around the code', () => {
    const lines = terminalQr('http://10.0.0.1:8889/setup/x').split('\n');
    expect(lines[0]).toMatch(/^█+$/);
    expect([...(lines[1] ?? '')].slice(0, 2)).toEqual(['█', '█']);
  });
});
