// A simulated Wi-Fi LAN for tests: a Linux bridge on the host holding this machine's "LAN
// address", and phones as network namespaces joined to it by veth pairs. A phone reaches the host
// and the other phones, nothing beyond: the bridge does not forward, and its DNS is its loopback.
import { type ChildProcess, execFile, type SpawnOptions, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PhoneExecResult {
  /** The exit code; null when the command was killed (by the timeout or a signal). */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Phone {
  /** The network namespace's name, as `ip netns` lists it. */
  name: string;
  address: string;
  /** Runs a command to its end inside the phone (`ip netns exec`). */
  exec(
    command: string,
    args: string[],
    options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ): Promise<PhoneExecResult>;
  /** Starts a long-running command inside the phone; destroy() kills it if it still runs. */
  spawn(command: string, args: string[], options?: SpawnOptions): ChildProcess;
}

export interface Lan {
  /** This machine's address on the LAN, on the bridge. */
  hostAddress: string;
  prefixLength: number;
  /** The LAN in CIDR notation. */
  subnet: string;
  bridge: string;
  phones: Phone[];
  /** Removes the phones, their veths and the bridge; safe to call again. */
  destroy(): Promise<void>;
}

export type LanSetupErrorCode = 'not_root' | 'ip_missing' | 'bad_options' | 'no_free_subnet';

export class LanSetupError extends Error {
  override name = 'LanSetupError';
  readonly code: LanSetupErrorCode;
  constructor(code: LanSetupErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.code = code;
  }
}

// Names: lnt-<owner pid, base 36>-<third octet, 2 hex digits>[-<phone number>]. The bridge drops
// the phone part; a phone's namespace and its host-side veth share a name. At most 15 characters
// (IFNAMSIZ - 1): 4 + 5 (pid_max 2^22 is "2hmq8") + 3 + 3. The phone's side is eth0 inside it.
const PREFIX = 'lnt-';
const NAME_PATTERN = /^lnt-([0-9a-z]{1,5})-([0-9a-f]{2})(-\d{1,2})?$/;
const MAX_PHONES = 99;
// 10.231.0.0/16 is rarely used by real networks; each candidate /24 is checked against the
// machine's addresses and routes anyway.
const FIRST_OCTETS = '10.231';
const PREFIX_LENGTH = 24;
const CLAIM_ATTEMPTS = 32;

/** Where `ip netns exec` finds files it mounts over /etc for one namespace (ip-netns(8)). */
const NETNS_ETC = '/etc/netns';

let lansMade = 0;

async function ip(args: string[]): Promise<string> {
  return (await run('ip', args)).stdout;
}

async function assertPrivileges(): Promise<void> {
  if (process.getuid?.() !== 0) {
    throw new LanSetupError('not_root', 'createLan needs root (network namespaces and bridges)');
  }
  try {
    await ip(['-V']);
  } catch (error) {
    throw new LanSetupError('ip_missing', 'createLan needs `ip` (Debian package iproute2)', {
      cause: error,
    });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ownerIsGone(name: string): boolean {
  const match = NAME_PATTERN.exec(name);
  return match !== null && !isAlive(Number.parseInt(match[1] as string, 36));
}

async function linkNames(): Promise<string[]> {
  const links = JSON.parse(await ip(['-j', 'link', 'show'])) as { ifname: string }[];
  return links.map((link) => link.ifname);
}

async function namespaceNames(): Promise<string[]> {
  const listed = (await ip(['-j', 'netns', 'list'])).trim();
  return listed ? (JSON.parse(listed) as { name: string }[]).map((entry) => entry.name) : [];
}

/**
 * Deletes what is listed and still there. Links go before namespaces: a namespace outlives
 * `ip netns delete` while a process holds it, and so would its veth pair.
 */
async function removeObjects(links: string[], namespaces: string[]): Promise<void> {
  const presentLinks = new Set(await linkNames());
  for (const link of links.filter((name) => presentLinks.has(name))) {
    await ip(['link', 'delete', link]).catch(() => undefined);
  }
  const presentNamespaces = new Set(await namespaceNames());
  for (const namespace of namespaces.filter((name) => presentNamespaces.has(name))) {
    await ip(['netns', 'delete', namespace]).catch(() => undefined);
  }
  for (const namespace of namespaces) {
    await rm(join(NETNS_ETC, namespace), { recursive: true, force: true });
  }
  // A failed delete above is ignored only if another cleaner got there first.
  const left = [
    ...(await linkNames()).filter((name) => links.includes(name)),
    ...(await namespaceNames()).filter((name) => namespaces.includes(name)),
  ];
  if (left.length > 0) throw new Error(`could not remove ${left.join(', ')}`);
}

/**
 * Removes what an earlier run left when it died: only our names, only if their owner is gone.
 * Caveat: owners are looked up in our PID namespace, so runs sharing this network namespace must
 * share that too (a container on the host network with its own PIDs would not).
 */
async function sweepLeftovers(): Promise<void> {
  const etcEntries = await readdir(NETNS_ETC).catch(() => [] as string[]);
  const namespaces = [...new Set([...(await namespaceNames()), ...etcEntries])];
  await removeObjects(
    (await linkNames()).filter(ownerIsGone),
    namespaces.filter((name) => name.startsWith(PREFIX) && ownerIsGone(name)),
  );
}

function toNumber(address: string): number {
  return address.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

function overlaps(a: string, aLength: number, b: string, bLength: number): boolean {
  const shorter = Math.min(aLength, bLength);
  const size = 2 ** (32 - shorter);
  return Math.floor(toNumber(a) / size) === Math.floor(toNumber(b) / size);
}

/** Whether any address or route of the machine (the default route aside) touches the subnet. */
async function subnetInUse(network: string): Promise<boolean> {
  const interfaces = JSON.parse(await ip(['-j', '-4', 'addr', 'show'])) as {
    addr_info: { local: string; prefixlen: number }[];
  }[];
  const routes = JSON.parse(await ip(['-j', '-4', 'route', 'show', 'table', 'all'])) as {
    dst: string;
  }[];
  const prefixes = [
    ...interfaces.flatMap((entry) => entry.addr_info.map((a) => `${a.local}/${a.prefixlen}`)),
    ...routes.map((route) => route.dst).filter((dst) => dst !== 'default'),
  ];
  return prefixes.some((prefix) => {
    const [address = '', length = '32'] = prefix.split('/');
    return overlaps(address, Number(length), network, PREFIX_LENGTH);
  });
}

/**
 * Picks a free 10.231.<n>.0/24 and creates its bridge. The bridge's name claims <n>: after
 * creating ours we look for another helper's bridge with the same <n>, and back off if there is
 * one, so of two runs racing for <n> at most one keeps it (the later to look sees the other).
 */
async function claimSubnet(links: string[]): Promise<{ octet: number; bridge: string }> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const octet = attempt === 0 ? ((process.pid + lansMade) % 254) + 1 : randomInt(1, 255);
    if (await subnetInUse(`${FIRST_OCTETS}.${octet}.0`)) continue;
    const hexOctet = octet.toString(16).padStart(2, '0');
    const bridge = `${PREFIX}${process.pid.toString(36)}-${hexOctet}`;
    try {
      await ip(['link', 'add', 'name', bridge, 'type', 'bridge', 'forward_delay', '0']);
    } catch (error) {
      // Ours from a LAN of this process that is being made right now.
      if (/File exists/.test(String((error as { stderr?: string }).stderr))) continue;
      throw error;
    }
    links.push(bridge);
    const rivals = (await linkNames()).filter((name) => {
      const match = NAME_PATTERN.exec(name);
      return name !== bridge && match?.[2] === hexOctet && match[3] === undefined;
    });
    if (rivals.length === 0) return { octet, bridge };
    await removeObjects([bridge], []);
    links.pop();
  }
  throw new LanSetupError('no_free_subnet', `no free /24 in ${FIRST_OCTETS}.0.0/16`);
}

function makePhone(name: string, address: string, children: Set<ChildProcess>): Phone {
  const phoneSpawn = (command: string, args: string[], options: SpawnOptions = {}) => {
    const child = spawn('ip', ['netns', 'exec', name, command, ...args], options);
    children.add(child);
    child.once('exit', () => children.delete(child));
    return child;
  };
  return {
    name,
    address,
    spawn: phoneSpawn,
    exec(command, args, options = {}) {
      return new Promise((resolve, reject) => {
        const child = phoneSpawn(command, args, {
          env: options.env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
        child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        const timer = options.timeoutMs
          ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
          : undefined;
        child.once('error', reject);
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      });
    },
  };
}

/** What a LAN has made so far: each name is added once its object exists, for destroy(). */
interface Made {
  links: string[];
  namespaces: string[];
}

async function addPhone(
  made: Made,
  { bridge, hostAddress }: { bridge: string; hostAddress: string },
  { name, address }: { name: string; address: string },
) {
  await ip(['netns', 'add', name]);
  made.namespaces.push(name);
  // The host's resolv.conf names a real resolver; a phone's lookups stay on its own loopback.
  await mkdir(join(NETNS_ETC, name), { recursive: true });
  await writeFile(join(NETNS_ETC, name, 'resolv.conf'), 'nameserver 127.0.0.1\n');
  await ip(['link', 'add', name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name]);
  made.links.push(name);
  await ip(['link', 'set', name, 'master', bridge, 'up']);
  // IPv4 only, as the bridge: otherwise eth0's IPv6 link-local address finishes duplicate address
  // detection about a second after the link comes up, and Chromium in the phone, seeing an address
  // change, fails a load that is under way with ERR_NETWORK_CHANGED.
  await run('ip', [
    'netns',
    'exec',
    name,
    'sysctl',
    '-q',
    '-w',
    'net.ipv6.conf.eth0.disable_ipv6=1',
  ]);
  await ip(['-n', name, 'addr', 'add', `${address}/${PREFIX_LENGTH}`, 'dev', 'eth0']);
  await ip(['-n', name, 'link', 'set', 'eth0', 'up']);
  await ip(['-n', name, 'link', 'set', 'lo', 'up']);
  await ip(['-n', name, 'route', 'add', 'default', 'via', hostAddress]);
}

/**
 * A bridge with this machine's LAN address (10.231.<n>.1/24) and `phones` namespaces (.2, .3, …),
 * each with loopback up and a default route via the host. Needs root and iproute2.
 */
export async function createLan(options: { phones?: number } = {}): Promise<Lan> {
  const phoneCount = options.phones ?? 1;
  if (!Number.isInteger(phoneCount) || phoneCount < 1 || phoneCount > MAX_PHONES) {
    throw new LanSetupError('bad_options', `phones must be an integer from 1 to ${MAX_PHONES}`);
  }
  await assertPrivileges();
  await sweepLeftovers();
  lansMade += 1;
  const made: Made = { links: [], namespaces: [] };
  const children = new Set<ChildProcess>();
  const destroy = async () => {
    for (const child of children) child.kill('SIGKILL');
    await removeObjects(made.links, made.namespaces);
  };
  try {
    const { octet, bridge } = await claimSubnet(made.links);
    const network = `${FIRST_OCTETS}.${octet}`;
    const hostAddress = `${network}.1`;
    // Per-interface switches, so the machine's own settings stay as they are: packets arriving
    // on the bridge are never forwarded (even where net.ipv4.ip_forward is 1, as on Docker hosts;
    // the input device's flag decides), and the LAN is IPv4 only, so IPv6 link-local gives no
    // other way to the host. Caveat: writing net.ipv4.conf.all.forwarding later resets the flag.
    await writeFile(`/proc/sys/net/ipv4/conf/${bridge}/forwarding`, '0');
    await writeFile(`/proc/sys/net/ipv6/conf/${bridge}/disable_ipv6`, '1').catch(() => undefined);
    await ip(['addr', 'add', `${hostAddress}/${PREFIX_LENGTH}`, 'dev', bridge]);
    await ip(['link', 'set', bridge, 'up']);
    const phones: Phone[] = [];
    for (let index = 1; index <= phoneCount; index++) {
      const name = `${bridge}-${index}`;
      const address = `${network}.${index + 1}`;
      await addPhone(made, { bridge, hostAddress }, { name, address });
      phones.push(makePhone(name, address, children));
    }
    return {
      hostAddress,
      prefixLength: PREFIX_LENGTH,
      subnet: `${network}.0/${PREFIX_LENGTH}`,
      bridge,
      phones,
      destroy,
    };
  } catch (error) {
    await destroy().catch(() => undefined);
    throw error;
  }
}
