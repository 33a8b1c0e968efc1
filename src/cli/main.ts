import { CommanderError } from 'commander';
import { GateError, isUserError } from '../errors.js';
import { buildProgram } from './program.js';

export const INTERNAL_ERROR_EXIT = 70;
const REPORT_IT = 'This is a bug in massgen-rl. Please report it with the command you ran and the output above.';

/** Runs the CLI and returns the exit code: 0 ok, 1 a gate failed, 2 bad input, 70 a bug. */
export async function main(argv: string[]): Promise<number> {
  const { program, close, explain, redactor } = buildProgram();
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
    // Error messages quote what servers and files said (a server may echo the request's API key).
    const r = await redactor();
    const json = Boolean(program.opts().json);
    const printJson = (error: object) => process.stdout.write(`${r.stringify({ ok: false, error })}\n`);
    if (isUserError(err)) {
      process.stderr.write(r.scrub(`error: ${err.message}\n${err.hint ? `  hint: ${err.hint}\n` : ''}`));
      // A failed gate has already printed its result (with ok: false); anything else gets a JSON error.
      const { message, hint, exitCode } = err;
      if (json && !(err instanceof GateError)) printJson({ message, hint, exitCode });
      return err.exitCode;
    }
    const stack = err instanceof Error ? (err.stack ?? err.message) : String(err);
    process.stderr.write(r.scrub(`internal error: ${stack}\n\n${REPORT_IT}\n`));
    if (json) printJson({ message: String(err), internal: true, exitCode: INTERNAL_ERROR_EXIT });
    return INTERNAL_ERROR_EXIT;
  }
}
