// Constructing the pack starts the analyzer's gRPC server and reads ./package.json, so this module
// is the pack's entry point only; tests and the offline plan import ./policies instead.
import { PolicyPack } from "@pulumi/policy";
import { policies } from "./policies";

new PolicyPack("encache-guardrails", {
  description: "Guardrails for the encache queue-driven GPU control plane.",
  enforcementLevel: "mandatory",
  policies,
});
