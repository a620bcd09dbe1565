// The read-only system every farm sandbox starts from (shell, browser, aapt): Debian's merged /usr
// bound read-only, with /bin, /sbin, /lib and /lib64 as the symlinks into it that the host has.
// Nothing else of the host is seen unless a sandbox binds it itself.

/** bubblewrap arguments for the read-only /usr root. */
export function readOnlyUsrRoot(): string[] {
  return [
    '--ro-bind',
    '/usr',
    '/usr',
    ...[
      ['usr/bin', '/bin'],
      ['usr/sbin', '/sbin'],
      ['usr/lib', '/lib'],
      ['usr/lib64', '/lib64'],
    ].flatMap(([target, link]) => ['--symlink', target as string, link as string]),
  ];
}
