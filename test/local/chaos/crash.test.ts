/** The chaos run's crashes: finding the process behind a call's socket, and the work a killed process held. */
import { expect } from "chai";
import { spawn } from "node:child_process";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { gatewayWindowsHeld, heldAtDeath, pidOfPeer, sigkill, socketInodeIn, workerJobsHeld } from "../../../local/chaos/crash";

const line = (o: Record<string, unknown>) => JSON.stringify(o);

describe("chaos crashes", () => {
  describe("socketInodeIn: a connection's socket in /proc/net/tcp", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:A3C1 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 20 4 30 10 -1",
      "   1: 0100007F:1F90 0100007F:A3C1 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 20 4 30 10 -1",
    ].join("\n");
    const cases: Array<[number, number, string | undefined]> = [
      [0xa3c1, 0x1f90, "111"],
      [0x1f90, 0xa3c1, "222"],
      [0xa3c1, 0x1f91, undefined],
    ];
    for (const [client, server, want] of cases)
      it(`client port ${client} → server port ${server}: ${want ?? "none"}`, () => expect(socketInodeIn(table, client, server)).to.equal(want));
  });

  describe("the work a process held when it died, from its own log lines", () => {
    const cases: Array<{ name: string; text: string; held: (t: string) => string[]; want: string[] }> = [
      {
        name: "worker: leased and not finished; one completed, one given back",
        text: [
          line({ step: "job_lease_taken", job_id: "a" }),
          line({ step: "job_started", job_id: "a" }),
          line({ step: "job_lease_taken", job_id: "b" }),
          line({ step: "job_succeeded", job_id: "b" }),
          line({ step: "job_lease_taken", job_id: "c" }),
          line({ step: "job_returned", job_id: "c" }),
          "not json",
        ].join("\n"),
        held: workerJobsHeld,
        want: ["a"],
      },
      {
        name: "gateway: claimed and not done, released or handed back",
        text: [
          `2026-01-01 INFO ${line({ step: "window_claimed", key: "s/1" })}`,
          line({ step: "window_claimed", key: "s/2" }),
          line({ step: "window_done", key: "s/2" }),
          line({ step: "window_claimed", key: "s/3" }),
          line({ step: "key_released", key: "s/3" }),
        ].join("\n"),
        held: gatewayWindowsHeld,
        want: ["s/1"],
      },
      { name: "nothing logged", text: "", held: workerJobsHeld, want: [] },
    ];
    for (const c of cases) it(c.name, () => expect(c.held(c.text)).to.deep.equal(c.want));

    it("reads steps spelt with - as with _", () => {
      expect(heldAtDeath(line({ step: "job-lease-taken", job_id: "a" }), "job_id", ["job_lease_taken"], [])).to.deep.equal(["a"]);
    });
  });

  describe("pidOfPeer and sigkill: the child process that made a call", function () {
    this.timeout(20_000);
    if (process.platform !== "linux") return;

    it("finds which of two children holds the connection, and SIGKILLs it at once", async () => {
      // Prepare: a server that holds each request; two children, only one of which calls it.
      let seen: http.IncomingMessage | undefined;
      const server = http.createServer((req) => (seen = req));
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
      const port = (server.address() as AddressInfo).port;
      const caller = spawn(process.execPath, ["-e", `require("http").get("http://127.0.0.1:${port}/"); setInterval(() => {}, 1000);`]);
      const bystander = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000);"]);
      try {
        for (let i = 0; i < 200 && seen === undefined; i++) await new Promise((r) => setTimeout(r, 25));
        if (!seen) throw new Error("the child never called");

        // Act
        const pid = pidOfPeer(seen, [bystander.pid ?? 0, caller.pid ?? 0]);
        const exited = new Promise<string | null>((r) => caller.once("exit", (_code, signal) => r(signal)));
        const killed = await sigkill(pid ?? 0);

        // Assess
        expect(pid).to.equal(caller.pid);
        expect(killed).to.equal(true);
        expect(await exited).to.equal("SIGKILL");
        expect(bystander.exitCode).to.equal(null);
      } finally {
        caller.kill("SIGKILL");
        bystander.kill("SIGKILL");
        server.closeAllConnections();
        server.close();
      }
    });
  });
});
