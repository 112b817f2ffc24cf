import { admit } from "../contract/admission.js";
import { parseJson } from "../contract/json-input.js";
import type { PrpCommand } from "../contract/kinds.js";
import type { CommandReceipt } from "./stream.js";

export interface Admission {
  receipt: CommandReceipt;
  /** Present only for an accepted command: the one to act on. */
  command?: PrpCommand;
}

const field = (value: unknown, key: string): unknown =>
  value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;

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
    // A line that is not one JSON reading (not JSON, a repeated member name) echoes no field of it.
    const parsed = parseJson(line, Number.POSITIVE_INFINITY); // the reader bounded the line
    if (!parsed.ok)
      return this.reject(undefined, parsed.error.code, `${parsed.error.path || "/"}: ${parsed.error.message}`);
    // The rule the durable runner and the authority apply too: the contract, and a canonical JSON form to fingerprint.
    const admitted = admit("command", parsed.value);
    if (!admitted.ok)
      return this.reject(parsed.value, admitted.error.code, `${admitted.error.path || "/"}: ${admitted.error.message}`);
    const { value: command, canonical: fingerprint } = admitted;
    const previous = this.fingerprints.get(command.commandId);
    if (previous !== undefined) {
      return previous === fingerprint
        ? { receipt: this.receipt(command, "duplicate") }
        : this.reject(
            command,
            "command_id_reused",
            `commandId "${command.commandId}" was already used for a different command`,
          );
    }
    if (command.controllerSeq !== this.next) {
      return this.reject(
        command,
        "controller_seq_out_of_order",
        `controllerSeq ${command.controllerSeq} is not the next one (${this.next})`,
      );
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
