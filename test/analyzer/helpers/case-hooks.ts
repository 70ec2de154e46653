/** Root hook of the analyzer tier's capture run: names the running test for the case log (test/policy/helpers/case-log.ts). */
import type { Context } from "mocha";
import { CURRENT_TEST } from "../../policy/helpers/case-log";

export const mochaHooks = {
  beforeEach(this: Context): void {
    CURRENT_TEST.title = this.currentTest?.fullTitle() ?? "";
  },
};
