// The proxy's listening ports: the fixed ones (shared, management) and the device ports opened
// on demand, one `net.Server` each, all handing connections to one accept function. Opening a port
// twice at once shares one attempt; closing the set destroys every connection it accepted.
import net from 'node:net';
import type { Logger } from 'pino';

export class ListenerSet {
  private readonly servers = new Map<number, net.Server>();
  private readonly opening = new Map<number, Promise<number>>();
  private readonly fixed = new Set<number>();
  private readonly sockets = new Set<net.Socket>();
  private readonly host: string;
  private readonly accept: (socket: net.Socket, port: number) => void;
  private readonly logger: Logger;

  constructor(options: {
    host: string;
    accept(socket: net.Socket, port: number): void;
    logger: Logger;
  }) {
    this.host = options.host;
    this.accept = options.accept;
    this.logger = options.logger;
  }

  has(port: number): boolean {
    return this.servers.has(port);
  }

  get ports(): number[] {
    return [...this.servers.keys()];
  }

  isFixed(port: number): boolean {
    return this.fixed.has(port);
  }

  /** A listener that stays for the proxy's life (port 0: any free port); its port. */
  async openFixed(port: number): Promise<number> {
    const opened = await this.open(port);
    this.fixed.add(opened);
    return opened;
  }

  /** A device port, opened once however many ask at the same time. */
  ensure(port: number): Promise<void> {
    if (this.servers.has(port)) return Promise.resolve();
    const inFlight = this.opening.get(port) ?? this.open(port);
    return inFlight.then(() => undefined);
  }

  /** Stops a device port accepting (its connections end on their own). */
  close(port: number): void {
    const server = this.servers.get(port);
    if (!server || this.fixed.has(port)) return;
    this.servers.delete(port);
    server.close();
  }

  async closeAll(): Promise<void> {
    const closing = [...this.servers.values()].map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(closing);
  }

  private open(port: number): Promise<number> {
    let assigned = port;
    const server = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      this.accept(socket, assigned);
    });
    const opening = new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.host, () => {
        server.off('error', reject);
        assigned = (server.address() as net.AddressInfo).port;
        resolve(assigned);
      });
    }).then(
      (opened) => {
        this.servers.set(opened, server);
        this.opening.delete(port);
        return opened;
      },
      (error: Error) => {
        this.opening.delete(port);
        this.logger.error({ err: error, port }, 'cannot open a listening port');
        throw error;
      },
    );
    if (port !== 0) this.opening.set(port, opening);
    return opening;
  }
}
