import { canonicalJson } from "../contract/canonical-json.js";
import { decode } from "../contract/decode.js";
import type { PrpCommand } from "../contract/kinds.js";
import type { CommandReceipt } from "./stream.js";

export interface Admission {
  receipt: CommandReceipt;
  /** Present only for an accepted command: the one to act on. */
  command?: PrpCommand;
}

const field = (value: unknown, key: string): unknown => (value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined);

/**
 * The command rules of a runner (runtime.md §4.2, wire.md §8.4): a command must pass the
 * contract; a repeated commandId with the same canonical content is a `duplicate` with no
 * effect and with other content is `rejected`; controllerSeq must be the next one, from 1; an
 * unsupported type is rejected after its sequence number is consumed. Fingerprints of the last
 * `historyLimit` commands are kept; an older id can only come back with an old, refused seq.
 */
export class CommandIntake {
  private next = 1;
  private readonly fingerprints = new Map<string, string>();

  constructor(
    private readonly supported: ReadonlySet<string>,
    private readonly historyLimit = 4096,
  ) {}

  get nextSeq(): number {
    return this.next;
  }

  admit(line: string | Uint8Array): Admission {
    const decoded = decode(line, { kind: "command" });
    if (!decoded.ok) {
      let raw: unknown;
      try {
        raw = JSON.parse(typeof line === "string" ? line : Buffer.from(line).toString("utf8"));
      } catch {
        raw = undefined;
      }
      return this.reject(raw, decoded.error.code, `${decoded.error.path || "/"}: ${decoded.error.message}`);
    }
    const command = decoded.value;
    const fingerprint = canonicalJson(command);
    const previous = this.fingerprints.get(command.commandId);
    if (previous !== undefined) {
      return previous === fingerprint
        ? { receipt: this.receipt(command, "duplicate") }
        : this.reject(command, "command_id_reused", `commandId "${command.commandId}" was already used for a different command`);
    }
    if (command.controllerSeq !== this.next) {
      return this.reject(command, "controller_seq_out_of_order", `controllerSeq ${command.controllerSeq} is not the next one (${this.next})`);
    }
    this.next++;
    this.fingerprints.set(command.commandId, fingerprint);
    if (this.fingerprints.size > this.historyLimit) this.fingerprints.delete(this.fingerprints.keys().next().value!);
    if (!this.supported.has(command.type)) {
      return this.reject(command, "unsupported_command", `this runner does not support ${command.type} commands`);
    }
    return { receipt: this.receipt(command, "accepted"), command };
  }

  private receipt(command: unknown, status: CommandReceipt["status"], code?: string, reason?: string): CommandReceipt {
    const id = field(command, "commandId");
    const seq = field(command, "controllerSeq");
    const type = field(command, "type");
    return {
      commandId: typeof id === "string" ? id : null,
      controllerSeq: typeof seq === "number" ? seq : null,
      type: typeof type === "string" ? type : null,
      status,
      ...(code ? { code, reason } : {}),
    };
  }

  private reject(command: unknown, code: string, reason: string): Admission {
    return { receipt: this.receipt(command, "rejected", code, reason) };
  }
}
