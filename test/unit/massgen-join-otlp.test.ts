import { describe, expect, it } from 'vitest';
import { namesUnit } from '../../src/interop/massgen/join-otlp.js';

describe("MassGen's log_path against a unit of its log", () => {
  const unit = { log: 'log_20261203_114655_684969', turn: 1, attempt: 1 };
  it('names the unit by its log, turn and attempt directories, relative or absolute', () => {
    expect(namesUnit('.massgen/massgen_logs/log_20261203_114655_684969/turn_1/attempt_1', unit)).toBe(true);
    expect(namesUnit('/srv/p/.massgen/massgen_logs/log_20261203_114655_684969/turn_1/attempt_1/', unit)).toBe(true);
    expect(namesUnit('log_20261203_114655_684969/turn_1', { ...unit, attempt: null })).toBe(true);
  });
  it('does not name another turn, attempt or log, a deeper folder, or nothing', () => {
    expect(namesUnit('.massgen/massgen_logs/log_20261203_114655_684969/turn_1/attempt_2', unit)).toBe(false);
    expect(namesUnit('.massgen/massgen_logs/log_20261203_114655_684969/turn_2/attempt_1', unit)).toBe(false);
    expect(namesUnit('.massgen/massgen_logs/log_20261203_114655_000000/turn_1/attempt_1', unit)).toBe(false);
    expect(namesUnit('log_20261203_114655_684969/turn_1/attempt_1/final', unit)).toBe(false);
    expect(namesUnit('log_20261203_114655_684969/turn_1', unit)).toBe(false);
    expect(namesUnit(undefined, unit)).toBe(false);
  });
});
