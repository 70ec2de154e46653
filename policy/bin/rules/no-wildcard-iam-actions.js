"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.noWildcardIamActions = void 0;
const iam_1 = require("../lib/iam");
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
/** Identity-policy statements of the resource; trust (assume-role) policies are resource policies and exempt. */
function identityStatements(type, name, props) {
    if (type === types_1.ROLE) {
        return (0, props_1.records)(props.inlinePolicies).flatMap((p, i) => (0, iam_1.readPolicyDocument)(p.policy, `${name} inlinePolicies[${i}]`));
    }
    return (0, iam_1.readPolicyDocument)(props.policy, name);
}
/** Least privilege: each role lists the actions its function calls, never a whole service. */
exports.noWildcardIamActions = {
    name: "no-wildcard-iam-actions",
    description: "No Allow statement in a Role's inline policies, a RolePolicy or a Policy grants `*`, `service:*` or uses NotAction.",
    enforcementLevel: "mandatory",
    configSchema: {
        properties: {
            allowedWildcards: {
                type: "array",
                items: { type: "string" },
                default: [],
                description: "Wildcard actions accepted anyway (e.g. `logs:*` for a break-glass role).",
            },
        },
    },
    validateResource: (args, reportViolation) => {
        if (args.type !== types_1.ROLE && args.type !== types_1.ROLE_POLICY && args.type !== types_1.IAM_POLICY) {
            args.notApplicable(`applies to ${types_1.ROLE}, ${types_1.ROLE_POLICY} and ${types_1.IAM_POLICY}`);
        }
        const exempt = (0, props_1.stringList)(args.getConfig().allowedWildcards);
        const props = args.props;
        for (const grant of (0, iam_1.wildcardGrants)(identityStatements(args.type, args.name, props), exempt)) {
            reportViolation(`'${args.name}' allows wildcard action ${grant}; list the actions the workload calls.`);
        }
    },
};
