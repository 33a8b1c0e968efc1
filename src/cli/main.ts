import { CommanderError } from 'commander';
import { GateError, isUserError } from '../errors.js';
import { buildProgram } from './program.js';

export const INTERNAL_ERROR_EXIT = 70;

/** Runs the CLI and returns the exit code: 0 ok, 1 a gate failed, 2 bad input, 70 a bug. */
export async function main(argv: string[]): Promise<number> {
  const { program, close, explain } = buildProgram();
  try {
    await program.parseAsync(argv);
    await close();
    return 0;
  } catch (caught) {
    const err = await explain(caught);
    await close().catch(() => {});
    if (err instanceof CommanderError) {
      return ['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(err.code) ? 0 : 2;
    }
    const json = Boolean(program.opts().json);
    if (isUserError(err)) {
      process.stderr.write(`error: ${err.message}\n${err.hint ? `  hint: ${err.hint}\n` : ''}`);
      // A failed gate has already printed its result (with ok: false); anything else gets a JSON error.
      if (json && !(err instanceof GateError)) process.stdout.write(`${JSON.stringify({ ok: false, error: { message: err.message, hint: err.hint, exitCode: err.exitCode } })}\n`);
      return err.exitCode;
    }
    const stack = err instanceof Error ? (err.stack ?? err.message) : String(err);
    process.stderr.write(`internal error: ${stack}\n\nThis is a bug in massgen-rl. Please report it with the command you ran and the output above.\n`);
    if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { message: String(err), internal: true, exitCode: INTERNAL_ERROR_EXIT } })}\n`);
    return INTERNAL_ERROR_EXIT;
  }
}
