// What `npm run stack -- --help` and `help <command>` print: the commands, their flags with
// defaults, and one example each, so the CLI explains itself (docs/local-stack.md "CLI").

interface CommandHelp {
  summary: string;
  options: string[];
  example: string;
}

export const COMMAND_HELP: Record<string, CommandHelp> = {
  up: {
    summary: 'Start the whole local stack with demo data; Ctrl-C stops it.',
    options: [
      '--detach          run in the background, logging to <data-dir>/stack.log',
      '--free-ports      pick free ports instead of 54321-54325, 8888 and 8889',
      '--data-dir DIR    where the database, mail and state live (default: .stack)',
      '--log-format FMT  pretty (notable events, on a terminal) or json (every line; the default',
      '                  off a terminal); full logs always go to <data-dir>/logs/<service>.log',
      '--lan [ADDRESS]   phones on this network may use the capture proxy: it also binds ADDRESS',
      "                  (default: the default route's IPv4) and admits that subnet; the banner",
      "                  shows a phone's set-up link and QR code (config.toml: [capture_proxy] lan)",
      '--proxy-destinations LIST  where the proxy may connect, e.g. public,127.0.0.0/8,localhost',
      '                  to capture your own local servers (default public; PROXY_DESTINATIONS)',
    ],
    example: 'npm start -- --lan',
  },
  logs: {
    summary: "Show the services' logs (all, or one service), like `docker compose logs`.",
    options: [
      '-f, --follow      keep printing new lines until Ctrl-C',
      '--data-dir DIR    the stack whose logs to read (default: .stack)',
    ],
    example: 'npm run stack -- logs postgres --follow',
  },
  down: {
    summary: 'Stop a stack started with --detach.',
    options: ['--data-dir DIR    the stack to stop (default: .stack)'],
    example: 'npm run stack -- down',
  },
  status: {
    summary: 'Print the URLs and keys of the running stack, named as `supabase status` names them.',
    options: [
      '-o, --output FMT  pretty, json or env (default: pretty)',
      '--data-dir DIR    the stack to ask (default: .stack)',
    ],
    example: 'eval "$(npm run -s stack -- status -o env)"',
  },
  reset: {
    summary: 'Delete the data directory; the next `up` starts a fresh database with the seed.',
    options: ['--data-dir DIR    the directory to delete (default: .stack)'],
    example: 'npm run stack -- reset',
  },
  mail: {
    summary: 'List the mail the auth service sent (magic links, one-time codes).',
    options: [
      '--to EMAIL        only mail to this address',
      '--data-dir DIR    the stack whose mailbox to read (default: .stack)',
    ],
    example: 'npm run stack -- mail --to user@demo.local',
  },
  check: {
    summary: 'Run `supabase db advisors` and `supabase db lint` against the running database.',
    options: ['--data-dir DIR    the stack to check (default: .stack)'],
    example: 'npm run stack -- check',
  },
  device: {
    summary:
      'device android: point the phone on adb at its device port (proxy setting, CA, set-up page).',
    options: [
      'android           the only platform: a phone with USB debugging, seen by `adb devices`',
      '--serial S        the phone to use when several are attached (see `adb devices`)',
      '--device UUID     the device to capture it as (default: the stack\'s "Phone (LAN)")',
      '--revert          remove the proxy setting (and adb reverse forwarding) again',
      '--data-dir DIR    the stack to use (default: .stack); adb server port: ANDROID_ADB_SERVER_PORT',
    ],
    example: 'npm run stack -- device android --serial 0A1B2C3D4E5F',
  },
  help: {
    summary: 'Show this help, or the help of one command.',
    options: [],
    example: 'npm run stack -- help up',
  },
};

export function generalUsage(): string {
  const width = Math.max(...Object.keys(COMMAND_HELP).map((name) => name.length));
  const commands = Object.entries(COMMAND_HELP)
    .map(([name, help]) => `  ${name.padEnd(width)}  ${help.summary}`)
    .join('\n');
  return `Usage: npm run stack -- <command> [options]

Commands:
${commands}

Options: -h, --help shows help; \`npm run stack -- help <command>\` shows a command's flags.

Example: npm start   (the same as npm run stack -- up, after installing what is missing)`;
}

export function commandUsage(name: string): string | undefined {
  const help = COMMAND_HELP[name];
  if (!help) return undefined;
  const options =
    help.options.length > 0
      ? `\nOptions:\n${help.options.map((line) => `  ${line}`).join('\n')}\n`
      : '';
  return `Usage: npm run stack -- ${name}${help.options.length > 0 ? ' [options]' : ''}

${help.summary}
${options}
Example: ${help.example}`;
}
