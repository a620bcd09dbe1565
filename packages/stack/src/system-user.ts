// System accounts from /etc/passwd: a stack run as root hands its servers to unprivileged users
// (Postgres to `postgres`, which refuses root; the gateway's nginx to `capture-gateway`).
import { readFileSync } from 'node:fs';

export interface OsUser {
  uid: number;
  gid: number;
}

/** The uid and primary gid of the account `name`, or undefined when there is none. */
export function systemUser(name: string): OsUser | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${name}:`));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
