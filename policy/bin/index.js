"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
// Constructing the pack starts the analyzer's gRPC server and reads ./package.json, so this module
// is the pack's entry point only; tests and the offline plan import ./policies instead.
const policy_1 = require("@pulumi/policy");
const policies_1 = require("./policies");
new policy_1.PolicyPack("encache-guardrails", {
    description: "Guardrails for the encache queue-driven GPU control plane.",
    enforcementLevel: "mandatory",
    policies: policies_1.policies,
});
