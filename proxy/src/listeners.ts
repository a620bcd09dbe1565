// The proxy's listening ports: the fixed ones (shared, management) and the device ports opened
// on demand, one `net.Server` per port and bound address (loopback, and the LAN address in LAN
// mode), all handing connections to one accept function. Opening a port twice at once shares one
// attempt; closing the set destroys every connection it accepted.
import net from 'node:net';
import type { Logger } from 'pino';

export class ListenerSet {
  private readonly servers = new Map<number, net.Server[]>();
  private readonly opening = new Map<number, Promise<number>>();
  private readonly fixed = new Set<number>();
  private readonly sockets = new Set<net.Socket>();
  private readonly hosts: string[];
  private readonly accept: (socket: net.Socket, port: number) => void;
  private readonly logger: Logger;

  /** `hosts`: every address each port binds; the first picks the port of a port-0 listener. */
  constructor(options: {
    hosts: string[];
    accept(socket: net.Socket, port: number): void;
    logger: Logger;
  }) {
    this.hosts = options.hosts;
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
    const servers = this.servers.get(port);
    if (!servers || this.fixed.has(port)) return;
    this.servers.delete(port);
    for (const server of servers) server.close();
  }

  async closeAll(): Promise<void> {
    const closing = [...this.servers.values()]
      .flat()
      .map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(closing);
  }

  private open(port: number): Promise<number> {
    const opening = this.listenOnEveryHost(port).then(
      ({ port: opened, servers }) => {
        this.servers.set(opened, servers);
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

  /** One server per host on the same port; if one host cannot bind, none stays open. */
  private async listenOnEveryHost(port: number): Promise<{ port: number; servers: net.Server[] }> {
    const servers: net.Server[] = [];
    let assigned = port;
    try {
      for (const host of this.hosts) {
        const server = await this.listen(host, assigned);
        servers.push(server);
        assigned = (server.address() as net.AddressInfo).port;
      }
    } catch (error) {
      for (const server of servers) server.close();
      throw error;
    }
    return { port: assigned, servers };
  }

  private listen(host: string, port: number): Promise<net.Server> {
    let bound = port;
    const server = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      this.accept(socket, bound);
    });
    return new Promise<net.Server>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        bound = (server.address() as net.AddressInfo).port;
        resolve(server);
      });
    });
  }
}
