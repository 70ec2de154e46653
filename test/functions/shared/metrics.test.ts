import { expect } from "chai";
import { countOne, createMetrics } from "../../../functions/shared/metrics";

/** Runs `act` with POWERTOOLS_* set as given and console.log captured, then restores both. */
function capturingStdout(env: Record<string, string>, act: () => void): string[] {
  const lines: string[] = [];
  const previous = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, env);
  const originalLog = console.log;
  console.log = (line: unknown) => void lines.push(String(line));
  try {
    act();
  } finally {
    console.log = originalLog;
    for (const [key, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
  return lines;
}

describe("shared/metrics", () => {
  it("publishes stored counts as one EMF document in the namespace and service the environment names", () => {
    // Prepare: POWERTOOLS_DEV makes Powertools write through the global console, which the test
    // captures; it would also turn publishing off, unless POWERTOOLS_METRICS_DISABLED says otherwise.
    const env = {
      POWERTOOLS_DEV: "true",
      POWERTOOLS_METRICS_DISABLED: "false",
      POWERTOOLS_METRICS_NAMESPACE: "encache",
      POWERTOOLS_SERVICE_NAME: "ingest-window",
    };
    // Act
    const lines = capturingStdout(env, () => {
      const metrics = createMetrics();
      countOne(metrics, "WindowsDelivered");
      countOne(metrics, "WindowsDelivered");
      countOne(metrics, "MessagesQuarantined");
      metrics.publishStoredMetrics();
    });
    // Assess
    expect(lines).to.have.length(1);
    const emf = JSON.parse(lines[0] ?? "") as Record<string, unknown> & {
      _aws: { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][]; Metrics: unknown[] }> };
    };
    expect(emf._aws.CloudWatchMetrics).to.have.length(1);
    expect(emf._aws.CloudWatchMetrics[0]).to.deep.include({
      Namespace: "encache",
      Dimensions: [["service"]],
      Metrics: [
        { Name: "WindowsDelivered", Unit: "Count" },
        { Name: "MessagesQuarantined", Unit: "Count" },
      ],
    });
    // A metric counted twice carries both values; CloudWatch sums them.
    expect(emf).to.deep.include({ service: "ingest-window", WindowsDelivered: [1, 1], MessagesQuarantined: 1 });
  });
});
