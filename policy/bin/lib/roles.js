"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.roleStatements = roleStatements;
const graph_1 = require("./graph");
const iam_1 = require("./iam");
const props_1 = require("./props");
const types_1 = require("./types");
/**
 * Every statement that applies to a role and that this stack declares: the role's own
 * inlinePolicies, RolePolicy resources, and customer-managed Policies attached through
 * RolePolicyAttachment. Attachments of policies outside the stack (AWS-managed ARNs) cannot be
 * read and contribute nothing.
 */
function roleStatements(resources, role) {
    const statements = [];
    (0, props_1.records)(role.props.inlinePolicies).forEach((p, i) => {
        statements.push(...(0, iam_1.readPolicyDocument)(p.policy, `${role.name} inlinePolicies[${i}]`));
    });
    for (const rp of (0, graph_1.ofType)(resources, types_1.ROLE_POLICY)) {
        if ((0, graph_1.dependsOnVia)(rp, "role", role))
            statements.push(...(0, iam_1.readPolicyDocument)(rp.props.policy, rp.name));
    }
    for (const att of (0, graph_1.ofType)(resources, types_1.ROLE_POLICY_ATTACHMENT)) {
        if (!(0, graph_1.dependsOnVia)(att, "role", role))
            continue;
        for (const policy of (0, graph_1.depsOf)(att, "policyArn", types_1.IAM_POLICY)) {
            statements.push(...(0, iam_1.readPolicyDocument)(policy.props.policy, policy.name));
        }
    }
    return statements;
}
