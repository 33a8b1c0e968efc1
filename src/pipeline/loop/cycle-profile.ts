import { profileBetween, type StageProfile } from '../../util/stage-profile.js';
import { profileSnapshot } from './profile-snapshot.js';

/**
 * Starts measuring a stage: the function it returns gives `{ profile }` for the span since, or nothing
 * when a snapshot could not be taken. A profile never fails the stage it measures.
 */
export async function stageProfiler(): Promise<() => Promise<{ profile?: StageProfile }>> {
  const before = await profileSnapshot().catch(() => undefined);
  return async () => {
    if (!before) return {};
    try {
      return { profile: profileBetween(before, await profileSnapshot()) };
    } catch {
      return {};
    }
  };
}
