// Host figures of 002 §2.2: CPU busy fraction since the previous sample (0..1), load averages,
// memory used/total in MB, uptime in seconds. Reads only the OS; no I/O beyond that.
import { cpus, freemem, loadavg, totalmem, uptime } from 'node:os';
import type { StatusSnapshot } from './snapshot-schemas.ts';

interface CpuTimes {
  busy: number;
  total: number;
}

function cpuTimes(): CpuTimes {
  return cpus().reduce(
    (sum, cpu) => {
      const { user, nice, sys, idle, irq } = cpu.times;
      const total = user + nice + sys + idle + irq;
      return { busy: sum.busy + total - idle, total: sum.total + total };
    },
    { busy: 0, total: 0 },
  );
}

const MB = 1024 * 1024;

/** Samples the host; the CPU fraction covers the time since the previous call. */
export class HostSampler {
  private previous: CpuTimes = cpuTimes();

  sample(): StatusSnapshot['host'] {
    const current = cpuTimes();
    const total = current.total - this.previous.total;
    const busy = current.busy - this.previous.busy;
    this.previous = current;
    const [one, five, fifteen] = loadavg() as [number, number, number];
    const round = (value: number) => Math.round(value * 1000) / 1000;
    return {
      cpu: total > 0 ? round(Math.min(1, Math.max(0, busy / total))) : 0,
      load: [round(one), round(five), round(fifteen)],
      mem: {
        usedMb: Math.round((totalmem() - freemem()) / MB),
        totalMb: Math.round(totalmem() / MB),
      },
      uptime: Math.floor(uptime()),
    };
  }
}
