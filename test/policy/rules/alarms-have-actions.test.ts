/** policy/rules/alarms-have-actions.ts: every alarm tells someone (mandatory in prod). */
import { U, ingestRecording } from "../helpers/ingest";
import { setInput } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "alarms-have-actions";
const prod = { [POLICY]: "mandatory" as const };

describe(POLICY, () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes alarms that notify the alert topic, whose ARN is unknown on a first preview (${mode})`, async () => {
      expectNoViolations(await evaluate(ingestRecording(), { mode, config: prod }));
    });
  }

  it("fails an alarm without actions, at prod's level", async () => {
    const rs = ingestRecording();
    setInput(rs, U.dlqAlarm, "alarmActions", []);
    expectViolation(await evaluate(rs, { config: prod }), { policy: POLICY, level: "mandatory", urn: U.dlqAlarm, message: /nobody is told/ });
  });

  it("only warns by default (dev)", async () => {
    const rs = ingestRecording();
    setInput(rs, U.dlqAlarm, "alarmActions", undefined);
    expectViolation(await evaluate(rs), { policy: POLICY, level: "advisory", urn: U.dlqAlarm });
  });
});
