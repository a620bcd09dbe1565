// Which process holds a TCP port (docs/local-stack.md "When it cannot start": a taken port names
// the port, the service that wanted it and the holder where it can be found). Linux only, from
// /proc: the listening socket's inode in /proc/net/tcp{,6}, then the process with a descriptor on
// that socket. Processes of other users are only visible to root; then the answer is "another
// process".
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { StackError } from './errors.ts';

export interface PortHolder {
  pid: number;
  command: string;
}

/** Inodes of the sockets listening on `port` (any address, IPv4 or IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT, st 0A is LISTEN, inode is the tenth field.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A' && fields[9]) {
        inodes.add(fields[9]);
      }
    }
  }
  return inodes;
}

/** Whether process `pid` holds a descriptor on one of `inodes`. */
function holdsSocket(pid: string, inodes: Set<string>): boolean {
  let descriptors: string[];
  try {
    descriptors = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of descriptors) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode && inodes.has(inode)) return true;
    } catch {
      // the descriptor closed in between
    }
  }
  return false;
}

/** Whether process `pid` is listening on `port`: a server that is up, and is the one we started. */
export function isListeningOn(pid: number, port: number): boolean {
  const inodes = listeningInodes(port);
  return inodes.size > 0 && holdsSocket(String(pid), inodes);
}

/** pid and command line of the process listening on `port`, when /proc shows it. */
export function findPortHolder(port: number): PortHolder | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || !holdsSocket(entry, inodes)) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      command = '?';
    }
    return { pid: Number(entry), command: command.slice(0, 200) };
  }
  return undefined;
}

/** The error for a configured port someone else holds. */
export function portTakenError(
  port: number,
  service: string,
  options?: { cause?: unknown },
): StackError {
  const holder = findPortHolder(port);
  const by = holder ? `pid ${holder.pid} (${holder.command})` : 'another process';
  return new StackError(
    'port_in_use',
    `port ${port}, which the ${service} is configured to use, is taken by ${by}. Stop it ` +
      '(`npm run stack -- down` if it is an earlier stack), change the port in ' +
      'supabase/config.toml, or start with --free-ports.',
    options,
  );
}
