import type { AuthorityHooks, HookedConnection } from "../authority/authority-hooks.js";
import type { CommandQueue } from "../authority/commands.js";

/**
 * The authority's side of the faults (AuthorityHooks): an ACK lost with its connection, a
 * command delivered twice, a command envelope carrying anything at all. `commands` is the
 * server's queue, read when a fault acts (the hooks are given before the server exists).
 */
export class AuthorityFaults implements AuthorityHooks {
  private readonly connections = new Map<string, HookedConnection>();
  private readonly ackDrops = new Set<string>();

  constructor(private readonly commands: () => CommandQueue) {}

  connected(runId: string, connection: HookedConnection): void {
    this.connections.set(runId, connection);
  }

  beforeAck(runId: string): "send" | "drop" {
    return this.ackDrops.delete(runId) ? "drop" : "send";
  }

  /** Commits the next event but loses its ACK with the connection (the lost-ack fault). */
  dropNextAck(runId: string): void {
    this.ackDrops.add(runId);
  }

  /** Sends the lowest pending command again on the live connection (the duplicate-command fault). */
  async redeliverPendingCommand(runId: string): Promise<boolean> {
    const connection = this.live(runId);
    if (!connection) return false;
    const next = await this.commands().nextCommandToDeliver(runId, connection.connectionId, { repeat: true });
    if (!next.ok || !next.value) return false;
    return connection.sendCommand(next.value.command);
  }

  /** Sends a command envelope carrying anything at all (the malformed-input fault). */
  sendRawCommand(runId: string, value: unknown): boolean {
    return this.live(runId)?.sendCommand(value) ?? false;
  }

  private live(runId: string): HookedConnection | undefined {
    const connection = this.connections.get(runId);
    return connection?.live() ? connection : undefined;
  }
}
