import { unitHash } from '../util/hash.js';

/**
 * Whether a captured rollout (a gateway session) is in the held-out share `gateway.holdout`: kept out of
 * training data and replayed by evaluations. Decided by its id alone, so collect and eval always agree.
 */
export function heldOutRollout(rolloutId: string, share: number): boolean {
  return share > 0 && unitHash(rolloutId, 'gateway-holdout') < share;
}
