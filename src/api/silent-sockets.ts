import type { Server } from "node:net";

/**
 * Closes each connection that has sent no byte within `ms`, so a few silent sockets cannot hold
 * the port's connection cap. Node's header and request timeouts start only once a request has
 * begun; the socket idle timeout (`server.timeout`) alone left some silent sockets open for a
 * minute on a loaded CI machine, so every connection also gets a timer of its own.
 */
export function closeSilentSockets(server: Server, ms: number): void {
  server.on("connection", (socket) => {
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, ms);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  });
}
