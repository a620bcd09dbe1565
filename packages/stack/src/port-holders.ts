// Which process holds a TCP port (issue 20: a taken port names the port, the service that wanted
// it and the holder where it can be found). Linux only, from /proc: the listening socket's inode
// in /proc/net/tcp{,6}, then the process with a descriptor on that socket. Processes of other
// users are only visible to root; then the answer is "another process".
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { StackError } from './errors.ts';

export interface PortHolder {
  pid: number;
  command: string;
}

/** pid and command line of the process listening on `port`, when /proc shows it. */
export function findPortHolder(port: number): PortHolder | undefined {
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
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let descriptors: string[];
    try {
      descriptors = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of descriptors) {
      let target = '';
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) {
        let command = '';
        try {
          command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
        } catch {
          command = '?';
        }
        return { pid: Number(entry), command: command.slice(0, 200) };
      }
    }
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
