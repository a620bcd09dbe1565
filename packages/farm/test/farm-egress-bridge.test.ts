// A shell sandbox against the capture proxy it reaches through its egress bridge (docs/farm.md
// "Farm devices"): its processes holding thousands of connections open at once, each of which
// would be one on the proxy every device shares. Driven directly, with a stand-in for the device
// port that counts what reaches it. (The farm tools' attacks through MCP are
// packages/tool-server/test/farm-attacks.test.ts.)
import { createServer as createTcpServer } from 'node:net';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MAX_BRIDGE_CONNECTIONS } from '../src/egress-bridge.ts';
import { FarmConfigSchema } from '../src/farm-config.ts';
import { ShellSandbox } from '../src/shell/shell-sandbox.ts';

describe('a sandbox against the capture proxy', () => {
  it('holds at most MAX_BRIDGE_CONNECTIONS connections open through its egress bridge', async () => {
    // A stand-in for the device port that counts what reaches it.
    let open = 0;
    let peak = 0;
    const proxy = createTcpServer((socket) => {
      open++;
      peak = Math.max(peak, open);
      socket.on('close', () => open--);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const sandbox = new ShellSandbox(
      // Uids of its own (RLIMIT_NPROC is per uid; farm-sandbox uses 61100, the stack's farm 61000).
      FarmConfigSchema.parse({
        enabled: true,
        shell: { wallTimeMs: 10_000, sandboxUidBase: 61_200 },
      }),
      pino({ level: 'silent' }),
    );
    try {
      // Four processes, each holding 200 connections to the bridge's socket for two seconds.
      const command = [
        'python3 -c "',
        'import os, socket, time',
        'for _ in range(3):',
        '    if os.fork() == 0: break',
        'held = []',
        'for _ in range(200):',
        "    s = socket.socket(socket.AF_UNIX); s.connect('/run/farm/proxy.sock'); held.append(s)",
        'time.sleep(2)',
        '"',
      ].join('\n');
      const result = await sandbox.run({
        command,
        network: 'proxy',
        wallTimeMs: 10_000,
        egress: {
          deviceUuid: 'b0000000-0000-4000-8000-000000000001',
          proxyHost: '127.0.0.1',
          proxyPort: (proxy.address() as { port: number }).port,
          caCertificatePem: '',
        },
      });
      expect(result.terminated).toBeNull();
      expect(peak).toBeGreaterThan(0);
      expect(peak).toBeLessThanOrEqual(MAX_BRIDGE_CONNECTIONS);
    } finally {
      await sandbox.close();
      proxy.close();
    }
  });
});
