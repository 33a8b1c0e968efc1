import { describe, expect, it } from 'vitest';
import {
  counters,
  generationMsAt,
  llmRequestEnded,
  llmRequestStarted,
  timedStoreWrite,
} from '../../src/util/profile-counters.js';

const usage = (promptTokens: number, completionTokens: number) => ({ promptTokens, completionTokens });

describe('profile counters', () => {
  it('times generation as the union of the requests in flight, with their tokens', () => {
    const [ms, tokens, requests, unanswered] = [
      counters.generationMs,
      counters.completionTokens,
      counters.llmRequests,
      counters.llmUnanswered,
    ];
    llmRequestStarted(1000);
    llmRequestStarted(1500);
    expect(generationMsAt(1800) - ms).toBe(800); // the running span counts
    llmRequestEnded(usage(10, 5), 2000);
    llmRequestEnded(usage(20, 7), 3000);
    llmRequestStarted(5000); // after a gap of 2 s with nothing in flight
    llmRequestEnded(undefined, 5500); // a failed request has no usage
    expect(counters.generationMs - ms).toBe(2000 + 500);
    expect(counters.completionTokens - tokens).toBe(12);
    expect(counters.llmRequests - requests).toBe(2);
    expect(counters.llmUnanswered - unanswered).toBe(1);
    expect(generationMsAt(9000)).toBe(counters.generationMs);
  });

  it('counts a store write once when transactions nest, and its result or error passes through', () => {
    const writes = counters.storeWrites;
    expect(timedStoreWrite(() => timedStoreWrite(() => 42))).toBe(42);
    expect(() =>
      timedStoreWrite(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(counters.storeWrites - writes).toBe(2);
    expect(timedStoreWrite(() => 'after an error the depth is back to zero')).toMatch(/^after/);
    expect(counters.storeWrites - writes).toBe(3);
  });
});
