import { expect } from "chai";
import { launcherMetrics } from "../../../functions/retraining/runtime-deps";

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
      const emf = JSON.parse(lines.join("").trim().split("\n").pop() ?? "{}") as { _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][] }> }; Environment: string };
      expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).to.deep.equal([["Environment"]]);
      expect(emf.Environment).to.equal("dev");
    });
  });
});
