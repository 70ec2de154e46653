/**
 * Launch slots for one batch. The running count is read once per batch; every launch in the
 * batch takes a slot first (synchronously, so records processed concurrently can never overshoot)
 * and gives it back if the launch fails.
 */
export class LaunchSlots {
  private taken = 0;

  constructor(
    private readonly running: number,
    readonly max: number,
  ) {}

  /** True when a slot was taken; false means the cap is reached and the message must wait. */
  tryTake(): boolean {
    if (this.running + this.taken >= this.max) return false;
    this.taken += 1;
    return true;
  }

  release(): void {
    this.taken = Math.max(0, this.taken - 1);
  }

  get inUse(): number {
    return this.running + this.taken;
  }
}
