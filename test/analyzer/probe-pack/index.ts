// The engine probe's entry under the CLI (policies.ts says what it reports).
import { PolicyPack } from "@pulumi/policy";
import { probePolicies } from "./policies";

new PolicyPack("engine-probe", { policies: probePolicies });
