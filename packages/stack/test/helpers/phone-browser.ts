// Debian's Chromium inside a phone's network namespace (lan-namespace.ts), driven by
// playwright-core over its pipe. A generated wrapper enters the namespace with a throwaway HOME,
// whose NSS database ($HOME/.pki/nssdb: Chromium's user-trusted roots on Linux) holds a test's CA.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { Phone } from './lan-namespace.ts';

const run = promisify(execFile);

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_TIMEOUT_MS = 30_000;

export interface PhoneBrowserOptions {
  /** Given as --proxy-pac-url; Chromium fetches it itself, from inside the phone. */
  pacUrl?: string;
  /** A CA certificate (DER) to trust for TLS servers, as a user who installed it would. */
  caDer?: Buffer;
}

export interface PhoneBrowser {
  browser: Browser;
  /** A new page in a fresh context. */
  page(): Promise<Page>;
  /** Closes the browser and removes its HOME and wrapper. */
  close(): Promise<void>;
}

function quoteForShell(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** certutil(1) from libnss3-tools: a new empty database, then the CA trusted for TLS servers. */
async function trustCa(home: string, caDer: Buffer, scratch: string): Promise<void> {
  const database = join(home, '.pki', 'nssdb');
  await mkdir(database, { recursive: true });
  const caFile = join(scratch, 'ca.der');
  await writeFile(caFile, caDer);
  await run('certutil', ['-d', `sql:${database}`, '-N', '--empty-password']);
  await run('certutil', [
    '-d',
    `sql:${database}`,
    '-A',
    '-t',
    'C,,',
    '-n',
    'Capture CA',
    '-i',
    caFile,
  ]);
}

/** Starts Chromium in `phone`'s namespace: its traffic leaves from the phone's address. */
export async function launchPhoneBrowser(
  phone: Pick<Phone, 'name'>,
  options: PhoneBrowserOptions = {},
): Promise<PhoneBrowser> {
  const scratch = await mkdtemp(join(tmpdir(), 'phone-browser-'));
  try {
    const home = join(scratch, 'home');
    await mkdir(home);
    if (options.caDer) await trustCa(home, options.caDer, scratch);
    // Playwright passes its pipe on descriptors 3 and 4; `exec` keeps them through ip and the
    // Debian launcher script, so Chromium itself is the process Playwright started.
    const wrapper = join(scratch, 'chromium-in-phone.sh');
    await writeFile(
      wrapper,
      [
        '#!/bin/sh',
        `HOME=${quoteForShell(home)}`,
        'export HOME',
        `exec ip netns exec ${quoteForShell(phone.name)} ${CHROMIUM} "$@"`,
        '',
      ].join('\n'),
    );
    await chmod(wrapper, 0o755);
    const browser = await chromium.launch({
      executablePath: wrapper,
      headless: true,
      timeout: LAUNCH_TIMEOUT_MS,
      // --no-sandbox: Chromium refuses its sandbox as root, which the namespace needs anyway.
      // Without a PAC, no proxy at all: not one from the host's environment variables.
      args: [
        '--no-sandbox',
        options.pacUrl ? `--proxy-pac-url=${options.pacUrl}` : '--no-proxy-server',
      ],
    });
    return {
      browser,
      page: () => browser.newPage(),
      async close() {
        try {
          await browser.close();
        } finally {
          await rm(scratch, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  }
}
