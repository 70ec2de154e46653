import { expect } from "chai";
import { z } from "zod";
import { createLogger, errorMessage, logStep } from "../../../functions/shared/logger";

function zodError(): z.ZodError {
  const parsed = z.object({ frameCount: z.number() }).safeParse({ frameCount: "30" });
  if (parsed.success) throw new Error("a string is not a number");
  return parsed.error;
}

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
      for (const [key, value] of [
        ["POWERTOOLS_DEV", previous.dev],
        ["POWERTOOLS_SERVICE_NAME", previous.service],
      ] as const) {
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

  describe("errorMessage: what a log line says about a thrown value", () => {
    const cases: Array<{ what: string; thrown: unknown; expected: string }> = [
      { what: "an Error, by its name and message", thrown: new TypeError("fetch failed"), expected: "TypeError: fetch failed" },
      {
        what: "an AWS error, by its exception name",
        thrown: Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }),
        expected: "ThrottlingException: Rate exceeded",
      },
      // ZodError's own toString prints only its issues; the log line still says what kind of error it was.
      { what: "an Error whose toString leaves its name out, by its name too", thrown: zodError(), expected: `ZodError: ${zodError().message}` },
      { what: "a thrown string, as it is", thrown: "socket closed", expected: "socket closed" },
      { what: "a thrown number, as text", thrown: 42, expected: "42" },
      { what: "a thrown undefined, as text", thrown: undefined, expected: "undefined" },
    ];
    for (const c of cases) {
      it(`names ${c.what}`, () => {
        expect(errorMessage(c.thrown)).to.equal(c.expected);
      });
    }
  });
});
