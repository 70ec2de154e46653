/** What the local proxies share: a server on a free loopback port, and a close that does not hang. */
import type * as http from "node:http";
import type { AddressInfo } from "node:net";

/** Listens on a free loopback port; resolves to the server's base URL. */
export async function listenOnLoopback(server: http.Server): Promise<string> {
  await new Promise<void>((done, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => done());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes the server, dropping idle keep-alive sockets, which would hold close() open until they time out. */
export async function closeServer(server: http.Server | undefined): Promise<void> {
  if (!server) return;
  const closed = new Promise<void>((done) => server.close(() => done()));
  server.closeAllConnections();
  await closed;
}
