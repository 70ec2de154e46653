import { mock } from "node:test";
import { expect } from "chai";
import { launcherMetrics, runtimeDeps } from "../../../functions/retraining/runtime-deps";
import { launcherConfig } from "../helpers/retraining-deps";

describe("retraining/launcher units", () => {
  describe("metrics", () => {
    it("emit EMF with exactly the Environment dimension (no service dimension)", () => {
      const lines: string[] = [];
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) => {
        lines.push(String(chunk));
        return true;
      }) as typeof process.stdout.write;
      try {
        const metrics = launcherMetrics();
        metrics.addDimension("Environment", "dev");
        metrics.addMetric("ECSTasksLaunched", "Count", 1);
        metrics.publishStoredMetrics();
      } finally {
        process.stdout.write = write;
      }
      const emf = JSON.parse(lines.join("").trim().split("\n").pop() ?? "{}") as {
        _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][] }> };
        Environment: string;
      };
      expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).to.deep.equal([["Environment"]]);
      expect(emf.Environment).to.equal("dev");
    });
  });

  describe("runtime deps", () => {
    afterEach(() => mock.timers.reset());

    it("carry the config, a wall clock, and a sleep that resolves after the pause asked for", async () => {
      mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_700_000_000_000 });
      const config = launcherConfig();
      const deps = runtimeDeps(config);
      let slept = false;

      const pause = deps.sleep(250).then(() => {
        slept = true;
      });
      mock.timers.tick(249);
      await Promise.resolve();
      const early = slept;
      mock.timers.tick(1);
      await pause;

      expect(deps.config).to.equal(config);
      expect(deps.now().getTime()).to.equal(1_700_000_000_250);
      expect(early).to.equal(false);
      expect(slept).to.equal(true);
    });
  });
});
