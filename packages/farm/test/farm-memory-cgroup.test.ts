// The farm's memory cgroups (memory-cgroup.ts) on this machine (root, cgroup v1): what detect
// sweeps at start, and a cgroup's limit holding memory that is not address space.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryCgroups } from '../src/memory-cgroup.ts';

const root = process.getuid?.() === 0;
const ownMemoryCgroup = () =>
  `/sys/fs/cgroup/memory${
    readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((line) => line.split(':')[1]?.split(',').includes('memory'))
      ?.split(':')[2] ?? ''
  }`;

describe.skipIf(!root || !existsSync('/sys/fs/cgroup/memory'))('memory cgroups', () => {
  it("sweeps a dead tool server's empty cgroups at start, never a live one's", async () => {
    const parent = ownMemoryCgroup();
    // A pid above the kernel's pid_max is never alive; this process is.
    const dead = join(parent, 'capture-farm-shell-99999999-0-leftover');
    const live = join(parent, `capture-farm-shell-${process.pid}-0-starting`);
    mkdirSync(dead);
    mkdirSync(live);
    try {
      expect(await MemoryCgroups.detect()).toBeDefined();
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      for (const dir of [dead, live]) if (existsSync(dir)) rmdirSync(dir);
    }
  });

  it('kills what holds more than its limit in memfd files, and is removed after', async () => {
    const cgroups = (await MemoryCgroups.detect()) as MemoryCgroups;
    const cgroup = await cgroups.create(`test-${process.pid}-memfd`, 64 * 1024 * 1024);
    const hog =
      "import os\nfds = []\nfor i in range(25):\n    fd = os.memfd_create('x'); os.write(fd, b'a' * 8 * 1024 * 1024); fds.append(fd)\nprint('held')";
    let output = '';
    try {
      output = execFileSync(
        '/bin/sh',
        ['-c', 'echo $$ > "$0" && exec /usr/bin/python3 -c "$1"', cgroup.procsFile, hog],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
      );
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? '');
    }
    expect(output).not.toContain('held');
    expect(await cgroup.oomKilled()).toBe(true);
    await cgroup.remove();
    expect(existsSync(cgroup.procsFile)).toBe(false);
  });
});
