// The local mailbox: the auth service "sends" mail by writing one JSON file per message under
// `<data-dir>/mailbox/`, which `npm run stack -- mail` lists and tests read. Nothing leaves the
// machine.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type MailKind = 'signup' | 'invite' | 'magiclink' | 'recovery' | 'email_change';

export interface MailMessage {
  id: string;
  to: string;
  kind: MailKind;
  subject: string;
  /** The one-time code a user could type instead of following the link. */
  otp: string;
  tokenHash: string;
  actionLink: string;
  text: string;
  sentAt: string;
}

const SUBJECTS: Record<MailKind, string> = {
  signup: 'Confirm Your Signup',
  invite: 'You have been invited',
  magiclink: 'Your Magic Link',
  recovery: 'Reset Your Password',
  email_change: 'Confirm Email Change',
};

export class Mailbox {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  deliver(
    to: string,
    kind: MailKind,
    otp: string,
    tokenHash: string,
    actionLink: string,
  ): MailMessage {
    const sentAt = new Date().toISOString();
    const message: MailMessage = {
      id: randomUUID(),
      to,
      kind,
      subject: SUBJECTS[kind],
      otp,
      tokenHash,
      actionLink,
      text: `${SUBJECTS[kind]}\n\nFollow this link: ${actionLink}\n\nOr enter the code: ${otp}\n`,
      sentAt,
    };
    // The timestamp prefix keeps a directory listing in delivery order.
    const name = `${sentAt.replace(/[:.]/g, '-')}_${message.id}.json`;
    writeFileSync(join(this.dir, name), `${JSON.stringify(message, null, 2)}\n`);
    return message;
  }
}

/** Messages in delivery order, optionally only those sent to one address. */
export function readMailbox(dir: string, to?: string): MailMessage[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return [];
  }
  return names
    .sort()
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as MailMessage)
    .filter((message) => to === undefined || message.to === to.toLowerCase());
}
