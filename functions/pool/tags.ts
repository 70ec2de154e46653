/**
 * The tags every warm-pool instance carries: the launch templates set them, the program's IAM
 * conditions and the claim API's check read them. The refill function, which filters on them,
 * gets both keys through its environment (env.ts), set from these by the program.
 */
export const POOL_TAG_KEY = "encache:pool";
export const POOL_CLASS_TAG_KEY = "encache:pool-class";
