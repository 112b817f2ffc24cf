import type { Readable } from "node:stream";

/** A bootstrap ticket is one short line; more than this on stdin is not a ticket. */
export const MAX_TICKET_STDIN_BYTES = 4096;
/** A parent that never closes the pipe must not hold the runner forever before it dials. */
export const TICKET_STDIN_TIMEOUT_MS = 30_000;

export type TicketRead = { ok: true; ticket: string } | { ok: false; message: string };

/**
 * The one-use bootstrap ticket from `input` (prp-runnerd --ticket-stdin): one line, read to EOF,
 * at most MAX_TICKET_STDIN_BYTES. Through a pipe the ticket is in no argv and no environment,
 * where /proc would show it to anyone who can read them.
 */
export function readTicketStdin(input: Readable, timeoutMs = TICKET_STDIN_TIMEOUT_MS): Promise<TicketRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const finish = (result: TicketRead) => {
      clearTimeout(timer);
      input.off("data", onData).off("end", onEnd).off("error", onError);
      if (!result.ok) input.destroy();
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      // Refused at once: waiting for the EOF of an endless stream would never end.
      if (bytes > MAX_TICKET_STDIN_BYTES)
        return finish({
          ok: false,
          message: `ticket_stdin_invalid: more than ${MAX_TICKET_STDIN_BYTES} bytes on stdin; --ticket-stdin takes the one-line bootstrap ticket only`,
        });
      chunks.push(chunk);
    };
    const onEnd = () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const ticket = text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
      if (ticket.trim() === "")
        return finish({
          ok: false,
          message:
            "ticket_stdin_invalid: stdin was empty; write the bootstrap ticket (prp authority ticket RUN) to prp-runnerd's stdin, then close it",
        });
      if (/\s/.test(ticket))
        return finish({
          ok: false,
          message: "ticket_stdin_invalid: stdin holds more than one line or spaces; write the bootstrap ticket alone",
        });
      finish({ ok: true, ticket });
    };
    const onError = (err: Error) => finish({ ok: false, message: `ticket_stdin_invalid: stdin: ${err.message}` });
    const timer = setTimeout(
      () =>
        finish({
          ok: false,
          message: `ticket_stdin_timeout: stdin was not closed within ${timeoutMs} ms; write the ticket, then end stdin`,
        }),
      timeoutMs,
    );
    input.on("data", onData).on("end", onEnd).on("error", onError);
  });
}
