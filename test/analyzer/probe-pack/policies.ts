/**
 * An engine probe: two advisory policies that report, as their message, everything a policy is handed
 * for each resource (type, URN, name, props, options, provider; for a stack policy also parent,
 * dependencies and property dependencies). The analyzer tier runs it both in the real CLI (index.ts
 * is the pack's entry) and in the offline evaluator, and compares what each side handed over
 * (test/analyzer/engine-args.test.ts). Imports @pulumi/policy types only: under the CLI it resolves
 * from the pack's node_modules (a link to policy/node_modules made by the test).
 */
import type { Policies, PolicyResource, ResourceValidationArgs } from "@pulumi/policy";

/** What a policy sees of a resource's provider, when the engine names one. */
function providerOf(args: { provider?: { urn: string; type: string; name: string } }): unknown {
  return args.provider ? { urn: args.provider.urn, type: args.provider.type, name: args.provider.name } : null;
}

function resourceArgs(args: ResourceValidationArgs): string {
  return JSON.stringify({ type: args.type, urn: args.urn, name: args.name, props: args.props, opts: args.opts, provider: providerOf(args) });
}

function stackArgs(r: PolicyResource): string {
  return JSON.stringify({
    type: r.type,
    urn: r.urn,
    name: r.name,
    props: r.props,
    opts: r.opts,
    provider: providerOf(r),
    parent: r.parent?.urn ?? null,
    dependencies: r.dependencies.map((d) => d.urn),
    propertyDependencies: Object.fromEntries(Object.entries(r.propertyDependencies).map(([k, v]) => [k, v.map((d) => d.urn)])),
  });
}

export const probePolicies: Policies = [
  {
    name: "probe-resource-args",
    description: "what a resource policy is handed",
    enforcementLevel: "advisory",
    validateResource: (args, report) => report(resourceArgs(args)),
  },
  {
    name: "probe-stack-args",
    description: "what a stack policy is handed",
    enforcementLevel: "advisory",
    validateStack: (args, report) => {
      for (const r of args.resources) report(stackArgs(r), r.urn);
    },
  },
];
