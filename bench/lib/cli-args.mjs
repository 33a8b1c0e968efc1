/**
 * Flags every benchmark accepts: --quick (smaller sizes, a smoke test), --large (bigger sizes, where a
 * benchmark has them) and --out FILE (where the JSON result goes).
 */
export function parseBenchArgs(argv = process.argv.slice(2)) {
  const args = { quick: false, large: false, out: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') args.quick = true;
    else if (arg === '--large') args.large = true;
    else if (arg === '--out') args.out = requireValue(argv, ++i, arg);
    else throw new Error(`unknown argument ${arg}`);
  }
  return args;
}

function requireValue(argv, index, flag) {
  const value = argv[index];
  if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
  return value;
}
