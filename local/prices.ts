/**
 * What the local run prices GPU time at, for its cost figures only (gpu-idle, gpu-burst,
 * gpu-spot-interruption). Not the program's: AWS bills its own prices, so the stack's schema
 * carries none, and no price can refuse a deploy.
 *
 * On-demand: us-east-1 Linux prices per instance-hour, as listed on the EC2 on-demand pricing page
 * when they were written down (2026-11). Spot: a flat discount on those, the usual one for these
 * G families; the market moves, so the figures are an estimate, and the tables say so.
 */

/** On-demand USD per instance-hour, by instance type. */
export const ON_DEMAND_USD_PER_HOUR: Readonly<Record<string, number>> = {
  "g5.xlarge": 1.006,
  "g5.2xlarge": 1.212,
  "g5.4xlarge": 1.624,
  "g6.xlarge": 0.8048,
  "g6.2xlarge": 0.9776,
};

/** Spot's discount on the on-demand price assumed by the cost figures. */
export const SPOT_DISCOUNT = 0.6;
