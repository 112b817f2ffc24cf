import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP front on 127.0.0.1 that forwards each new connection to the port it currently points
 * at: what a load balancer in front of several authority instances is to a runner, which keeps
 * dialling one address, or a network between a service and its database. `pointAt` changes
 * where new connections go (open ones stay); `cut` makes the far side unreachable.
 */
export class TcpSwitch {
  private readonly sockets = new Set<Socket>();
  private down = false;

  private constructor(
    private readonly server: Server,
    private target: number,
    readonly port: number,
  ) {}

  static async start(target: number): Promise<TcpSwitch> {
    let self: TcpSwitch | null = null;
    const server = createServer((client) => self!.forward(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const address = server.address();
    if (typeof address !== "object" || !address) throw new Error("the switch has no port");
    self = new TcpSwitch(server, target, address.port);
    return self;
  }

  pointAt(target: number): void {
    this.target = target;
  }

  /** What is behind is unreachable: open connections are cut, new ones closed at once. */
  cut(): void {
    this.down = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.down = false;
  }

  private forward(client: Socket): void {
    if (this.down) return void client.destroy();
    const upstream = connect(this.target, "127.0.0.1");
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      s.on("error", () => undefined); // the other side's close ends the pair
    }
    client.pipe(upstream).on("close", () => client.destroy());
    upstream.pipe(client).on("close", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
