/**
 * A retraining model name: what the launcher accepts in a message, and so what a stack may
 * schedule. 1–256 characters, starting with a letter or digit.
 */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9 _.:/=+@-]{0,255}$/;
export const MODEL_NAME_RULE = "1-256 characters of letters, digits, spaces or _.:/=+-@, starting with a letter or digit";

/** An EC2 instance type: `g5.xlarge`, `p4d.24xlarge`, `inf2.xlarge`… family, generation, options, a dot, a size. */
export const INSTANCE_TYPE_PATTERN = /^[a-z]+[0-9][a-z0-9-]*\.[0-9]*(nano|micro|small|medium|large|xlarge|metal(-[0-9]+xl)?)$/;
