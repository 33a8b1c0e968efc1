import { UserError } from '../../errors.js';
import type { Register } from '../register.js';

const PLANNED: Record<string, string> = {
  deploy: 'promote an evaluated candidate, with rollback',
  loop: 'run collect → train → eval → deploy on a schedule',
};

/** Commands whose capability has not landed yet: registered so they are discoverable, and honest about it. */
export const registerNotYet: Register = (program) => {
  for (const [name, what] of Object.entries(PLANNED)) {
    program
      .command(name)
      .description(`${what} (not available yet)`)
      .allowUnknownOption()
      .allowExcessArguments()
      .action(() => {
        throw new UserError(
          `\`massgen-rl ${name}\` is not available in this version yet (it will ${what}); nothing was done`,
          'available now: init, doctor, collect, train, eval, report, serve, checkpoints, traces, rewards, feedback, status',
        );
      });
  }
};
