import { expect } from "chai";
import { createLogger, logStep } from "../../../functions/shared/logger";

describe("shared/logger", () => {
  it("emits the step name as a top-level JSON field through the real Powertools Logger", () => {
    const lines: string[] = [];
    const previous = { dev: process.env.POWERTOOLS_DEV, service: process.env.POWERTOOLS_SERVICE_NAME };
    // POWERTOOLS_DEV makes the Logger write through the global console, which the test can capture.
    process.env.POWERTOOLS_DEV = "true";
    process.env.POWERTOOLS_SERVICE_NAME = "ingest-dlq-consumer";
    const originalInfo = console.info;
    console.info = (line: unknown) => void lines.push(String(line));
    try {
      logStep(createLogger(), "info", "gpu_autostart_attempted", { instance_id: "i-1", source: "ssm" });
    } finally {
      console.info = originalInfo;
      for (const [key, value] of [["POWERTOOLS_DEV", previous.dev], ["POWERTOOLS_SERVICE_NAME", previous.service]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }

    expect(lines).to.have.length(1);
    const parsed: unknown = JSON.parse(lines[0] ?? "");
    expect(parsed).to.include({
      message: "gpu_autostart_attempted",
      step: "gpu_autostart_attempted",
      instance_id: "i-1",
      source: "ssm",
      service: "ingest-dlq-consumer",
      level: "INFO",
    });
  });
});
